#define CAF_SUITE unit.glob
#include <caf/test/unit_test.hpp>

#include "src/scope/coverage.hpp"
#include "src/scope/glob.hpp"

using namespace taskforce::scope;

namespace {

struct pair_case {
  const char* a;
  const char* b;
  bool meet;
};

} // namespace

CAF_TEST(the intersection table is exact for star question mark and globstar) {
  const pair_case table[] = {
    {"src/auth/**", "src/auth/cache.ts", true},
    {"src/*.ts", "src/a/b.ts", false},
    {"src/*.ts", "src/a.ts", true},
    {"src/auth/**", "src/*.ts", false},
    {"src/a?.ts", "src/ab.ts", true},
    {"src/a?.ts", "src/a/.ts", false},
    {"src/a?.ts", "src/abc.ts", false},
    {"**/x", "a/b/x", true},
    {"**/x", "x", true},
    {"**/x", "a/b/y", false},
    {"a/**/b", "a/b", true},
    {"a/**/b", "a/x/y/b", true},
    {"src/a.ts", "src/a.ts", true},
    {"src/a.ts", "src/b.ts", false},
    {"src/**/*.ts", "src/*/test.ts", true},
    {"src/*/x.ts", "src/**/y.ts", false},
    {"lib/*.js", "src/*.js", false},
    {"*.md", "docs/*.md", false},
    {"**/*.md", "docs/*.md", true},
    {"a/*b", "a/c*", true},
    {"a/*.ts", "a/*.js", false},
    {"a/x*", "a/*y", true},
    {"docs/", "docs/guide/intro.md", true},
    {"docs/", "docs", false},
    {"docs/", "doc/x", false},
    {"docs/", "**/*.md", true},
    {"src/[ab].ts", "src/b.ts", true},
    {"src/[ab].ts", "src/c.ts", false},
    {"src/[!a].ts", "src/a.ts", false},
    {"src/[a-c]*", "src/[c-e]*", true},
    {"src/[ab]*", "src/[cd]*", false},
    {"src/{a,b}.ts", "src/b.ts", true},
    {"src/{a,b}.ts", "src/c.ts", false},
    {"src/{a,lib/b}.ts", "src/lib/*.ts", true},
    {".gitignore", ".github/**", false},
  };
  for (const auto& c : table) {
    CAF_MESSAGE(c.a << " vs " << c.b);
    CAF_CHECK_EQUAL(intersects(c.a, c.b), c.meet);
    CAF_CHECK_EQUAL(intersects(c.b, c.a), c.meet);
  }
}

CAF_TEST(star and question mark never cross a slash while globstar does) {
  CAF_CHECK(glob{"src/*"}.matches("src/a.ts"));
  CAF_CHECK(!glob{"src/*"}.matches("src/a/b.ts"));
  CAF_CHECK(!glob{"a?b"}.matches("a/b"));
  CAF_CHECK(glob{"src/**"}.matches("src/a/b/c.ts"));
  CAF_CHECK(glob{"src/**.ts"}.matches("src/a/b.ts"));
  CAF_CHECK(glob{"**"}.matches("anything/at/all"));
}

CAF_TEST(the base is the leading segments without glob syntax) {
  CAF_CHECK_EQUAL(glob{"src/auth/*.ts"}.base(), "src/auth");
  CAF_CHECK_EQUAL(glob{"src/a*/x.ts"}.base(), "src");
  CAF_CHECK_EQUAL(glob{"**/x"}.base(), "");
  CAF_CHECK_EQUAL(glob{"docs/"}.base(), "docs");
  CAF_CHECK_EQUAL(glob{"src/a.ts"}.base(), "src/a.ts");
  CAF_CHECK(glob{"src/a.ts"}.is_literal());
  CAF_CHECK(!glob{"docs/"}.is_literal());
}

CAF_TEST(bad glob syntax is refused) {
  auto refused = [](const char* pattern) {
    try {
      glob{pattern};
    } catch (const std::invalid_argument&) {
      return true;
    }
    return false;
  };
  CAF_CHECK(refused("src/[ab"));
  CAF_CHECK(refused("src/{a,b"));
  CAF_CHECK(refused("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}/x"));
  CAF_CHECK(!refused("src/{a,b}/[xy]*"));
}

CAF_TEST(coverage accepts declared paths and refuses the rest) {
  std::vector<std::string> files{"src/auth/**", "README.md", "docs/"};
  coverage scope{files};
  CAF_CHECK(scope.covers("src/auth/cache.ts"));
  CAF_CHECK(scope.covers("src/auth/deep/er.ts"));
  CAF_CHECK(scope.covers("README.md"));
  CAF_CHECK(scope.covers("docs/a/b.md"));
  CAF_CHECK(!scope.covers("src/router.ts"));
  CAF_CHECK(!scope.covers("README.md.orig"));
  CAF_CHECK(!scope.covers("src/auth"));
  CAF_CHECK(!covers({}, "anything"));
}

CAF_TEST(a file where the scope needs a folder is in the way) {
  std::vector<std::string> files{"notes/", "src/auth/*.ts", "a/b/c.txt",
                                 "**/*.md"};
  CAF_CHECK(in_the_way(files, "notes"));
  CAF_CHECK(in_the_way(files, "src"));
  CAF_CHECK(in_the_way(files, "src/auth"));
  CAF_CHECK(in_the_way(files, "a"));
  CAF_CHECK(in_the_way(files, "a/b"));
  CAF_CHECK(!in_the_way(files, "a/b/c.txt"));
  CAF_CHECK(!in_the_way(files, "notes/n.txt"));
  CAF_CHECK(!in_the_way(files, "not"));
  CAF_CHECK(!in_the_way(files, "sr"));
  CAF_CHECK(!in_the_way(files, ""));
  CAF_CHECK(!in_the_way({}, "notes"));
}

CAF_TEST(pathological pairs are answered at once and conservatively) {
  // 64 alternatives of ~250 tokens each, twice: billions of product states.
  std::string a
    = "x/{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}" + std::string(240, '?') + "*1";
  std::string b
    = "x/{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}" + std::string(240, '?') + "*2";
  CAF_CHECK(intersects(a, b));
  // A path matching one of them is still decided exactly.
  CAF_CHECK(glob{a}.matches("x/acegik" + std::string(240, 'z') + "q1"));
  CAF_CHECK(!glob{a}.matches("x/acegik" + std::string(240, 'z') + "q2"));
}
