#define CAF_SUITE unit.secret
#include <caf/test/unit_test.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <set>
#include <string>

#include "src/net/secret.hpp"
#include "test.hpp"

using namespace taskforce;
namespace fs = std::filesystem;

namespace {

unsigned mode_of(const fs::path& file) {
  struct stat st {};
  ::stat(file.c_str(), &st);
  return st.st_mode & 07777;
}

/// Sets the process umask for one scope.
struct umask_scope {
  mode_t old;
  explicit umask_scope(mode_t m) : old(::umask(m)) {}
  ~umask_scope() {
    ::umask(old);
  }
};

} // namespace

CAF_TEST(a token is 256 bits as 64 lowercase hex digits and never repeats) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    auto t = net::new_token();
    CAF_CHECK_EQUAL(t.size(), 64u);
    CAF_CHECK(t.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(t);
  }
  CAF_CHECK_EQUAL(seen.size(), 100u);
}

CAF_TEST(tokens match only when equal in every byte and length) {
  auto t = net::new_token();
  CAF_CHECK(net::same_token(t, t));
  auto last = t;
  last.back() = last.back() == 'a' ? 'b' : 'a';
  CAF_CHECK(!net::same_token(last, t));
  auto first = t;
  first.front() = first.front() == 'a' ? 'b' : 'a';
  CAF_CHECK(!net::same_token(first, t));
  CAF_CHECK(!net::same_token(t.substr(0, 63), t));
  CAF_CHECK(!net::same_token(t + "0", t));
  CAF_CHECK(!net::same_token("", t));
  // An empty expected token admits nobody, not even an empty one.
  CAF_CHECK(!net::same_token("", ""));
}

CAF_TEST(a private file is 0600 whatever the umask and replaces the old one) {
  test::temp_dir dir;
  auto file = dir.path() / "endpoint.json";
  {
    umask_scope open_umask{0};
    net::write_private_file(file, "first\n");
  }
  CAF_CHECK_EQUAL(mode_of(file), 0600u);
  CAF_CHECK_EQUAL(test::read_file(file), "first\n");
  // A world-readable file in its place is replaced by a private one.
  fs::permissions(file, fs::perms::all);
  net::write_private_file(file, "second\n");
  CAF_CHECK_EQUAL(mode_of(file), 0600u);
  CAF_CHECK_EQUAL(test::read_file(file), "second\n");
  // Nothing is left beside it.
  size_t entries = 0;
  for ([[maybe_unused]] auto& e : fs::directory_iterator(dir.path()))
    ++entries;
  CAF_CHECK_EQUAL(entries, 1u);
}

CAF_TEST(writing a private file into a missing folder fails naming the path) {
  test::temp_dir dir;
  auto file = dir.path() / "missing" / "endpoint.json";
  try {
    net::write_private_file(file, "x");
    CAF_FAIL("no error");
  } catch (const std::system_error& e) {
    CAF_CHECK(std::string{e.what()}.find(file.string()) != std::string::npos);
  }
}

CAF_TEST(a file open to its group or others is named with its mode) {
  test::temp_dir dir;
  auto file = dir.write("endpoint.json", "{}");
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write);
  CAF_CHECK_EQUAL(net::private_file_problem(file), "");
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write
                          | fs::perms::others_read);
  auto others = net::private_file_problem(file);
  CAF_CHECK(others.find("others") != std::string::npos);
  CAF_CHECK(others.find("0604") != std::string::npos);
  fs::permissions(file, fs::perms::owner_read | fs::perms::owner_write
                          | fs::perms::group_read);
  auto group = net::private_file_problem(file);
  CAF_CHECK(group.find("its group") != std::string::npos);
  CAF_CHECK(group.find("0640") != std::string::npos);
  CAF_CHECK_EQUAL(net::private_file_problem(dir.path() / "none"), "");
}
