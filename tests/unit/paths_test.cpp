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
  CAF_CHECK(refused("./", "repository root"));
  CAF_CHECK(refused("", "empty"));
}

CAF_TEST(dot git lookalikes are ordinary paths) {
  CAF_CHECK_EQUAL(norm(".gitignore"), ".gitignore");
  CAF_CHECK_EQUAL(norm(".github/workflows/ci.yml"), ".github/workflows/ci.yml");
  CAF_CHECK_EQUAL(norm("sub/.git/x"), "sub/.git/x");
}
