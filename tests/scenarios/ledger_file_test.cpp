// A damaged ledger file is never taken for a fresh start: every command
// that reads it refuses with exit 2, names the file, and changes nothing.
#define CAF_SUITE scenarios.ledger_file
#include <caf/test/unit_test.hpp>

#include <map>

#include "scenarios/scenario.hpp"

using namespace taskforce;
using namespace taskforce::test;

namespace {

/// Every file under `dir` (recursively) with its content, to compare.
std::map<std::string, std::string>
files_under(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (auto& e : std::filesystem::recursive_directory_iterator(dir))
    files[e.path().lexically_relative(dir).string()]
      = e.is_regular_file() ? read_file(e.path()) : "(folder)";
  return files;
}

} // namespace

CAF_TEST(an emptied ledger is refused by every command and left alone) {
  scenario s;
  auto flag = (s.dir.path() / "fixed.flag").string();
  s.tasks("- [ ] Gated\n  - files: g.txt\n  - run: echo g > g.txt\n"
          "  - verify: test -f "
          + flag + "\n");
  s.set_config(R"({"run": {"maxAttempts": 1, "maxRepairs": 1}})");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(to_string(s.run().state), std::string{"paused"});
  auto worktree = s.task("t1").worktree.value_or("/none");
  CAF_REQUIRE(std::filesystem::exists(worktree));
  // The ledger loses its content (a full disk, a stray `>`).
  auto ledger = s.root / ".taskforce" / "ledger.sqlite";
  std::ofstream{ledger, std::ios::trunc}.flush();
  auto state_before = files_under(s.root / ".taskforce");
  auto worktrees_before = git_ok(s.root, {"worktree", "list", "--porcelain"});
  auto branches_before = git_ok(s.root, {"branch", "--list"});
  std::vector<std::vector<std::string>> commands{
    {"resume"},       {"run", "TASKS.md"}, {"status"},     {"status", "--json"},
    {"list"},         {"logs", "t1"},      {"diff", "t1"}, {"abort"},
    {"discard", "t1"}};
  for (auto& args : commands) {
    auto r = s.tf(args);
    CAF_MESSAGE(args[0] << ": " << r.output);
    CAF_CHECK_EQUAL(r.code, 2);
    CAF_CHECK_NOT_EQUAL(r.output.find(ledger.string()), std::string::npos);
    CAF_CHECK_NOT_EQUAL(r.output.find("is empty"), std::string::npos);
    CAF_CHECK_EQUAL(files_under(s.root / ".taskforce"), state_before);
    CAF_CHECK_EQUAL(std::filesystem::file_size(ledger), 0u);
  }
  // The paused run's worktree and branch are still there for a rescue.
  CAF_CHECK(std::filesystem::exists(worktree));
  CAF_CHECK_EQUAL(git_ok(s.root, {"worktree", "list", "--porcelain"}),
                  worktrees_before);
  CAF_CHECK_EQUAL(git_ok(s.root, {"branch", "--list"}), branches_before);
}
