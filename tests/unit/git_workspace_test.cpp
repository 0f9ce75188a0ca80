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

  /// Attempt `n` of `task` in its worktree `l`.
  static git::attempt_place in_worktree(const git::lease& l,
                                        const std::string& task, uint64_t n) {
    return {"r1", task, n, l.path, l.branch, l.start};
  }

  /// A commit on top of main that no branch has (as plumbing makes one).
  std::string loose_commit(const std::string& message) {
    auto tree = lines_of(git_ok(root, {"rev-parse", "main^{tree}"})).at(0);
    return lines_of(
             git_ok(root, {"commit-tree", tree, "-p", "main", "-m", message}))
      .at(0);
  }
};

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

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

// -- the base branch and the main checkout
// -------------------------------------

CAF_TEST(a person s commit on the base while a task works is taken as theirs) {
  auto l = space.lease_worktree("t1", false, "", 1);
  write(root, "mine.txt", "mine\n");
  git_ok(root, {"add", "mine.txt"});
  git_ok(root, {"commit", "-q", "-m", "mine"});
  auto person = tip_of(repo, "main");
  write(l.path, "src/a.txt", "t1\n");
  auto c = space.check(in_worktree(l, "t1", 1));
  CAF_CHECK_EQUAL(c.base_moved, "");
  CAF_CHECK_EQUAL(c.main_paths, paths{});
  CAF_CHECK_EQUAL(space.vouched(), person);
  auto r = space.integrate({"t1", "t1", l.path, l.branch, true, {}});
  CAF_REQUIRE(r.status == git::integration::outcome::merged);
  std::string first_parent
    = lines_of(git_ok(root, {"rev-parse", "main^1"})).at(0);
  CAF_CHECK_EQUAL(first_parent, person);
}

CAF_TEST(a task s commit moved onto the base goes back and fails that task) {
  auto l1 = space.lease_worktree("t1", false, "", 1);
  auto l2 = space.lease_worktree("t2", false, "", 1);
  auto before = tip_of(repo, "main");
  write(l1.path, "README.md", "evil\n");
  git_ok(l1.path, {"commit", "-qam", "sneaky"});
  git_ok(l1.path, {"update-ref", "refs/heads/main", "HEAD"});
  auto sneaky = tip_of(repo, l1.branch);
  // t2 looks first: it is not its doing, but the base goes back at once.
  auto c2 = space.check(in_worktree(l2, "t2", 1));
  CAF_CHECK_EQUAL(c2.base_moved, "");
  CAF_CHECK_EQUAL(tip_of(repo, "main"), before);
  CAF_CHECK_EQUAL(porcelain(), "");
  auto c1 = space.check(in_worktree(l1, "t1", 1));
  CAF_CHECK(has(c1.base_moved, "made by t1"));
  CAF_CHECK(has(c1.base_moved, sneaky.substr(0, 12) + " sneaky"));
  CAF_CHECK(has(c1.base_moved, "main is back at " + before.substr(0, 12)));
  // Told once.
  CAF_CHECK_EQUAL(space.check(in_worktree(l1, "t1", 1)).base_moved, "");
}

CAF_TEST(a move that leaves no name is the run s only while a task works) {
  // Nothing of the run works: a person's plumbing.
  auto first = loose_commit("plumbing");
  git_ok(root, {"update-ref", "refs/heads/main", first});
  auto l = space.lease_worktree("t1", false, "", 1);
  CAF_CHECK_EQUAL(space.vouched(), first);
  // Now t1 works: the same kind of move is refused.
  auto second = loose_commit("while t1 works");
  git_ok(root, {"update-ref", "refs/heads/main", second});
  auto c = space.check(in_worktree(l, "t1", 1));
  CAF_CHECK(has(c.base_moved, "leaves no name"));
  CAF_CHECK_EQUAL(tip_of(repo, "main"), first);
  std::string kept
    = lines_of(git_ok(root, {"rev-parse", "refs/taskforce/kept/r1/base/base"}))
        .at(0);
  CAF_CHECK_EQUAL(kept, second);
}

CAF_TEST(a move back loses nothing and fails the attempt that ran) {
  auto b = task_commit("t0", {{"src/a.txt", "t0\n"}});
  CAF_REQUIRE(
    space.integrate({"t0", "t0", wt_path("t0").string(), b, true, {}}).status
    == git::integration::outcome::merged);
  auto merged = tip_of(repo, "main");
  auto l = space.lease_worktree("t1", false, "", 1);
  git_ok(l.path, {"update-ref", "refs/heads/main", "HEAD~1"});
  auto c = space.check(in_worktree(l, "t1", 1));
  CAF_CHECK(has(c.base_moved, "lost 2 commits"));
  CAF_CHECK_EQUAL(tip_of(repo, "main"), merged);
  CAF_CHECK_EQUAL(porcelain(), "");
}

CAF_TEST(a change in the main checkout while a task works elsewhere is its) {
  write(root, "notes.txt", "the user's, from before\n");
  auto l1 = space.lease_worktree("t1", false, "", 1);
  auto l2 = space.lease_worktree("t2", false, "", 1);
  write(l1.path, "src/a.txt", "t1\n");
  // t1 merges meanwhile: what its merge writes in the main checkout is
  // nobody's change.
  CAF_REQUIRE(space.integrate({"t1", "t1", l1.path, l1.branch, true, {}}).status
              == git::integration::outcome::merged);
  CAF_CHECK_EQUAL(space.check(in_worktree(l2, "t2", 1)).main_paths, paths{});
  write(root, "README.md", "planted\n");
  write(root, "src/planted.txt", "new\n");
  auto c = space.check(in_worktree(l2, "t2", 1));
  CAF_CHECK_EQUAL(c.main_paths, (paths{"README.md", "src/planted.txt"}));
  CAF_CHECK_EQUAL(c.base_moved, "");
}

CAF_TEST_FIXTURE_SCOPE_END()
