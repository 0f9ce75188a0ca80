// The run's workspace without an actor around it: leases, the checks of
// what an attempt brings, integration, spares.
#define CAF_SUITE unit.git_workspace
#include <caf/test/unit_test.hpp>

#include "src/git/git.hpp"
#include "unit/git_fixture.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

namespace {

struct workspace_fixture : git_fixture {
  git::workspace space{git::open(root), root, "main", "r1", true, {}};
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(git_workspace_tests, workspace_fixture)

CAF_TEST(a lease gives the task its own branch and sees what it brings) {
  auto l = space.lease_worktree("t1", false, "");
  CAF_CHECK_EQUAL(l.branch, "taskforce/r1/t1");
  CAF_CHECK_EQUAL(fs::path{l.path}, wt_path("t1"));
  CAF_CHECK_EQUAL(l.start, tip_of(repo, "main"));
  write(l.path, "src/a.txt", "changed\n");
  auto wt = git::open(l.path);
  git::commit_all(wt, "work", who);
  write(l.path, "notes.txt", "untracked\n");
  auto c = space.check({"r1", "t1", 1, l.path, l.branch, l.start});
  CAF_CHECK(c.moved.empty());
  CAF_CHECK_EQUAL(c.paths,
                  (std::vector<std::string>{"notes.txt", "src/a.txt"}));
  // The same task asks again: the kept worktree, its work intact.
  auto again = space.lease_worktree("t1", false, "");
  CAF_CHECK(again.reused);
  CAF_CHECK_EQUAL(again.path, l.path);
  CAF_CHECK_EQUAL(read_file(fs::path{l.path} / "notes.txt"), "untracked\n");
}

CAF_TEST(a moved HEAD is reported and its commit pinned) {
  auto l = space.lease_worktree("t1", false, "");
  git_ok(l.path, {"checkout", "-q", "--detach"});
  write(l.path, "src/a.txt", "x\n");
  git_ok(l.path, {"-c", "user.name=T", "-c", "user.email=t@e", "commit", "-qam",
                  "detached work"});
  auto c = space.check({"r1", "t1", 3, l.path, l.branch, l.start});
  CAF_CHECK(c.moved.find("left taskforce/r1/t1 for a detached HEAD")
            != std::string::npos);
  CAF_CHECK(c.moved.find("refs/taskforce/kept/r1/t1/attempt-3")
            != std::string::npos);
  auto pinned = run_git(
    root, {"log", "-1", "--format=%s", "refs/taskforce/kept/r1/t1/attempt-3"});
  CAF_CHECK_EQUAL(pinned.status, 0);
  CAF_CHECK_EQUAL(pinned.output, "detached work\n");
}

CAF_TEST(a merged worktree becomes a spare for the next task) {
  auto l = space.lease_worktree("t1", false, "");
  write(l.path, "src/a.txt", "t1\n");
  auto r = space.integrate({"t1", "first task", l.path, l.branch, true, {}});
  CAF_CHECK(r.status == git::integration::outcome::merged);
  CAF_CHECK_EQUAL(r.commit, tip_of(repo, "main"));
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "t1\n");
  auto next = space.lease_worktree("t2", false, "");
  CAF_CHECK(next.reused);
  CAF_CHECK_EQUAL(next.path, l.path);
  CAF_CHECK_EQUAL(next.branch, "taskforce/r1/t2");
  CAF_CHECK_EQUAL(read_file(fs::path{next.path} / "src/a.txt"), "t1\n");
}

CAF_TEST(in place only the scope of the task is committed) {
  auto head = space.snapshot(root.string());
  CAF_CHECK_EQUAL(head, tip_of(repo, "main"));
  write(root, "src/a.txt", "mine\n");
  write(root, "src/b.txt", "the user's\n");
  auto c = space.check({"r1", "t1", 1, root.string(), "", head});
  CAF_CHECK_EQUAL(c.paths,
                  (std::vector<std::string>{"src/a.txt", "src/b.txt"}));
  auto r = space.integrate({"t1", "in place", "", "", true, {"src/a.txt"}});
  CAF_CHECK(r.status == git::integration::outcome::merged);
  CAF_CHECK_EQUAL(porcelain(), " M src/b.txt\n");
}

CAF_TEST_FIXTURE_SCOPE_END()
