// Scope entries and changed paths resolved through symlinks, on a real
// folder tree.
#define CAF_SUITE unit.physical
#include <caf/test/unit_test.hpp>

#include <filesystem>

#include "src/scope/physical.hpp"
#include "src/taskfile/parse.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::scope;
namespace fs = std::filesystem;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// A repository-like tree: src/a.txt, inlink -> src, out -> (outside),
/// g -> .git, dangling -> (outside, missing), loop1 <-> loop2.
struct tree {
  test::temp_dir dir;
  fs::path root = dir.path() / "repo";
  fs::path outside = dir.path() / "outside";

  tree() {
    fs::create_directories(root / "src");
    fs::create_directories(root / ".git" / "hooks");
    fs::create_directories(root / ".taskforce");
    fs::create_directories(outside);
    dir.write("repo/src/a.txt", "a\n");
    fs::create_symlink("src", root / "inlink");
    fs::create_symlink(outside, root / "out");
    fs::create_symlink(".git", root / "g");
    fs::create_symlink("../.taskforce", root / "src" / "tf");
    fs::create_symlink(dir.path() / "missing" / "deep", root / "dangling");
    fs::create_symlink("loop2", root / "loop1");
    fs::create_symlink("loop1", root / "loop2");
    fs::create_symlink("a.txt", root / "src" / "cur");
    fs::create_symlink(".", root / "here");
  }
};

std::string path_of(const physical_path& p) {
  return p.error.empty() ? p.path : "error: " + p.error;
}

} // namespace

CAF_TEST(paths without symlinks stay as written) {
  tree t;
  physical_root r{t.root};
  CAF_CHECK_EQUAL(path_of(r.resolve("src/a.txt")), "src/a.txt");
  CAF_CHECK_EQUAL(path_of(r.resolve("src/new/deep.txt")), "src/new/deep.txt");
  CAF_CHECK_EQUAL(path_of(r.resolve_entry("src/*.txt")), "src/*.txt");
  CAF_CHECK_EQUAL(path_of(r.resolve_entry("**/x")), "**/x");
  CAF_CHECK_EQUAL(path_of(r.resolve_entry("src/")), "src/");
}

CAF_TEST(a symlinked folder inside the repository resolves to its target) {
  tree t;
  physical_root r{t.root};
  CAF_CHECK_EQUAL(path_of(r.resolve("inlink/a.txt")), "src/a.txt");
  CAF_CHECK_EQUAL(path_of(r.resolve_entry("inlink/a.txt")), "src/a.txt");
  CAF_CHECK_EQUAL(path_of(r.resolve_entry("inlink/*.txt")), "src/*.txt");
  CAF_CHECK_EQUAL(path_of(r.resolve_entry("inlink/")), "src/");
  CAF_CHECK_EQUAL(path_of(r.resolve_entry("inlink/sub/{a,b}.c")),
                  "src/sub/{a,b}.c");
  // A file symlink is its target.
  CAF_CHECK_EQUAL(path_of(r.resolve_entry("src/cur")), "src/a.txt");
  CAF_CHECK_EQUAL(path_of(r.resolve_entry("here/*.md")), "*.md");
}

CAF_TEST(a path through a symlink out of the repository is refused) {
  tree t;
  physical_root r{t.root};
  auto p = r.resolve_entry("out/pwn.txt");
  CAF_CHECK(p.path.empty());
  CAF_CHECK(contains(p.error, "\"out/pwn.txt\""));
  CAF_CHECK(contains(p.error, "outside the repository"));
  CAF_CHECK(contains(p.error, (t.outside / "pwn.txt").string()));
  CAF_CHECK(!r.resolve_entry("out/**").error.empty());
  CAF_CHECK(!r.resolve_entry("out").error.empty());
  // A dangling link is followed by its text: a write would create it.
  CAF_CHECK(contains(r.resolve_entry("dangling/x").error, "outside"));
}

CAF_TEST(aliases of.git and.taskforce are refused) {
  tree t;
  physical_root r{t.root};
  auto p = r.resolve_entry("g/hooks/post-checkout");
  CAF_CHECK(contains(p.error, ".git/hooks/post-checkout"));
  CAF_CHECK(contains(p.error, "belongs to git"));
  CAF_CHECK(contains(r.resolve_entry("g/**").error, ".git"));
  CAF_CHECK(contains(r.resolve_entry("src/tf/ledger.sqlite").error,
                     "belongs to taskforce"));
  CAF_CHECK(contains(r.resolve_entry("here/").error, "top folder"));
}

CAF_TEST(a symlink loop is refused with its reason) {
  tree t;
  physical_root r{t.root};
  CAF_CHECK(contains(r.resolve_entry("loop1/x").error, "loop"));
}

CAF_TEST(changed paths are judged where they lie and symlinks by target) {
  tree t;
  physical_root r{t.root};
  CAF_CHECK_EQUAL(path_of(r.locate_changed("src/a.txt")), "src/a.txt");
  // Deleted: as spelled.
  CAF_CHECK_EQUAL(path_of(r.locate_changed("gone/file.txt")), "gone/file.txt");
  // A symlink inside the repository is the link itself.
  CAF_CHECK_EQUAL(path_of(r.locate_changed("inlink")), "inlink");
  CAF_CHECK_EQUAL(path_of(r.locate_changed("src/cur")), "src/cur");
  // Symlinks out of it, or into .git, are refused.
  CAF_CHECK(contains(r.locate_changed("out").error, "outside the repository"));
  CAF_CHECK(contains(r.locate_changed("g").error, "belongs to git"));
  CAF_CHECK(contains(r.locate_changed("dangling").error, "outside"));
  // A loop writes nowhere.
  CAF_CHECK_EQUAL(path_of(r.locate_changed("loop1")), "loop1");
}

CAF_TEST(a repository under a symlinked folder resolves the same) {
  tree t;
  fs::create_symlink(t.root, t.dir.path() / "alias");
  physical_root r{t.dir.path() / "alias"};
  CAF_CHECK_EQUAL(path_of(r.resolve("inlink/a.txt")), "src/a.txt");
  // An absolute link into the repository by its real path is inside.
  fs::create_symlink(fs::canonical(t.root) / "src", t.root / "abs");
  CAF_CHECK_EQUAL(path_of(r.resolve("abs/a.txt")), "src/a.txt");
}

CAF_TEST(the task file parser resolves scopes in the repository) {
  tree t;
  taskfile::parse_options opts;
  opts.repository = t.root.string();
  auto r = taskfile::parse("- [ ] Through\n  - files: inlink/a.txt, src/b.txt\n"
                           "- [ ] Out\n  - files: ok.txt, out/pwn.txt\n"
                           "- [ ] Hook\n  - files: g/hooks/post-checkout\n",
                           "T.md", opts);
  CAF_REQUIRE_EQUAL(r.errors.size(), 2u);
  CAF_CHECK_EQUAL(r.errors[0].line, 4u);
  CAF_CHECK(contains(r.errors[0].message, "outside the repository"));
  CAF_CHECK_EQUAL(r.errors[1].line, 6u);
  CAF_CHECK(contains(r.errors[1].message, "belongs to git"));
  opts.repository.clear();
  auto spelled
    = taskfile::parse("- [ ] Through\n  - files: inlink/a.txt\n", "T.md", opts);
  CAF_REQUIRE(spelled.ok());
  CAF_CHECK_EQUAL(spelled.tasks[0].files.at(0), "inlink/a.txt");
  opts.repository = t.root.string();
  auto physical
    = taskfile::parse("- [ ] Through\n  - files: inlink/a.txt\n", "T.md", opts);
  CAF_REQUIRE(physical.ok());
  CAF_CHECK_EQUAL(physical.tasks[0].files.at(0), "src/a.txt");
}
