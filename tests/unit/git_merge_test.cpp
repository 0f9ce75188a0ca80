#define CAF_SUITE unit.git_merge
#include <caf/test/unit_test.hpp>

#include "git_fixture.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

namespace {

using outcome = git::merge_result::outcome;

/// Keeps what land_merge writes down, as the run's ledger would.
struct memory_journal : git::landing_journal {
  std::vector<git::checkout_update> landings;
  std::vector<std::pair<std::string, bool>> ends;
  void landing(const git::checkout_update& u) override {
    landings.push_back(u);
  }
  void landed(const git::checkout_update& u, bool moved) override {
    ends.emplace_back(u.commit, moved);
  }
};

std::string parent(const fs::path& root, const std::string& rev) {
  auto out = git_ok(root, {"rev-parse", rev});
  return out.substr(0, 40);
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(git_merge_tests, git_fixture)

CAF_TEST(
  a diamond merged in order gives merge commits on the first parent line) {
  auto first = tip_of(repo, "main");
  // t1 and t2 start from the same tip; t3 depends on both.
  auto b1 = task_commit("t1", {{"src/one.txt", "one\n"}});
  auto b2 = task_commit("t2", {{"src/two.txt", "two\n"}});
  auto tip1 = tip_of(repo, b1);
  auto tip2 = tip_of(repo, b2);
  auto m1 = git::merge_into_base(repo, b1, "main", "Merge t1", who);
  CAF_REQUIRE_EQUAL(m1.status, outcome::merged);
  auto m2 = git::merge_into_base(repo, b2, "main", "Merge t2", who);
  CAF_REQUIRE_EQUAL(m2.status, outcome::merged);
  auto b3 = task_commit("t3", {{"src/three.txt", "three\n"}});
  // t3's worktree starts from the tip that holds both dependencies.
  CAF_CHECK(fs::exists(wt_path("t3") / "src/one.txt"));
  CAF_CHECK(fs::exists(wt_path("t3") / "src/two.txt"));
  auto tip3 = tip_of(repo, b3);
  auto m3 = git::merge_into_base(repo, b3, "main", "Merge t3", who);
  CAF_REQUIRE_EQUAL(m3.status, outcome::merged);
  CAF_CHECK_EQUAL(tip_of(repo, "main"), m3.commit);
  CAF_CHECK_EQUAL(parent(root, m1.commit + "^1"), first);
  CAF_CHECK_EQUAL(parent(root, m1.commit + "^2"), tip1);
  CAF_CHECK_EQUAL(parent(root, m2.commit + "^1"), m1.commit);
  CAF_CHECK_EQUAL(parent(root, m2.commit + "^2"), tip2);
  CAF_CHECK_EQUAL(parent(root, m3.commit + "^1"), m2.commit);
  CAF_CHECK_EQUAL(parent(root, m3.commit + "^2"), tip3);
  auto line = lines_of(git_ok(root, {"log", "--first-parent", "--format=%s"}));
  CAF_CHECK_EQUAL(line, (std::vector<std::string>{"Merge t3", "Merge t2",
                                                  "Merge t1", "first"}));
  // The main checkout follows the base and is clean.
  CAF_CHECK_EQUAL(read_file(root / "src/one.txt"), "one\n");
  CAF_CHECK_EQUAL(read_file(root / "src/three.txt"), "three\n");
  CAF_CHECK_EQUAL(porcelain(), "");
  CAF_CHECK(fsck_clean());
}

CAF_TEST(a branch that could fast forward still gets a merge commit) {
  auto old_tip = tip_of(repo, "main");
  auto b = task_commit("t1", {{"src/a.txt", "changed\n"}});
  auto tip = tip_of(repo, b);
  auto m = git::merge_into_base(repo, b, "main", "Merge t1", who);
  CAF_REQUIRE_EQUAL(m.status, outcome::merged);
  CAF_CHECK_NOT_EQUAL(m.commit, tip);
  CAF_CHECK_EQUAL(parent(root, "main^1"), old_tip);
  CAF_CHECK_EQUAL(parent(root, "main^2"), tip);
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "changed\n");
  CAF_CHECK_EQUAL(porcelain(), "");
  // Merging again changes nothing and names the same merge.
  auto again = git::merge_into_base(repo, b, "main", "Merge t1", who);
  CAF_CHECK_EQUAL(again.status, outcome::already_merged);
  CAF_CHECK_EQUAL(again.commit, m.commit);
  CAF_CHECK(fsck_clean());
}

CAF_TEST(a conflict names its paths and leaves the main checkout untouched) {
  auto b1 = task_commit("t1", {{"src/a.txt", "a1\nFIRST\na3\n"}});
  auto b2 = task_commit(
    "t2", {{"src/a.txt", "a1\nSECOND\na3\n"}, {"src/other.txt", "x\n"}});
  CAF_REQUIRE_EQUAL(git::merge_into_base(repo, b1, "main", "m1", who).status,
                    outcome::merged);
  auto before = tip_of(repo, "main");
  auto m2 = git::merge_into_base(repo, b2, "main", "m2", who);
  CAF_CHECK_EQUAL(m2.status, outcome::conflict);
  CAF_CHECK_EQUAL(m2.paths, std::vector<std::string>{"src/a.txt"});
  CAF_CHECK_EQUAL(tip_of(repo, "main"), before);
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "a1\nFIRST\na3\n");
  CAF_CHECK(!fs::exists(root / "src/other.txt"));
  CAF_CHECK(!fs::exists(root / ".git/MERGE_HEAD"));
  CAF_CHECK_EQUAL(porcelain(), "");
  // The branch and its worktree are kept for the user.
  CAF_CHECK(git::branch_tip(repo, b2).has_value());
  CAF_CHECK(fs::exists(wt_path("t2") / "src/other.txt"));
  CAF_CHECK(fsck_clean());
}

CAF_TEST(a merge never overwrites uncommitted edits in the main checkout) {
  auto b1 = task_commit("t1", {{"src/a.txt", "from task\n"}});
  auto b2 = task_commit("t2", {{"src/new.txt", "task's new file\n"}});
  auto b3 = task_commit("t3", {{"src/c.txt", "c\n"}});
  write(root, "src/a.txt", "user's edit\n");
  write(root, "src/new.txt", "user's untracked file\n");
  auto before = tip_of(repo, "main");
  auto m1 = git::merge_into_base(repo, b1, "main", "m1", who);
  CAF_CHECK_EQUAL(m1.status, outcome::dirty_checkout);
  CAF_CHECK_EQUAL(m1.paths, std::vector<std::string>{"src/a.txt"});
  auto m2 = git::merge_into_base(repo, b2, "main", "m2", who);
  CAF_CHECK_EQUAL(m2.status, outcome::dirty_checkout);
  CAF_CHECK_EQUAL(m2.paths, std::vector<std::string>{"src/new.txt"});
  CAF_CHECK_EQUAL(tip_of(repo, "main"), before);
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "user's edit\n");
  CAF_CHECK_EQUAL(read_file(root / "src/new.txt"), "user's untracked file\n");
  // A merge that touches other files goes ahead and keeps the edit.
  auto m3 = git::merge_into_base(repo, b3, "main", "m3", who);
  CAF_CHECK_EQUAL(m3.status, outcome::merged);
  CAF_CHECK_EQUAL(read_file(root / "src/c.txt"), "c\n");
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "user's edit\n");
  CAF_CHECK_EQUAL(porcelain(), " M src/a.txt\n?? src/new.txt\n");
  CAF_CHECK(fsck_clean());
}

CAF_TEST(
  a merge into a base that is not checked out leaves the checkout alone) {
  git_ok(root, {"branch", "integration"});
  auto b = task_commit("t1", {{"src/a.txt", "task\n"}});
  auto m = git::merge_into_base(repo, b, "integration", "m", who);
  CAF_CHECK_EQUAL(m.status, outcome::merged);
  CAF_CHECK_EQUAL(tip_of(repo, "integration"), m.commit);
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "a1\na2\na3\n");
  CAF_CHECK_EQUAL(porcelain(), "");
}

CAF_TEST(a base checked out in a linked worktree is refused untouched) {
  git_ok(root, {"branch", "release"});
  git_ok(root, {"worktree", "add", "-q", (dir.path() / "release").string(),
                "release"});
  auto b = task_commit("t1", {{"src/a.txt", "task\n"}});
  auto before = tip_of(repo, "release");
  bool refused = false;
  try {
    git::merge_into_base(repo, b, "release", "m", who);
  } catch (const git::error& e) {
    refused = true;
    CAF_CHECK(std::string{e.what()}.find("linked worktree")
              != std::string::npos);
  }
  CAF_CHECK(refused);
  CAF_CHECK_EQUAL(tip_of(repo, "release"), before);
}

CAF_TEST(merged_commit finds a merge the user did by hand) {
  auto b = task_commit("t1", {{"src/a.txt", "task\n"}});
  auto tip = tip_of(repo, b);
  CAF_CHECK(!git::merged_commit(repo, tip, "main").has_value());
  git_ok(root, {"merge", "--no-ff", "-m", "by hand", b});
  auto hand_merge = parent(root, "HEAD");
  write(root, "later.txt", "later\n");
  git_ok(root, {"add", "later.txt"});
  git_ok(root, {"commit", "-m", "later"});
  CAF_CHECK_EQUAL(git::merged_commit(repo, tip, "main"), hand_merge);
  auto m = git::merge_into_base(repo, b, "main", "again", who);
  CAF_CHECK_EQUAL(m.status, outcome::already_merged);
  CAF_CHECK_EQUAL(m.commit, hand_merge);
  // A fast-forward by hand: the tip itself is on the first-parent line.
  auto b2 = task_commit("t2", {{"src/b.txt", "task two\n"}});
  auto tip2 = tip_of(repo, b2);
  git_ok(root, {"merge", "--ff-only", b2});
  CAF_CHECK_EQUAL(git::merged_commit(repo, tip2, "main"), tip2);
  CAF_CHECK(fsck_clean());
}

CAF_TEST(complete_checkout finishes an update cut short and keeps user edits) {
  auto b = task_commit("t1", {{"src/a.txt", "A\n"},
                              {"src/b.txt", "B\n"},
                              {"src/new.txt", "N\n"},
                              {"src/deep/x.txt", "X\n"}});
  git_ok(wt_path("t1"), {"rm", "-q", "README.md"});
  git_ok(wt_path("t1"), {"commit", "-q", "-m", "drop readme"});
  memory_journal journal;
  auto m = git::merge_into_base(repo, b, "main", "m", who, &journal);
  CAF_REQUIRE_EQUAL(m.status, outcome::merged);
  // Written down before the base moved, with the paths it changes; over
  // once the checkout followed.
  CAF_REQUIRE_EQUAL(journal.landings.size(), 1u);
  auto update = journal.landings.at(0);
  CAF_CHECK_EQUAL(update.commit, m.commit);
  CAF_CHECK_EQUAL(update.base, parent(root, "HEAD^1"));
  CAF_CHECK_EQUAL(update.paths, (std::vector<std::string>{
                                  "README.md", "src/a.txt", "src/b.txt",
                                  "src/deep/x.txt", "src/new.txt"}));
  CAF_CHECK_EQUAL(journal.ends.size(), 1u);
  // The kill: the ref moved but index and files still hold the first parent.
  git_ok(root, {"read-tree", "-u", "--reset", "HEAD^1"});
  CAF_REQUIRE(fs::exists(root / "README.md"));
  CAF_REQUIRE(!fs::exists(root / "src/new.txt"));
  // One file was already written before the kill, its index entry not.
  write(root, "src/b.txt", "B\n");
  // The user edited one file meanwhile.
  write(root, "src/a.txt", "user\n");
  auto fix = git::complete_checkout(repo, "main", update);
  CAF_CHECK(fix.applies);
  CAF_CHECK_EQUAL(fix.kept, std::vector<std::string>{"src/a.txt"});
  CAF_CHECK_EQUAL(fix.updated,
                  (std::vector<std::string>{"README.md", "src/b.txt",
                                            "src/deep/x.txt", "src/new.txt"}));
  CAF_CHECK(!fs::exists(root / "README.md"));
  CAF_CHECK_EQUAL(read_file(root / "src/new.txt"), "N\n");
  CAF_CHECK_EQUAL(read_file(root / "src/deep/x.txt"), "X\n");
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "user\n");
  // The user's path is left alone entirely: its index entry too.
  CAF_CHECK_EQUAL(porcelain(), "MM src/a.txt\n");
  // A second pass has nothing left to do.
  auto again = git::complete_checkout(repo, "main", update);
  CAF_CHECK(again.updated.empty());
  CAF_CHECK(fsck_clean());
}

CAF_TEST(complete_checkout touches nothing but the update it is given) {
  // A merge of the person's own (git merge --no-ff) at HEAD, then a staged
  // revert of one of its files, a file it added removed, a file it removed
  // restored: no landing of the run is unfinished, so nothing changes.
  auto b = task_commit("t1", {{"src/a.txt", "A\n"}, {"src/new.txt", "N\n"}});
  git_ok(wt_path("t1"), {"rm", "-q", "README.md"});
  git_ok(wt_path("t1"), {"commit", "-q", "-m", "drop readme"});
  git_ok(root, {"merge", "-q", "--no-ff", "-m", "mine", b});
  git_ok(root, {"checkout", "HEAD~1", "--", "src/a.txt"});
  git_ok(root, {"rm", "-q", "src/new.txt"});
  git_ok(root, {"checkout", "HEAD~1", "--", "README.md"});
  auto before = porcelain();
  CAF_REQUIRE_NOT_EQUAL(before, "");
  // An update for another merge (one the base is not at) applies nowhere.
  git::checkout_update other{parent(root, "HEAD^1"),
                             parent(root, "HEAD^1"),
                             {"src/a.txt", "README.md", "src/new.txt"}};
  auto fix = git::complete_checkout(repo, "main", other);
  CAF_CHECK(!fix.applies);
  CAF_CHECK(fix.updated.empty());
  CAF_CHECK_EQUAL(porcelain(), before);
  // Nor on a branch that is not checked out.
  git::checkout_update here{
    parent(root, "HEAD"), parent(root, "HEAD^1"), {"src/a.txt"}};
  CAF_CHECK(!git::complete_checkout(repo, "other", here).applies);
  CAF_CHECK_EQUAL(porcelain(), before);
  CAF_CHECK(!fs::exists(root / "src/new.txt"));
  CAF_CHECK(fs::exists(root / "README.md"));
}

CAF_TEST(a landing that never moved the base ends as not moved) {
  auto b1 = task_commit("t1", {{"src/a.txt", "A\n"}});
  auto c = git::prepare_merge(repo, b1, "main", "m", who);
  CAF_REQUIRE_EQUAL(c.status, outcome::merged);
  // The base moves on before it lands: stale, and the journal hears it.
  auto b2 = task_commit("t2", {{"src/b.txt", "B\n"}});
  CAF_REQUIRE_EQUAL(git::merge_into_base(repo, b2, "main", "m2", who).status,
                    outcome::merged);
  memory_journal journal;
  auto l = git::land_merge(repo, c.commit, "main", "", &journal);
  CAF_CHECK_EQUAL(l.status, outcome::stale);
  // Refused before anything was written down.
  CAF_CHECK(journal.landings.empty());
  CAF_CHECK(journal.ends.empty());
}

CAF_TEST(stale lock files from a killed git are cleared) {
  auto b = task_commit("t1", {{"src/a.txt", "task\n"}});
  auto admin = git::list_worktrees(repo).at(0).name;
  write(root, ".git/index.lock", "");
  write(root, ".git/refs/heads/main.lock", "");
  write(root, ".git/packed-refs.lock", "");
  write(root, ".git/worktrees/" + admin + "/index.lock", "");
  auto before = tip_of(repo, "main");
  bool refused = false;
  try {
    git::merge_into_base(repo, b, "main", "m", who);
  } catch (const git::error& e) {
    refused = true;
    CAF_MESSAGE("refused with: " << e.what());
  }
  CAF_CHECK(refused);
  CAF_CHECK_EQUAL(tip_of(repo, "main"), before);
  auto removed = git::clear_stale_locks(repo);
  CAF_CHECK_EQUAL(removed.size(), 4u);
  CAF_CHECK(!fs::exists(root / ".git/index.lock"));
  CAF_CHECK(!fs::exists(root / ".git/worktrees" / admin / "index.lock"));
  auto m = git::merge_into_base(repo, b, "main", "m", who);
  CAF_CHECK_EQUAL(m.status, outcome::merged);
  CAF_CHECK_EQUAL(porcelain(), "");
  CAF_CHECK(fsck_clean());
}

CAF_TEST(assist mode applies a task to the checkout uncommitted) {
  auto base = tip_of(repo, "main");
  auto b = task_commit(
    "t1", {{"src/a.txt", "a1\nassisted\na3\n"}, {"src/added.txt", "added\n"}});
  git_ok(wt_path("t1"), {"rm", "-q", "src/b.txt"});
  git_ok(wt_path("t1"), {"commit", "-q", "-m", "drop b"});
  write(root, "README.md", "user edit elsewhere\n");
  auto paths = git::apply_to_checkout(repo, base, tip_of(repo, b));
  CAF_CHECK_EQUAL(paths, (std::vector<std::string>{"src/a.txt", "src/added.txt",
                                                   "src/b.txt"}));
  CAF_CHECK_EQUAL(tip_of(repo, "main"), base);
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "a1\nassisted\na3\n");
  CAF_CHECK_EQUAL(
    porcelain(),
    " M README.md\n M src/a.txt\n D src/b.txt\n?? src/added.txt\n");
  // A second task whose change no longer applies changes nothing.
  auto b2 = task_commit(
    "t2", {{"src/a.txt", "a1\nother\na3\n"}, {"src/c.txt", "c\n"}});
  bool refused = false;
  try {
    git::apply_to_checkout(repo, base, tip_of(repo, b2));
  } catch (const git::error& e) {
    refused = true;
    CAF_MESSAGE("refused: " << e.what());
  }
  CAF_CHECK(refused);
  CAF_CHECK(!fs::exists(root / "src/c.txt"));
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "a1\nassisted\na3\n");
}

CAF_TEST(diff_text shows the work of a task as a patch) {
  auto b = task_commit("t1", {{"src/a.txt", "a1\nchanged\na3\n"}});
  auto base = tip_of(repo, "main");
  auto tip = tip_of(repo, b);
  auto patch = git::diff_text(repo, base, tip);
  CAF_CHECK(patch.find("+++ b/src/a.txt") != std::string::npos);
  CAF_CHECK(patch.find("-a2") != std::string::npos);
  CAF_CHECK(patch.find("+changed") != std::string::npos);
  auto wt = git::open(wt_path("t1"));
  write(wt_path("t1"), "fresh.txt", "fresh\n");
  auto live = git::diff_text(wt, base);
  CAF_CHECK(live.find("+changed") != std::string::npos);
  CAF_CHECK(live.find("+++ b/fresh.txt") != std::string::npos);
}

CAF_TEST(a prepared merge leaves the base and the checkout as they are) {
  auto before = tip_of(repo, "main");
  auto b = task_commit("t1", {{"src/a.txt", "changed\n"}});
  auto tip = tip_of(repo, b);
  auto c = git::prepare_merge(repo, b, "main", "Merge t1", who);
  CAF_REQUIRE_EQUAL(c.status, outcome::merged);
  CAF_CHECK_EQUAL(c.base, before);
  CAF_CHECK_EQUAL(c.tip, tip);
  CAF_CHECK_EQUAL(parent(root, c.commit + "^1"), before);
  CAF_CHECK_EQUAL(parent(root, c.commit + "^2"), tip);
  // Nothing moved: the candidate is only an object.
  CAF_CHECK_EQUAL(tip_of(repo, "main"), before);
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "a1\na2\na3\n");
  CAF_CHECK_EQUAL(porcelain(), "");
  // Landing it moves the base to exactly that commit.
  auto l = git::land_merge(repo, c.commit, "main", tip);
  CAF_REQUIRE_EQUAL(l.status, outcome::merged);
  CAF_CHECK_EQUAL(tip_of(repo, "main"), c.commit);
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "changed\n");
  CAF_CHECK_EQUAL(porcelain(), "");
  CAF_CHECK(fsck_clean());
}

CAF_TEST(a candidate made before the base moved never lands) {
  auto b1 = task_commit("t1", {{"src/one.txt", "one\n"}});
  auto b2 = task_commit("t2", {{"src/two.txt", "two\n"}});
  auto c2 = git::prepare_merge(repo, b2, "main", "Merge t2", who);
  CAF_REQUIRE_EQUAL(c2.status, outcome::merged);
  // t1 lands while t2's result is being checked.
  auto m1 = git::merge_into_base(repo, b1, "main", "Merge t1", who);
  CAF_REQUIRE_EQUAL(m1.status, outcome::merged);
  auto l = git::land_merge(repo, c2.commit, "main");
  CAF_CHECK_EQUAL(l.status, outcome::stale);
  CAF_CHECK_EQUAL(tip_of(repo, "main"), m1.commit);
  CAF_CHECK(!fs::exists(root / "src/two.txt"));
  // A branch that moved since the candidate was made: stale as well.
  auto c2b = git::prepare_merge(repo, b2, "main", "Merge t2", who);
  CAF_REQUIRE_EQUAL(c2b.status, outcome::merged);
  write(wt_path("t2"), "src/two.txt", "two, later\n");
  auto wt = git::open(wt_path("t2"));
  git::commit_all(wt, "later", who);
  auto moved = git::land_merge(repo, c2b.commit, "main", tip_of(repo, b2));
  CAF_CHECK_EQUAL(moved.status, outcome::stale);
  CAF_CHECK_EQUAL(tip_of(repo, "main"), m1.commit);
  CAF_CHECK_EQUAL(porcelain(), "");
}

CAF_TEST(a conflicting prepare names its paths and makes nothing) {
  auto b1 = task_commit("t1", {{"src/a.txt", "a1\nFIRST\na3\n"}});
  auto b2 = task_commit("t2", {{"src/a.txt", "a1\nSECOND\na3\n"}});
  CAF_REQUIRE_EQUAL(git::merge_into_base(repo, b1, "main", "M", who).status,
                    outcome::merged);
  auto before = tip_of(repo, "main");
  auto c = git::prepare_merge(repo, b2, "main", "Merge t2", who);
  CAF_CHECK_EQUAL(c.status, outcome::conflict);
  CAF_CHECK_EQUAL(c.paths, std::vector<std::string>{"src/a.txt"});
  CAF_CHECK_EQUAL(tip_of(repo, "main"), before);
}

CAF_TEST_FIXTURE_SCOPE_END()
