#define CAF_SUITE unit.git_worktree
#include <caf/test/unit_test.hpp>

#include "git_fixture.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

namespace {

using reuse = git::reuse_result::outcome;

} // namespace

CAF_TEST_FIXTURE_SCOPE(git_worktree_tests, git_fixture)

CAF_TEST(a worktree is a linked checkout on its own branch at the base) {
  auto base = tip_of(repo, "main");
  auto info
    = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1", base);
  CAF_CHECK_EQUAL(info.name.find('/'), std::string::npos);
  CAF_CHECK_EQUAL(info.branch, "taskforce/r1/t1");
  CAF_CHECK_EQUAL(info.head, base);
  CAF_CHECK_EQUAL(read_file(wt_path("t1") / "src/a.txt"), "a1\na2\na3\n");
  auto listed = git_ok(root, {"worktree", "list", "--porcelain"});
  CAF_CHECK(listed.find("branch refs/heads/taskforce/r1/t1")
            != std::string::npos);
  auto wt = git::open(wt_path("t1"));
  CAF_CHECK(wt.is_worktree());
  CAF_CHECK_EQUAL(git::head_branch(wt), "taskforce/r1/t1");
  CAF_CHECK(git::changed_paths(wt).empty());
  // The worktree folder inside the checkout is excluded, not untracked.
  CAF_CHECK_EQUAL(porcelain(), "");
  auto all = git::list_worktrees(repo);
  CAF_REQUIRE_EQUAL(all.size(), 1u);
  CAF_CHECK_EQUAL(all[0].name, info.name);
  CAF_CHECK_EQUAL(all[0].branch, "taskforce/r1/t1");
  CAF_CHECK(fsck_clean());
}

CAF_TEST(names of worktrees never contain slashes and stay distinct) {
  auto a = git::worktree_name_for("taskforce/r1/t1");
  auto b = git::worktree_name_for("taskforce-r1-t1");
  CAF_CHECK_EQUAL(a.find('/'), std::string::npos);
  CAF_CHECK_EQUAL(a.rfind("taskforce-r1-t1-", 0), 0u);
  CAF_CHECK_NOT_EQUAL(a, b);
  CAF_CHECK_EQUAL(a, git::worktree_name_for("taskforce/r1/t1"));
}

CAF_TEST(an existing branch with unmerged work is never reset) {
  auto b = task_commit("t1", {{"src/a.txt", "work\n"}});
  auto tip = tip_of(repo, b);
  git::remove_worktree(repo, wt_path("t1").string());
  bool refused = false;
  try {
    git::create_worktree(repo, wt_path("t1b"), b, tip_of(repo, "main"));
  } catch (const git::error& e) {
    refused = true;
    CAF_CHECK(std::string{e.what()}.find("not merged") != std::string::npos);
  }
  CAF_CHECK(refused);
  CAF_CHECK_EQUAL(tip_of(repo, b), tip);
}

CAF_TEST(changed_paths lists every kind of change) {
  auto info = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1",
                                   tip_of(repo, "main"));
  auto& p = info.path;
  write(p, ".gitignore", "*.log\n");
  git_ok(p, {"add", ".gitignore"});
  git_ok(p, {"commit", "-q", "-m", "ignore logs"});
  write(p, "src/a.txt", "modified\n");                 // modified
  fs::remove(p / "README.md");                         // deleted
  git_ok(p, {"mv", "src/b.txt", "src/b_renamed.txt"}); // renamed, staged
  write(p, "staged.txt", "staged\n");                  // added, staged
  git_ok(p, {"add", "staged.txt"});
  write(p, "new/deep/file.txt", "untracked\n"); // untracked folder
  write(p, "build.log", "ignored\n");           // ignored
  auto wt = git::open(p);
  CAF_CHECK_EQUAL(
    git::changed_paths(wt),
    (std::vector<std::string>{"README.md", "new/deep/file.txt", "src/a.txt",
                              "src/b.txt", "src/b_renamed.txt", "staged.txt"}));
  // A rename done only in the folder (no git mv) names both sides too.
  git_ok(p, {"reset", "-q", "--hard"});
  fs::rename(p / "src/a.txt", p / "src/a_moved.txt");
  CAF_CHECK_EQUAL(git::changed_paths(wt),
                  (std::vector<std::string>{"new/deep/file.txt", "src/a.txt",
                                            "src/a_moved.txt"}));
}

CAF_TEST(commit_all records additions modifications and deletions) {
  auto info = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1",
                                   tip_of(repo, "main"));
  auto wt = git::open(info.path);
  CAF_CHECK_EQUAL(git::commit_all(wt, "nothing", who), info.head);
  write(info.path, ".gitignore", "*.log\n");
  write(info.path, "src/a.txt", "modified\n");
  fs::remove(info.path / "src/b.txt");
  write(info.path, "dir/new.txt", "new\n");
  write(info.path, "out.log", "ignored\n");
  auto tip = git::commit_all(wt, "task t1", who);
  CAF_CHECK_NOT_EQUAL(tip, info.head);
  CAF_CHECK_EQUAL(tip_of(repo, "taskforce/r1/t1"), tip);
  auto files
    = lines_of(git_ok(info.path, {"ls-tree", "-r", "--name-only", "HEAD"}));
  CAF_CHECK_EQUAL(files,
                  (std::vector<std::string>{".gitignore", "README.md",
                                            "dir/new.txt", "src/a.txt"}));
  CAF_CHECK_EQUAL(git_ok(info.path, {"log", "-1", "--format=%s|%an"}),
                  "task t1|Test\n");
  CAF_CHECK(git::changed_paths(wt).empty());
  CAF_CHECK_EQUAL(git::commit_all(wt, "again", who), tip);
  CAF_CHECK(fsck_clean());
}

CAF_TEST(commit_paths commits only the given paths) {
  auto before = tip_of(repo, "main");
  write(root, "src/a.txt", "in scope\n");
  write(root, "src/b.txt", "out of scope\n");
  write(root, "scoped/new.txt", "new\n");
  fs::remove(root / "README.md");
  auto tip = git::commit_paths(
    repo, {"src/a.txt", "scoped/new.txt", "README.md"}, "in place", who);
  CAF_CHECK_NOT_EQUAL(tip, before);
  CAF_CHECK_EQUAL(tip_of(repo, "main"), tip);
  CAF_CHECK_EQUAL(porcelain(), " M src/b.txt\n");
  CAF_CHECK_EQUAL(git::commit_paths(repo, {"src/a.txt"}, "again", who), tip);
  CAF_CHECK(fsck_clean());
}

CAF_TEST(reuse refuses a worktree holding unmerged or uncommitted work) {
  auto b = task_commit("t1", {{"src/a.txt", "work\n"}});
  auto tip = tip_of(repo, b);
  auto base = tip_of(repo, "main");
  auto r = git::reuse_worktree(repo, wt_path("t1"), "taskforce/r1/t2", base);
  CAF_CHECK_EQUAL(r.status, reuse::unmerged_work);
  CAF_CHECK_EQUAL(r.commit, tip);
  CAF_CHECK_EQUAL(read_file(wt_path("t1") / "src/a.txt"), "work\n");
  CAF_CHECK(!git::branch_tip(repo, "taskforce/r1/t2"));
  // Merged, but with an uncommitted edit and an untracked file.
  CAF_REQUIRE_EQUAL(git::merge_into_base(repo, b, "main", "m", who).status,
                    git::merge_result::outcome::merged);
  write(wt_path("t1"), "src/b.txt", "edit\n");
  write(wt_path("t1"), "notes.txt", "untracked\n");
  r = git::reuse_worktree(repo, wt_path("t1"), "taskforce/r1/t2",
                          tip_of(repo, "main"));
  CAF_CHECK_EQUAL(r.status, reuse::uncommitted_work);
  CAF_CHECK_EQUAL(r.paths,
                  (std::vector<std::string>{"notes.txt", "src/b.txt"}));
  CAF_CHECK_EQUAL(read_file(wt_path("t1") / "notes.txt"), "untracked\n");
  // Clean again, but the target branch holds someone else's unmerged work.
  fs::remove(wt_path("t1") / "notes.txt");
  git_ok(wt_path("t1"), {"checkout", "-q", "--", "src/b.txt"});
  auto other = task_commit("t9", {{"src/z.txt", "z\n"}});
  auto other_tip = tip_of(repo, other);
  bool refused = false;
  try {
    git::reuse_worktree(repo, wt_path("t1"), other, tip_of(repo, "main"));
  } catch (const git::error&) {
    refused = true; // checked out in t9's worktree
  }
  CAF_CHECK(refused);
  git::remove_worktree(repo, wt_path("t9").string());
  r = git::reuse_worktree(repo, wt_path("t1"), other, tip_of(repo, "main"));
  CAF_CHECK_EQUAL(r.status, reuse::branch_has_work);
  CAF_CHECK_EQUAL(r.commit, other_tip);
  CAF_CHECK_EQUAL(tip_of(repo, other), other_tip);
  auto still = git::open(wt_path("t1"));
  CAF_CHECK_EQUAL(git::head_branch(still), b);
  CAF_CHECK_EQUAL(
    git::reuse_worktree(repo, root / "nowhere", "x", other_tip).status,
    reuse::not_a_worktree);
  CAF_CHECK(fsck_clean());
}

CAF_TEST(reuse resets a merged worktree to the new base on a new branch) {
  auto b1
    = task_commit("t1", {{"src/a.txt", "from t1\n"}, {"t1_only.txt", "t1\n"}});
  auto b2 = task_commit(
    "t2", {{"src/b.txt", "from t2\n"}, {"t2/deep/new.txt", "t2\n"}});
  git::merge_into_base(repo, b1, "main", "m1", who);
  git_ok(wt_path("t2"), {"rm", "-q", "README.md"});
  git_ok(wt_path("t2"), {"commit", "-q", "-m", "t2 drops readme"});
  git::merge_into_base(repo, b2, "main", "m2", who);
  auto base = tip_of(repo, "main");
  write(wt_path("t1"), "cache.o", "ignored build output\n");
  git::ensure_excluded(repo, "*.o");
  auto r = git::reuse_worktree(repo, wt_path("t1"), "taskforce/r1/t3", base);
  CAF_REQUIRE_EQUAL(r.status, reuse::reused);
  CAF_CHECK_EQUAL(r.previous_branch, b1);
  CAF_CHECK_EQUAL(r.worktree.branch, "taskforce/r1/t3");
  auto wt = git::open(wt_path("t1"));
  CAF_CHECK_EQUAL(git::head_branch(wt), "taskforce/r1/t3");
  CAF_CHECK_EQUAL(git::head_commit(wt).value_or(""), base);
  CAF_CHECK(git::changed_paths(wt).empty());
  CAF_CHECK_EQUAL(git_ok(wt_path("t1"), {"status", "--porcelain"}), "");
  CAF_CHECK_EQUAL(read_file(wt_path("t1") / "src/b.txt"), "from t2\n");
  CAF_CHECK_EQUAL(read_file(wt_path("t1") / "t2/deep/new.txt"), "t2\n");
  CAF_CHECK(!fs::exists(wt_path("t1") / "README.md"));
  CAF_CHECK_EQUAL(read_file(wt_path("t1") / "cache.o"),
                  "ignored build output\n");
  // The old branch is merged and no longer checked out: it can go.
  CAF_CHECK(git::delete_branch(repo, b1));
  // The reused worktree works like a fresh one.
  write(wt_path("t1"), "t3.txt", "t3\n");
  git::commit_all(wt, "task t3", who);
  auto m3 = git::merge_into_base(repo, "taskforce/r1/t3", "main", "m3", who);
  CAF_CHECK_EQUAL(m3.status, git::merge_result::outcome::merged);
  CAF_CHECK_EQUAL(read_file(root / "t3.txt"), "t3\n");
  CAF_CHECK(fsck_clean());
}

CAF_TEST(a reuse cut short by a kill is finished by the next reuse) {
  auto b1 = task_commit("t1", {{"src/a.txt", "t1\n"}, {"t1.txt", "t1\n"}});
  auto b2 = task_commit("t2", {{"src/b.txt", "t2\n"}, {"t2.txt", "t2\n"}});
  git::merge_into_base(repo, b1, "main", "m1", who);
  git::merge_into_base(repo, b2, "main", "m2", who);
  auto old_head = tip_of(repo, b1);
  // The kill: marker written, branch moved, HEAD moved, files half done.
  auto admin = git::open(wt_path("t1")).git_dir();
  write(admin, "taskforce-reusing", old_head + "\n");
  git_ok(root, {"branch", "taskforce/r1/t3", tip_of(repo, "main")});
  git_ok(wt_path("t1"), {"symbolic-ref", "HEAD", "refs/heads/taskforce/r1/t3"});
  write(wt_path("t1"), "src/b.txt", "t2\n");
  {
    auto wt = git::open(wt_path("t1"));
    CAF_REQUIRE(!git::changed_paths(wt).empty());
  }
  auto r = git::reuse_worktree(repo, wt_path("t1"), "taskforce/r1/t4",
                               tip_of(repo, "main"));
  CAF_REQUIRE_EQUAL(r.status, reuse::reused);
  auto wt = git::open(wt_path("t1"));
  CAF_CHECK(git::changed_paths(wt).empty());
  CAF_CHECK_EQUAL(git::head_branch(wt), "taskforce/r1/t4");
  CAF_CHECK_EQUAL(read_file(wt_path("t1") / "t2.txt"), "t2\n");
  CAF_CHECK(!fs::exists(admin / "taskforce-reusing"));
  // Without the marker the same state would be refused as work.
  write(wt_path("t1"), "src/b.txt", "edit\n");
  r = git::reuse_worktree(repo, wt_path("t1"), "taskforce/r1/t5",
                          tip_of(repo, "main"));
  CAF_CHECK_EQUAL(r.status, reuse::uncommitted_work);
  // And an interrupted one can be removed without force.
  write(admin, "taskforce-reusing", tip_of(repo, "main") + "\n");
  CAF_CHECK(git::remove_worktree(repo, wt_path("t1").string()));
  CAF_CHECK(fsck_clean());
}

CAF_TEST(a creation cut short by a kill is finished by a reuse) {
  auto base = tip_of(repo, "main");
  auto info
    = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1", base);
  // The kill: registered and marked, half the files written.
  auto admin = git::open(info.path).git_dir();
  write(admin, "taskforce-reusing", base + "\n");
  fs::remove(info.path / "src/a.txt");
  fs::remove(info.path / "README.md");
  auto r = git::reuse_worktree(repo, info.path, "taskforce/r1/t1", base);
  CAF_REQUIRE_EQUAL(r.status, reuse::reused);
  CAF_CHECK_EQUAL(read_file(info.path / "src/a.txt"), "a1\na2\na3\n");
  auto wt = git::open(info.path);
  CAF_CHECK(git::changed_paths(wt).empty());
  CAF_CHECK(!fs::exists(admin / "taskforce-reusing"));
}

CAF_TEST(removing a worktree refuses uncommitted work unless forced) {
  auto info = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1",
                                   tip_of(repo, "main"));
  write(info.path, "src/a.txt", "work in progress\n");
  bool refused = false;
  try {
    git::remove_worktree(repo, info.name);
  } catch (const git::error& e) {
    refused = true;
    CAF_CHECK(std::string{e.what()}.find("src/a.txt") != std::string::npos);
  }
  CAF_CHECK(refused);
  CAF_CHECK(fs::exists(info.path / "src/a.txt"));
  CAF_CHECK(git::remove_worktree(repo, info.path.string(), true));
  CAF_CHECK(!fs::exists(info.path));
  CAF_CHECK(git::list_worktrees(repo).empty());
  CAF_CHECK(!git::remove_worktree(repo, info.name));
  // The branch stays until deleted.
  CAF_CHECK(git::delete_branch(repo, "taskforce/r1/t1"));
  CAF_CHECK(!git::delete_branch(repo, "taskforce/r1/t1"));
  CAF_CHECK_EQUAL(git_ok(root, {"worktree", "list", "--porcelain"})
                    .find(".taskforce/worktrees"),
                  std::string::npos);
  CAF_CHECK(fsck_clean());
}

CAF_TEST(a deferred removal frees the path at once and the files later) {
  auto info = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1",
                                   tip_of(repo, "main"));
  CAF_CHECK(git::remove_worktree(repo, info.path.string(), false, true));
  CAF_CHECK(!fs::exists(info.path));
  CAF_CHECK(git::list_worktrees(repo).empty());
  auto trash = root / ".git/taskforce-trash";
  CAF_CHECK_EQUAL(
    std::distance(fs::directory_iterator(trash), fs::directory_iterator{}), 1);
  // The same path can serve a new worktree right away.
  git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t2",
                       tip_of(repo, "main"));
  CAF_CHECK_EQUAL(git::empty_trash(repo), 1u);
  CAF_CHECK(fs::is_empty(trash));
  CAF_CHECK_EQUAL(git::empty_trash(repo), 0u);
  CAF_CHECK(fsck_clean());
}

CAF_TEST(a worktree folder deleted by hand is pruned and its name reusable) {
  auto base = tip_of(repo, "main");
  auto info
    = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1", base);
  fs::remove_all(info.path);
  CAF_CHECK_EQUAL(git::prune_worktrees(repo),
                  std::vector<std::string>{info.name});
  CAF_CHECK(git::list_worktrees(repo).empty());
  // Without pruning first, creating it again prunes the stale entry itself.
  info = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1", base);
  fs::remove_all(info.path);
  info = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1", base);
  CAF_CHECK(fs::exists(info.path / "README.md"));
  CAF_CHECK(fsck_clean());
}

CAF_TEST(a branch gets a new worktree while a reused one holds its old name) {
  auto base = tip_of(repo, "main");
  auto first
    = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1", base);
  auto r = git::reuse_worktree(repo, wt_path("t1"), "taskforce/r1/t2", base);
  CAF_REQUIRE_EQUAL(r.status, reuse::reused);
  auto again
    = git::create_worktree(repo, wt_path("t1-again"), "taskforce/r1/t1", base);
  CAF_CHECK_NOT_EQUAL(again.name, first.name);
  CAF_CHECK_EQUAL(git::list_worktrees(repo).size(), 2u);
  // A branch checked out elsewhere is refused before anything moves.
  bool refused = false;
  try {
    git::create_worktree(repo, wt_path("t2-twice"), "taskforce/r1/t2", base);
  } catch (const git::error& e) {
    refused = true;
    CAF_CHECK(std::string{e.what()}.find("checked out") != std::string::npos);
  }
  CAF_CHECK(refused);
  CAF_CHECK(!fs::exists(wt_path("t2-twice")));
  CAF_CHECK(fsck_clean());
}

CAF_TEST(a branch checked out in a worktree cannot be deleted) {
  auto info = git::create_worktree(repo, wt_path("t1"), "taskforce/r1/t1",
                                   tip_of(repo, "main"));
  bool refused = false;
  try {
    git::delete_branch(repo, info.branch);
  } catch (const git::error&) {
    refused = true;
  }
  CAF_CHECK(refused);
  CAF_CHECK(git::branch_tip(repo, info.branch).has_value());
}

CAF_TEST_FIXTURE_SCOPE_END()
