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

  /// Attempt `n` of `task` in the main checkout.
  git::attempt_place in_place(const std::string& task, uint64_t n) {
    return {"r1", task, n, root.string(), "", ""};
  }

  using paths = std::vector<std::string>;
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
  auto head = space.snapshot(in_place("t1", 1), {"src/a.txt"});
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

CAF_TEST(two tasks in place each answer for their own scope) {
  space.snapshot(in_place("a", 1), {"src/a.txt"});
  space.snapshot(in_place("b", 1), {"src/b.txt"});
  write(root, "src/a.txt", "a's\n");
  write(root, "src/b.txt", "b's\n");
  CAF_CHECK_EQUAL(space.check(in_place("a", 1)).paths, paths{"src/a.txt"});
  CAF_CHECK_EQUAL(space.check(in_place("b", 1)).paths, paths{"src/b.txt"});
  space.release(in_place("a", 1));
  auto r = space.integrate({"a", "a", "", "", true, {"src/a.txt"}});
  CAF_REQUIRE(r.status == git::integration::outcome::merged);
  // a's commit is none of b's doing; b's check is unchanged.
  auto c = space.check(in_place("b", 1));
  CAF_CHECK(c.moved.empty());
  CAF_CHECK_EQUAL(c.paths, paths{"src/b.txt"});
  space.release(in_place("b", 1));
  r = space.integrate({"b", "b", "", "", true, {"src/b.txt"}});
  CAF_REQUIRE(r.status == git::integration::outcome::merged);
  CAF_CHECK_EQUAL(porcelain(), "");
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "a's\n");
}

CAF_TEST(a change in nobody s scope is every open attempt s) {
  space.snapshot(in_place("a", 1), {"src/a.txt"});
  space.snapshot(in_place("b", 1), {"src/b.txt"});
  write(root, "src/a.txt", "a's\n");
  write(root, "stray.txt", "whose?\n");
  CAF_CHECK_EQUAL(space.check(in_place("a", 1)).paths,
                  (paths{"src/a.txt", "stray.txt"}));
  CAF_CHECK_EQUAL(space.check(in_place("b", 1)).paths, paths{"stray.txt"});
}

CAF_TEST(a task without files in place answers for everything) {
  space.snapshot(in_place("a", 1), {"src/a.txt"});
  space.snapshot(in_place("all", 1), {});
  write(root, "src/a.txt", "a's\n");
  CAF_CHECK_EQUAL(space.check(in_place("all", 1)).paths, paths{"src/a.txt"});
}

CAF_TEST(an attempt that ended excuses nothing it did not overlap) {
  space.snapshot(in_place("a", 1), {"src/a.txt"});
  space.release(in_place("a", 1));
  space.snapshot(in_place("b", 1), {"src/b.txt"});
  write(root, "src/a.txt", "b wrote it\n");
  CAF_CHECK_EQUAL(space.check(in_place("b", 1)).paths, paths{"src/a.txt"});
}

CAF_TEST(an attempt that ended still answers to those it overlapped) {
  space.snapshot(in_place("a", 1), {"src/a.txt"});
  space.snapshot(in_place("b", 1), {"src/b.txt"});
  write(root, "src/a.txt", "a's, left uncommitted: a failed\n");
  space.release(in_place("a", 1));
  CAF_CHECK(space.check(in_place("b", 1)).paths.empty());
  // A later attempt, begun after a ended, sees the file as it found it.
  space.snapshot(in_place("c", 1), {"src/c.txt"});
  CAF_CHECK(space.check(in_place("c", 1)).paths.empty());
  write(root, "src/a.txt", "c wrote it\n");
  CAF_CHECK_EQUAL(space.check(in_place("c", 1)).paths, paths{"src/a.txt"});
}

CAF_TEST(in place a scope changed after its check is not committed) {
  space.snapshot(in_place("a", 1), {"src/a.txt"});
  space.snapshot(in_place("b", 1), {"src/b.txt"});
  write(root, "src/a.txt", "checked\n");
  CAF_CHECK_EQUAL(space.check(in_place("a", 1)).paths, paths{"src/a.txt"});
  space.release(in_place("a", 1));
  // b (or anything) writes into a's scope after a's last check.
  write(root, "src/a.txt", "unchecked\n");
  auto before = tip_of(repo, "main");
  auto r = space.integrate({"a", "a", "", "", true, {"src/a.txt"}});
  CAF_CHECK(r.status == git::integration::outcome::error);
  CAF_CHECK(r.message.find("src/a.txt changed after the task's last check")
            != std::string::npos);
  CAF_CHECK_EQUAL(tip_of(repo, "main"), before);
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "unchecked\n");
}

CAF_TEST(a check without a snapshot of the attempt is refused) {
  space.snapshot(in_place("a", 1), {"src/a.txt"});
  bool refused = false;
  try {
    space.check(in_place("a", 2));
  } catch (const std::runtime_error&) {
    refused = true;
  }
  CAF_CHECK(refused);
}

CAF_TEST_FIXTURE_SCOPE_END()
