#define CAF_SUITE unit.git_review
#include <caf/test/unit_test.hpp>

#include <sys/stat.h>

#include "git_fixture.hpp"
#include "src/git/review.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

namespace {

using strings = std::vector<std::string>;

/// A task worktree with uncommitted work: a.txt changed, b.txt deleted,
/// new/run.sh added (executable) and a link to it.
fs::path task_with_work(git_fixture& f) {
  auto base = *git::branch_tip(f.repo, "main");
  auto info
    = git::create_worktree(f.repo, f.wt_path("t1"), "taskforce/r1/t1", base);
  git_fixture::write(info.path, "src/a.txt", "task a\n");
  fs::remove(info.path / "src/b.txt");
  git_fixture::write(info.path, "new/run.sh", "#!/bin/sh\necho hi\n");
  fs::permissions(info.path / "new/run.sh", fs::perms::owner_exec,
                  fs::perm_options::add);
  fs::create_symlink("run.sh", info.path / "new/link");
  return info.path;
}

const strings task_paths{"new/link", "new/run.sh", "src/a.txt", "src/b.txt"};

} // namespace

CAF_TEST_FIXTURE_SCOPE(git_review_tests, git_fixture)

CAF_TEST(the scratch shows exactly the task work and its diff) {
  auto wt = task_with_work(*this);
  auto r = git::open_review(repo, root, "r1", "t1", wt, task_paths, "main");
  CAF_CHECK_EQUAL(r.path, root / ".taskforce/review/r1/t1");
  CAF_CHECK_EQUAL(r.branch, "taskforce-review/r1/t1");
  CAF_CHECK_EQUAL(read_file(r.path / "src/a.txt"), "task a\n");
  CAF_CHECK(!fs::exists(r.path / "src/b.txt"));
  CAF_CHECK(fs::is_symlink(r.path / "new/link"));
  CAF_CHECK(
    (fs::status(r.path / "new/run.sh").permissions() & fs::perms::owner_exec)
    != fs::perms::none);
  CAF_CHECK(r.diff.find("+task a") != std::string::npos);
  CAF_CHECK(r.diff.find("-b1") != std::string::npos);
  CAF_CHECK(r.diff.find("+echo hi") != std::string::npos);
  // Nothing of the reviewer's yet; the task's own worktree is untouched.
  CAF_CHECK(git::close_review(repo, r).empty());
  CAF_CHECK(!fs::exists(r.path));
  CAF_CHECK(!git::branch_tip(repo, "taskforce-review/r1/t1"));
  CAF_CHECK_EQUAL(read_file(wt / "src/a.txt"), "task a\n");
  CAF_CHECK(fsck_clean());
}

CAF_TEST(what the reviewer changes
         or commits is listed and never reaches the task) {
  auto wt = task_with_work(*this);
  auto r = git::open_review(repo, root, "r1", "t1", wt, task_paths, "main");
  git_fixture::write(r.path, "src/a.txt", "reviewer\n");
  git_fixture::write(r.path, "stray.txt", "x\n");
  // A reviewer that commits in its copy: the commit's paths count too.
  git_ok(r.path, {"add", "stray.txt"});
  git_ok(r.path, {"-c", "user.name=R", "-c", "user.email=r@x", "commit", "-q",
                  "-m", "sneaky"});
  git_fixture::write(r.path, "README.md", "rewritten\n");
  auto changed = git::close_review(repo, r);
  CAF_CHECK_EQUAL(changed, (strings{"README.md", "src/a.txt", "stray.txt"}));
  CAF_CHECK_EQUAL(read_file(wt / "src/a.txt"), "task a\n");
  CAF_CHECK(!fs::exists(wt / "stray.txt"));
  CAF_CHECK_EQUAL(read_file(root / "README.md"), "# project\n");
  CAF_CHECK(!git::branch_tip(repo, "taskforce-review/r1/t1"));
}

CAF_TEST(branches the reviewer moves makes or deletes are put back) {
  auto wt = task_with_work(*this);
  auto main_tip = tip_of(repo, "main");
  auto task_tip = tip_of(repo, "taskforce/r1/t1");
  git_ok(root, {"branch", "old", main_tip});
  auto r = git::open_review(repo, root, "r1", "t1", wt, task_paths, "main");
  git_ok(r.path, {"-c", "user.name=R", "-c", "user.email=r@x", "commit", "-q",
                  "--allow-empty", "-m", "sneaky"});
  auto sneaky = git_ok(r.path, {"rev-parse", "HEAD"});
  sneaky.pop_back();
  git_ok(r.path, {"update-ref", "refs/heads/taskforce/r1/t1", sneaky});
  git_ok(r.path, {"update-ref", "refs/heads/main", sneaky});
  git_ok(r.path, {"branch", "made-by-reviewer"});
  git_ok(r.path, {"branch", "-D", "old"});
  auto changed = git::close_review(repo, r);
  CAF_CHECK_EQUAL(changed, (strings{"branch made-by-reviewer", "branch main",
                                    "branch taskforce/r1/t1", "branch old"}));
  CAF_CHECK_EQUAL(tip_of(repo, "main"), main_tip);
  CAF_CHECK_EQUAL(tip_of(repo, "taskforce/r1/t1"), task_tip);
  CAF_CHECK_EQUAL(tip_of(repo, "old"), main_tip);
  CAF_CHECK(!git::branch_tip(repo, "made-by-reviewer"));
}

CAF_TEST(a path leaving the checkout is refused and leftovers are dropped) {
  auto wt = task_with_work(*this);
  CAF_CHECK_EQUAL(git::remove_reviews(repo, "r1"), 0u);
  bool refused = false;
  try {
    git::open_review(repo, root, "r1", "t1", wt, {"../../outside.txt"}, "main");
  } catch (const std::exception&) {
    refused = true;
  }
  CAF_CHECK(refused);
  CAF_CHECK(!fs::exists(root.parent_path() / "outside.txt"));
  // A scratch a kill left (the refused one, here) goes with remove_reviews,
  // and a new review of the task replaces it.
  auto r = git::open_review(repo, root, "r1", "t1", wt, task_paths, "main");
  CAF_CHECK_EQUAL(git::remove_reviews(repo, "r1"), 1u);
  CAF_CHECK(!fs::exists(r.path));
  CAF_CHECK(!git::branch_tip(repo, "taskforce-review/r1/t1"));
  CAF_CHECK(fsck_clean());
}

CAF_TEST_FIXTURE_SCOPE_END()
