// The libgit2 layer's answers to "what did an attempt change, and where is
// HEAD": snapshots of a checkout, paths between commits, pinning a commit,
// moving a branch back, pointing HEAD, and committing exactly a task's
// paths in place.
#define CAF_SUITE unit.git_integrity
#include <caf/test/unit_test.hpp>

#include "git_fixture.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

namespace {

using paths = std::vector<std::string>;

} // namespace

CAF_TEST_FIXTURE_SCOPE(git_integrity_tests, git_fixture)

CAF_TEST(head_of tells a branch from a detached HEAD) {
  auto head = git::head_of(repo);
  CAF_CHECK_EQUAL(head.ref, "refs/heads/main");
  CAF_CHECK_EQUAL(head.commit, tip_of(repo, "main"));
  git_ok(root, {"checkout", "-q", "--detach"});
  head = git::head_of(repo);
  CAF_CHECK_EQUAL(head.ref, "");
  CAF_CHECK_EQUAL(head.commit, tip_of(repo, "main"));
  git::point_head(repo, "refs/heads/main", "");
  CAF_CHECK_EQUAL(git_ok(root, {"symbolic-ref", "HEAD"}), "refs/heads/main\n");
  CAF_CHECK_EQUAL(porcelain(), "");
}

CAF_TEST(paths_between names both sides of every change) {
  auto first = tip_of(repo, "main");
  write(root, "src/a.txt", "changed\n");
  fs::remove(root / "src/b.txt");
  write(root, "new.txt", "new\n");
  auto second = git::commit_all(repo, "second", who);
  CAF_CHECK_EQUAL(git::paths_between(repo, first, second),
                  (paths{"new.txt", "src/a.txt", "src/b.txt"}));
  CAF_CHECK(git::paths_between(repo, second, second).empty());
}

CAF_TEST(a pinned commit survives its worktree and a gc) {
  auto branch = task_commit("t1", {{"x.txt", "x\n"}});
  auto work = tip_of(repo, branch);
  auto name
    = git::pin_commit(repo, "refs/taskforce/kept/r1/t1/attempt-1", work);
  CAF_CHECK_EQUAL(name, "refs/taskforce/kept/r1/t1/attempt-1");
  // Pinning again is idempotent; another commit gets the next name.
  CAF_CHECK_EQUAL(git::pin_commit(repo, name, work), name);
  auto base = tip_of(repo, "main");
  CAF_CHECK_EQUAL(git::pin_commit(repo, name, base), name + "-2");
  git::remove_worktree(repo, wt_path("t1").string(), true);
  git::delete_branch(repo, branch);
  git_ok(root, {"gc", "-q", "--prune=now"});
  CAF_CHECK_EQUAL(run_git(root, {"cat-file", "-e", work}).status, 0);
  CAF_CHECK(fsck_clean());
}

CAF_TEST(move_branch moves a branch back only from where it was seen) {
  auto base = tip_of(repo, "main");
  auto branch = task_commit("t1", {{"x.txt", "x\n"}});
  auto work = tip_of(repo, branch);
  git::remove_worktree(repo, wt_path("t1").string(), true);
  bool refused = false;
  try {
    git::move_branch(repo, branch, base, base);
  } catch (const git::error&) {
    refused = true;
  }
  CAF_CHECK(refused);
  CAF_CHECK_EQUAL(tip_of(repo, branch), work);
  git::move_branch(repo, branch, work, base);
  CAF_CHECK_EQUAL(tip_of(repo, branch), base);
  git::delete_branch(repo, branch);
  git::move_branch(repo, branch, "", work);
  CAF_CHECK_EQUAL(tip_of(repo, branch), work);
}

CAF_TEST(a snapshot attributes only what changed after it) {
  // The user's work before the attempt: an edit and an untracked file.
  write(root, "README.md", "user edit\n");
  write(root, "notes.txt", "mine\n");
  auto snap = git::take_snapshot(repo);
  CAF_CHECK_EQUAL(snap.dirty.size(), 2u);
  CAF_CHECK(git::changed_since(repo, snap).empty());
  // The attempt: a new file, an edit of a clean file, a further edit of a
  // dirty one, a reverted user edit, and the untracked file left alone.
  write(root, "src/new.txt", "n\n");
  write(root, "src/a.txt", "a changed\n");
  write(root, "README.md", "user edit\nand more\n");
  auto changed = git::changed_since(repo, snap);
  CAF_CHECK_EQUAL(changed, (paths{"README.md", "src/a.txt", "src/new.txt"}));
  write(root, "README.md", "# project\n");
  CAF_CHECK_EQUAL(git::changed_since(repo, snap),
                  (paths{"README.md", "src/a.txt", "src/new.txt"}));
  // Rewriting a file with the same content changes nothing.
  write(root, "notes.txt", "mine\n");
  auto again = git::changed_since(repo, snap);
  CAF_CHECK(std::count(again.begin(), again.end(), "notes.txt") == 0);
}

CAF_TEST(a snapshot sees what the commits on HEAD changed) {
  auto snap = git::take_snapshot(repo);
  write(root, "src/a.txt", "committed\n");
  fs::remove(root / "README.md");
  git::commit_all(repo, "sneaky", who);
  CAF_CHECK_EQUAL(git::changed_since(repo, snap),
                  (paths{"README.md", "src/a.txt"}));
  // Staging alone counts too.
  auto snap2 = git::take_snapshot(repo);
  write(root, "src/b.txt", "staged\n");
  git_ok(root, {"add", "src/b.txt"});
  CAF_CHECK_EQUAL(git::changed_since(repo, snap2), (paths{"src/b.txt"}));
  // Ignored files are not looked at.
  git::ensure_excluded(repo, "*.log");
  auto snap3 = git::take_snapshot(repo);
  write(root, "build.log", "noise\n");
  CAF_CHECK(git::changed_since(repo, snap3).empty());
}

CAF_TEST(commit_only commits exactly its paths and keeps the rest staged) {
  auto before = tip_of(repo, "main");
  // The user's staged and unstaged work outside the task's paths.
  write(root, "README.md", "staged by the user\n");
  git_ok(root, {"add", "README.md"});
  // Not the size of what the index has: the same size within the same
  // timestamp tick as the fixture's commit looks unchanged to git itself.
  write(root, "src/b.txt", "unstaged by the user\n");
  // The task's work: an edit, a new file, a deletion.
  write(root, "src/a.txt", "task\n");
  write(root, "task.txt", "t\n");
  write(root, "run.sh", "#!/bin/sh\n");
  fs::permissions(root / "run.sh", fs::perms::owner_exec,
                  fs::perm_options::add);
  auto tip
    = git::commit_only(repo, {"src/a.txt", "task.txt", "run.sh"}, "task", who);
  CAF_CHECK(tip != before);
  CAF_CHECK_EQUAL(git::paths_between(repo, before, tip),
                  (paths{"run.sh", "src/a.txt", "task.txt"}));
  CAF_CHECK_EQUAL(git_ok(root, {"ls-tree", tip, "run.sh"}).substr(0, 6),
                  "100755");
  // What the user staged is still staged, what was unstaged still is.
  CAF_CHECK_EQUAL(porcelain(), "M  README.md\n M src/b.txt\n");
  // A deletion, and a path that exists nowhere.
  fs::remove(root / "task.txt");
  auto tip2 = git::commit_only(repo, {"task.txt", "never.txt"}, "rm", who);
  CAF_CHECK_EQUAL(git::paths_between(repo, tip, tip2), (paths{"task.txt"}));
  // Nothing to commit: the tip stays.
  CAF_CHECK_EQUAL(git::commit_only(repo, {"src/a.txt"}, "again", who), tip2);
  CAF_CHECK_EQUAL(porcelain(), "M  README.md\n M src/b.txt\n");
  CAF_CHECK(fsck_clean());
}

CAF_TEST_FIXTURE_SCOPE_END()
