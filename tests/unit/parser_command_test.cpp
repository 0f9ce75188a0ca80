#define CAF_SUITE unit.parser_command
#include <caf/test/unit_test.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "src/taskfile/parse.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::taskfile;

namespace {

parse_result run_with(const std::string& command, const std::string& text,
                      int64_t timeout_ms = 10000) {
  parse_options opts;
  opts.parser_command = command;
  opts.parser_timeout_ms = timeout_ms;
  return parse(text, "T.md", opts);
}

bool has_error(const parse_result& r, const std::string& part) {
  for (const auto& e : r.errors)
    if (e.message.find(part) != std::string::npos)
      return true;
  return false;
}

} // namespace

CAF_TEST(the parser reads the file on stdin and its tasks are validated) {
  // The parser echoes one task per input line.
  auto r = run_with("printf '{\"tasks\":['; sep=; while read -r t; do "
                    "printf '%s{\"title\":\"%s\",\"files\":[\"%s.txt\"]}' "
                    "\"$sep\" \"$t\" \"$t\"; sep=,; done; printf '],"
                    "\"errors\":[]}'",
                    "alpha\nbeta\n");
  CAF_REQUIRE(r.ok());
  CAF_REQUIRE_EQUAL(r.tasks.size(), 2u);
  CAF_CHECK_EQUAL(r.tasks[0].id, "t1");
  CAF_CHECK_EQUAL(r.tasks[1].title, "beta");
  CAF_CHECK_EQUAL(r.tasks[1].files, (std::vector<std::string>{"beta.txt"}));
}

CAF_TEST(a parser that hangs is killed with its process group) {
  test::temp_dir dir;
  auto pid_file = (dir.path() / "child.pid").string();
  auto start = std::chrono::steady_clock::now();
  auto r = run_with("sleep 30 & echo $! > " + pid_file + "; wait", "x\n", 300);
  auto took = std::chrono::steady_clock::now() - start;
  CAF_CHECK(has_error(r, "timed out after 300 ms"));
  CAF_CHECK(took < std::chrono::seconds(5));
  std::ifstream in(pid_file);
  pid_t child = 0;
  in >> child;
  CAF_REQUIRE(child > 0);
  // The background sleep went with the group: gone, or a zombie waiting
  // for init to reap it (allow the kernel a moment).
  auto dead = [child] {
    std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
    std::string pid, name, state;
    if (!(stat >> pid >> name >> state))
      return true;
    return state == "Z" || state == "X";
  };
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = dead();
    if (!gone)
      ::usleep(10000);
  }
  CAF_CHECK(gone);
}

CAF_TEST(a failing parser a missing one and bad JSON are errors) {
  CAF_CHECK(
    has_error(run_with("echo nope >&2; exit 4", "x"), "failed (exit 4): nope"));
  CAF_CHECK(has_error(run_with("no-such-parser-program", "x"), "failed"));
  CAF_CHECK(has_error(run_with("echo '{\"tasks\": [}'", "x"), "invalid JSON"));
  CAF_CHECK(has_error(run_with("echo '[]'", "x"), "\"tasks\" array"));
  CAF_CHECK(
    has_error(run_with("echo '{\"tasks\": []}'", "x"), "found no tasks"));
  CAF_CHECK(has_error(run_with("echo '{\"tasks\": [{\"title\": 3}]}'", "x"),
                      "\"title\" must be a string"));
}

CAF_TEST(a parser that ignores a large input does not break the caller) {
  std::string big(4 * 1024 * 1024, 'x');
  auto r = run_with("echo '{\"tasks\": [{\"title\": \"A\", \"files\": "
                    "[\"a\"]}]}'",
                    big);
  CAF_CHECK(r.ok());
}
