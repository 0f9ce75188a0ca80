#define CAF_SUITE unit.paths
#include <caf/test/unit_test.hpp>

#include "src/scope/path.hpp"

using namespace taskforce::scope;

namespace {

std::string norm(const char* raw) {
  auto result = normalize_path(raw);
  return result.error.empty() ? result.path : "!" + result.error;
}

bool refused(const char* raw, const char* why) {
  auto result = normalize_path(raw);
  return result.path.empty() && result.error.find(why) != std::string::npos;
}

} // namespace

CAF_TEST(paths are tidied) {
  CAF_CHECK_EQUAL(norm("./a"), "a");
  CAF_CHECK_EQUAL(norm("a//b"), "a/b");
  CAF_CHECK_EQUAL(norm("a/./b/../c"), "a/c");
  CAF_CHECK_EQUAL(norm("src/auth/"), "src/auth/");
  CAF_CHECK_EQUAL(norm("src//auth//"), "src/auth/");
  CAF_CHECK_EQUAL(norm("src/*/../*.ts"), "src/*.ts");
}

CAF_TEST(absolute escaping and private paths are refused) {
  CAF_CHECK(refused("/etc/passwd", "absolute"));
  CAF_CHECK(refused("../other/x", "escapes the repository"));
  CAF_CHECK(refused("a/../../x", "escapes the repository"));
  CAF_CHECK(refused(".git/config", "points into .git/"));
  CAF_CHECK(refused(".git", "points into .git/"));
  CAF_CHECK(refused("./.taskforce/ledger.sqlite", "points into .taskforce/"));
  CAF_CHECK(refused("x/../.git/HEAD", "points into .git/"));
  // In any case: on a case-insensitive filesystem .GIT is .git.
  CAF_CHECK(refused(".GIT/hooks/pre-commit", "points into .GIT/"));
  CAF_CHECK(refused(".Git", "which belongs to git"));
  CAF_CHECK(refused(".TASKFORCE/ledger.sqlite", "belongs to taskforce"));
  // A nested repository's git folder, wherever it is, in any case.
  CAF_CHECK(refused("vendor/lib/.git/config",
                    "points into vendor/lib/.git/, a nested repository's git "
                    "folder, which belongs to git"));
  CAF_CHECK(refused("sub/.GIT/x", "nested repository's git folder"));
  CAF_CHECK(refused("vendor/*/.git/hooks/*", "nested repository's git"));
  CAF_CHECK(refused("./", "repository root"));
  CAF_CHECK(refused("", "empty"));
}

CAF_TEST(dot git lookalikes are ordinary paths) {
  CAF_CHECK_EQUAL(norm(".gitignore"), ".gitignore");
  CAF_CHECK_EQUAL(norm(".github/workflows/ci.yml"), ".github/workflows/ci.yml");
  CAF_CHECK_EQUAL(norm("sub/.gitmodules"), "sub/.gitmodules");
  // .taskforce is taskforce's only at the top.
  CAF_CHECK_EQUAL(norm("sub/.taskforce/x"), "sub/.taskforce/x");
}
