#define CAF_SUITE unit.git_repository
#include <caf/test/unit_test.hpp>

#include <git2.h>

#include "git_fixture.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

CAF_TEST_FIXTURE_SCOPE(git_repository_tests, git_fixture)

CAF_TEST(branches ancestry and revisions are answered) {
  CAF_CHECK_EQUAL(git::head_branch(repo), "main");
  auto first = tip_of(repo, "main");
  CAF_CHECK_EQUAL(git::head_commit(repo).value_or(""), first);
  CAF_CHECK(!git::branch_tip(repo, "nope").has_value());
  CAF_CHECK_EQUAL(git::resolve(repo, "HEAD"), first);
  write(root, "x.txt", "x\n");
  git_ok(root, {"add", "x.txt"});
  git_ok(root, {"commit", "-q", "-m", "second"});
  auto second = tip_of(repo, "main");
  CAF_CHECK(git::is_ancestor(repo, first, second));
  CAF_CHECK(git::is_ancestor(repo, second, second));
  CAF_CHECK(!git::is_ancestor(repo, second, first));
  CAF_CHECK_EQUAL(git::resolve(repo, "main~1"), first);
  CAF_CHECK_EQUAL(git::merge_base(repo, first, second).value_or(""), first);
  auto names = git::list_branches(repo, "ma");
  CAF_REQUIRE_EQUAL(names.size(), 1u);
  CAF_CHECK_EQUAL(names[0].tip, second);
  bool threw = false;
  try {
    git::resolve(repo, "no-such-thing");
  } catch (const git::error& e) {
    threw = true;
    CAF_CHECK(std::string{e.what()}.find("no-such-thing") != std::string::npos);
    CAF_CHECK_EQUAL(e.code(), GIT_ENOTFOUND);
  }
  CAF_CHECK(threw);
}

CAF_TEST(dirty_tracked_paths names edited staged and deleted files only) {
  CAF_CHECK(git::dirty_tracked_paths(repo).empty());
  write(root, "src/a.txt", "edited\n");
  write(root, "staged.txt", "staged\n");
  git_ok(root, {"add", "staged.txt"});
  fs::remove(root / "src/b.txt");
  write(root, "untracked.txt", "not ours to judge\n");
  write(root, ".taskforce/ledger.sqlite", "excluded\n");
  CAF_CHECK_EQUAL(
    git::dirty_tracked_paths(repo),
    (std::vector<std::string>{"src/a.txt", "src/b.txt", "staged.txt"}));
}

CAF_TEST(the exclude line is added once) {
  CAF_CHECK(!git::ensure_excluded(repo, ".taskforce/"));
  auto text = read_file(root / ".git/info/exclude");
  CAF_CHECK_EQUAL(text.find(".taskforce/"), text.rfind(".taskforce/"));
  CAF_CHECK(git::ensure_excluded(repo, "*.tmp"));
  CAF_CHECK(!git::ensure_excluded(repo, "*.tmp"));
  write(root, ".taskforce/logs/x.log", "log\n");
  CAF_CHECK_EQUAL(porcelain(), "");
}

CAF_TEST(opening a folder that is not a repository says which) {
  bool threw = false;
  try {
    git::open(dir.path());
  } catch (const git::error& e) {
    threw = true;
    CAF_CHECK(e.attempted().find(dir.path().string()) != std::string::npos);
  }
  CAF_CHECK(threw);
  auto found = git::discover(root / "src");
  CAF_CHECK_EQUAL(found.workdir(), root);
}

CAF_TEST_FIXTURE_SCOPE_END()
