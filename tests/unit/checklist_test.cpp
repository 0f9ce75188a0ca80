#define CAF_SUITE unit.checklist
#include <caf/test/unit_test.hpp>

#include "src/taskfile/parse.hpp"

using namespace taskforce;
using namespace taskforce::taskfile;

namespace {

parse_result read(const std::string& text, parse_options opts = {}) {
  opts.format = "checklist";
  return parse(text, "TASKS.md", opts);
}

/// The errors as "LINE: message" lines, for readable checks.
std::string errors_of(const parse_result& r) {
  std::string out;
  for (const auto& e : r.errors)
    out += std::to_string(e.line) + ": " + e.message + "\n";
  return out;
}

bool has_error(const parse_result& r, size_t line, const std::string& part) {
  for (const auto& e : r.errors)
    if (e.line == line && e.message.find(part) != std::string::npos)
      return true;
  return false;
}

} // namespace

CAF_TEST(the seed example parses with numbered deps) {
  auto r = read("Intro text.\n"
                "\n"
                "- [ ] Add cache to the auth module\n"
                "  - files: src/auth/cache.ts, src/auth/cache.test.ts\n"
                "  - verify: npm test -- auth\n"
                "- [ ] Update the docs\n"
                "  - files: docs/auth.md\n"
                "  - verify: false\n"
                "- [ ] Wire the cache into the router\n"
                "  - files: src/router.ts\n"
                "  - deps: 1, 2\n");
  CAF_REQUIRE(r.ok());
  CAF_REQUIRE_EQUAL(r.tasks.size(), 3u);
  const auto& t1 = r.tasks[0];
  CAF_CHECK_EQUAL(t1.id, "t1");
  CAF_CHECK_EQUAL(t1.index, 1u);
  CAF_CHECK_EQUAL(t1.line, 3u);
  CAF_CHECK_EQUAL(t1.title, "Add cache to the auth module");
  CAF_CHECK_EQUAL(t1.files.size(), 2u);
  CAF_CHECK_EQUAL(t1.files[1], "src/auth/cache.test.ts");
  CAF_CHECK_EQUAL(t1.verify.value_or(""), "npm test -- auth");
  CAF_CHECK(!r.tasks[1].verify);
  CAF_CHECK_EQUAL(r.tasks[2].deps, (std::vector<std::string>{"t1", "t2"}));
}

CAF_TEST(every key is read and keys are case insensitive) {
  auto r = read("- [ ] Migrate\n"
                "  ID: mig\n"
                "  Files: db/schema.sql, db/migrations/\n"
                "  LOCKS: db-migration, staging\n"
                "  priority: -3\n"
                "  verify: make check\n"
                "  agent: coder\n"
                "  model: anthropic/claude-sonnet-4-5#thinking\n"
                "  risk: High\n"
                "  timeout: 5m\n"
                "  run: ./migrate.sh --all\n"
                "- [ ] Next\n"
                "  deps: mig\n"
                "  files: a.txt\n",
                [] {
                  parse_options o;
                  o.approval_risks = {"high"};
                  return o;
                }());
  CAF_REQUIRE(r.ok());
  const auto& t = r.tasks[0];
  CAF_CHECK_EQUAL(t.id, "mig");
  CAF_CHECK_EQUAL(
    t.files, (std::vector<std::string>{"db/schema.sql", "db/migrations/"}));
  CAF_CHECK_EQUAL(t.locks,
                  (std::vector<std::string>{"db-migration", "staging"}));
  CAF_CHECK_EQUAL(t.priority, -3);
  CAF_CHECK_EQUAL(t.verify.value_or(""), "make check");
  CAF_CHECK_EQUAL(t.agent.value_or(""), "coder");
  CAF_CHECK_EQUAL(t.model.value_or(""), "anthropic/claude-sonnet-4-5#thinking");
  CAF_CHECK_EQUAL(t.risk.value_or(""), "High");
  CAF_CHECK(t.needs_approval);
  CAF_CHECK_EQUAL(t.timeout_ms.value_or(0), 300000);
  CAF_CHECK_EQUAL(t.run.value_or(""), "./migrate.sh --all");
  CAF_CHECK_EQUAL(r.tasks[1].deps, (std::vector<std::string>{"mig"}));
  CAF_CHECK(!r.tasks[1].needs_approval);
}

CAF_TEST(star and numbered checkboxes are tasks and x marks them done) {
  auto r = read("* [ ] One\n"
                "1. [x] Two\n"
                "2) [X] Three\n"
                "- [ ] Four\n");
  CAF_REQUIRE(r.ok());
  CAF_REQUIRE_EQUAL(r.tasks.size(), 4u);
  CAF_CHECK(!r.tasks[0].done);
  CAF_CHECK(r.tasks[1].done);
  CAF_CHECK(r.tasks[2].done);
  CAF_CHECK_EQUAL(r.tasks[3].id, "t4");
}

CAF_TEST(metadata may be written with or without a bullet at the task indent) {
  auto r = read("- [ ] One\n"
                "files: a.txt\n"
                "    * priority: 2\n"
                "- [ ] Two\n");
  CAF_REQUIRE(r.ok());
  CAF_CHECK_EQUAL(r.tasks[0].files, (std::vector<std::string>{"a.txt"}));
  CAF_CHECK_EQUAL(r.tasks[0].priority, 2);
}

CAF_TEST(a line indented less than its task ends the task) {
  auto r = read("  - [ ] Nested task\n"
                "    files: a.txt\n"
                "Closing paragraph\n"
                "files: not-metadata.txt\n");
  CAF_REQUIRE(r.ok());
  CAF_REQUIRE_EQUAL(r.tasks.size(), 1u);
  CAF_CHECK_EQUAL(r.tasks[0].files, (std::vector<std::string>{"a.txt"}));
  CAF_CHECK_EQUAL(r.tasks[0].body, "");
}

CAF_TEST(the body is the prompt and keeps unknown words) {
  auto r = read("- [ ] Write the parser\n"
                "  Use a table-driven design.\n"
                "  Note: keep it small.\n"
                "  files: src/p.cpp\n"
                "\n"
                "  ```\n"
                "  files: inside a fence is text\n"
                "  - [ ] so is this\n"
                "  ```\n"
                "  - [ ] a sub-item stays in the body\n"
                "- [ ] Next\n");
  CAF_REQUIRE(r.ok());
  CAF_REQUIRE_EQUAL(r.tasks.size(), 2u);
  CAF_CHECK_EQUAL(r.tasks[0].files, (std::vector<std::string>{"src/p.cpp"}));
  CAF_CHECK_EQUAL(r.tasks[0].body, "Use a table-driven design.\n"
                                   "Note: keep it small.\n"
                                   "\n"
                                   "```\n"
                                   "files: inside a fence is text\n"
                                   "- [ ] so is this\n"
                                   "```\n"
                                   "- [ ] a sub-item stays in the body");
}

CAF_TEST(an exact id wins over an item number) {
  auto r = read("- [ ] A\n  id: 2\n  files: a\n"
                "- [ ] B\n  files: b\n"
                "- [ ] C\n  deps: 2\n  files: c\n"
                "- [ ] D\n  deps: 3, t2\n  files: d\n");
  CAF_REQUIRE(r.ok());
  CAF_CHECK_EQUAL(r.tasks[3].deps, (std::vector<std::string>{"t3", "t2"}));
  CAF_CHECK_EQUAL(r.tasks[2].deps, (std::vector<std::string>{"2"}));
  CAF_CHECK(has_error(read("- [ ] D\n  deps: 1\n"), 2, "itself"));
}

CAF_TEST(timeouts take units or bare milliseconds) {
  int64_t ms = 0;
  CAF_CHECK(parse_duration("30s", ms) && ms == 30000);
  CAF_CHECK(parse_duration("5m", ms) && ms == 300000);
  CAF_CHECK(parse_duration("1h", ms) && ms == 3600000);
  CAF_CHECK(parse_duration("600000", ms) && ms == 600000);
  CAF_CHECK(parse_duration("250ms", ms) && ms == 250);
  CAF_CHECK(!parse_duration("5x", ms));
  CAF_CHECK(!parse_duration("0", ms));
  CAF_CHECK(!parse_duration("m", ms));
  CAF_CHECK(!parse_duration("-5s", ms));
  CAF_CHECK(!parse_duration("999999999999999h", ms));
}

CAF_TEST(a timeout may be any safe integer of milliseconds) {
  int64_t ms = 0;
  CAF_CHECK(parse_duration("9007199254740991", ms) && ms == 9007199254740991);
  CAF_CHECK(!parse_duration("9007199254740992", ms));
  CAF_CHECK(parse_duration("9007199254740s", ms) && ms == 9007199254740000);
  CAF_CHECK(!parse_duration("9007199254741s", ms));
}

CAF_TEST(verify is disabled by false no none and dash in any case) {
  for (auto off : {"false", "No", "NONE", "-", ""})
    CAF_CHECK(disables_gate(off));
  CAF_CHECK(!disables_gate("make test"));
}

CAF_TEST(a body matching the hold pattern holds the task with the whole line) {
  auto r = read("- [ ] Pick a database\n"
                "  files: db/\n"
                "  [NEEDS DECISION: postgres or sqlite]\n"
                "- [ ] Plain\n"
                "  files: x\n");
  CAF_REQUIRE(r.ok());
  CAF_CHECK(r.tasks[0].held);
  CAF_CHECK_EQUAL(r.tasks[0].hold_reason.value_or(""),
                  "[NEEDS DECISION: postgres or sqlite]");
  CAF_CHECK(!r.tasks[1].held);
  CAF_CHECK(!r.tasks[1].hold_reason);
  parse_options custom;
  custom.hold_pattern = {"\\bTBD\\b[^\\n]*"};
  auto c = read("- [ ] X\n  files: x\n  TBD which API\n", custom);
  CAF_REQUIRE(c.ok());
  CAF_CHECK_EQUAL(c.tasks[0].hold_reason.value_or(""), "TBD which API");
  // A match in the title gives the title; the marker mid-line gives the
  // whole line around it.
  auto t = read("- [ ] Pick one [NEEDS DECISION] now\n  files: x\n"
                "- [ ] Y\n  files: y\n  we wait: [NEEDS DECISION on names\n"
                "  more text\n");
  CAF_REQUIRE(t.ok());
  CAF_CHECK_EQUAL(t.tasks[0].hold_reason.value_or(""),
                  "Pick one [NEEDS DECISION] now");
  CAF_CHECK_EQUAL(t.tasks[1].hold_reason.value_or(""),
                  "we wait: [NEEDS DECISION on names");
}

CAF_TEST(approval risks match case insensitively and with emoji) {
  parse_options o;
  o.approval_risks = {"HIGH", "\xF0\x9F\x94\xB4"};
  auto r = read("- [ ] A\n  risk: high\n  files: a\n"
                "- [ ] B\n  risk: \xF0\x9F\x94\xB4\n  files: b\n"
                "- [ ] C\n  risk: low\n  files: c\n",
                o);
  CAF_REQUIRE(r.ok());
  CAF_CHECK(r.tasks[0].needs_approval);
  CAF_CHECK(r.tasks[1].needs_approval);
  CAF_CHECK(!r.tasks[2].needs_approval);
}

CAF_TEST(sequential deps chain the tasks in file order) {
  parse_options o;
  o.sequential_deps = true;
  auto r = read("- [ ] A\n- [ ] B\n- [ ] C\n  deps: 1\n", o);
  CAF_REQUIRE(r.ok());
  CAF_CHECK(r.tasks[0].deps.empty());
  CAF_CHECK_EQUAL(r.tasks[1].deps, (std::vector<std::string>{"t1"}));
  CAF_CHECK_EQUAL(r.tasks[2].deps, (std::vector<std::string>{"t1", "t2"}));
}

CAF_TEST(every error is reported with the line of its value) {
  auto r = read("- [ ] A\n"                                 // 1
                "  fles: a.txt\n"                           // 2
                "  priorty: 1\n"                            // 3
                "  deps: t9\n"                              // 4
                "- [ ] B\n"                                 // 5
                "  id: b\n"                                 // 6
                "  priority: high\n"                        // 7
                "  timeout: soon\n"                         // 8
                "  model: gpt4\n"                           // 9
                "  files: /etc/passwd, ../x, .git/config\n" // 10
                "- [ ] C\n"                                 // 11
                "  id: b\n"                                 // 12
                "  deps: b, c\n"                            // 13
                "-  [y] bad box\n"                          // 14
                "- [ ] D\n"                                 // 15
                "  locks: two words\n"                      // 16
                "  agent: \n"                               // 17
                "  files: src/[ab\n"                        // 18
                "  files: again\n");                        // 19
  CAF_CHECK(!r.ok());
  CAF_CHECK(r.tasks.empty());
  CAF_MESSAGE(errors_of(r));
  CAF_CHECK(has_error(r, 2, "did you mean \"files\""));
  CAF_CHECK(has_error(r, 3, "did you mean \"priority\""));
  CAF_CHECK(has_error(r, 4, "unknown task \"t9\""));
  CAF_CHECK(has_error(r, 7, "not an integer"));
  CAF_CHECK(has_error(r, 8, "not a duration"));
  CAF_CHECK(has_error(r, 9, "provider/model"));
  CAF_CHECK(has_error(r, 10, "absolute"));
  CAF_CHECK(has_error(r, 10, "escapes the repository"));
  CAF_CHECK(has_error(r, 10, "points into .git/"));
  CAF_CHECK(has_error(r, 12, "duplicate id \"b\" (first used on line 5)"));
  CAF_CHECK(has_error(r, 13, "unknown task \"c\""));
  CAF_CHECK(has_error(r, 14, "malformed checkbox"));
  CAF_CHECK(has_error(r, 16, "not a lock name"));
  CAF_CHECK(has_error(r, 17, "not an agent id"));
  CAF_CHECK(has_error(r, 18, "unclosed ["));
  CAF_CHECK(has_error(r, 19, "given twice"));
  // Sorted by line.
  for (size_t i = 1; i < r.errors.size(); ++i)
    CAF_CHECK(r.errors[i - 1].line <= r.errors[i].line);
}

CAF_TEST(near misses follow the edit distance rules) {
  CAF_CHECK(has_error(read("- [ ] A\n  lock: db\n"), 2, "\"locks\""));
  CAF_CHECK(has_error(read("- [ ] A\n  prioity: 1\n"), 2, "\"priority\""));
  CAF_CHECK(has_error(read("- [ ] A\n  timout: 1s\n"), 2, "\"timeout\""));
  // `id` only exactly; far words are body text.
  auto r = read("- [ ] A\n  ids: x\n  Notes: y\n  prio: 1\n  files: a\n");
  CAF_REQUIRE(r.ok());
  CAF_CHECK_EQUAL(r.tasks[0].body, "ids: x\nNotes: y\nprio: 1");
}

CAF_TEST(a dependency cycle is reported on a deps line naming the ids) {
  auto r = read("- [ ] A\n  id: a\n  deps: c\n"
                "- [ ] B\n  id: b\n  deps: a\n"
                "- [ ] C\n  id: c\n  deps: b\n"
                "- [ ] D\n  id: d\n  deps: a\n");
  CAF_REQUIRE_EQUAL(r.errors.size(), 1u);
  CAF_CHECK_EQUAL(r.errors[0].line, 3u);
  CAF_CHECK_EQUAL(r.errors[0].message, "dependency cycle: a -> c -> b -> a");
}

CAF_TEST(a task needs a title and a file needs tasks) {
  CAF_CHECK(has_error(read("- [ ]\n"), 1, "needs a title"));
  auto none = read("# Just notes\n\nNothing to do.\n");
  CAF_REQUIRE_EQUAL(none.errors.size(), 1u);
  CAF_CHECK_EQUAL(none.errors[0].line, 0u);
  CAF_CHECK(has_error(none, 0, "no tasks found"));
  CAF_CHECK_EQUAL(format_error("T.md", none.errors[0]).rfind("T.md: no", 0),
                  0u);
  CAF_CHECK_EQUAL(format_error("T.md", {4, "x"}), "T.md:4: x");
}

CAF_TEST(a bad hold regex is an error) {
  parse_options o;
  o.hold_pattern = {"[unclosed"};
  CAF_CHECK(has_error(read("- [ ] A\n", o), 0, "run.holdPattern"));
}

CAF_TEST(a byte order mark and windows line endings are tolerated) {
  auto r = read("\xEF\xBB\xBF- [ ] A\r\n  files: a.txt\r\n- [x] B\r\n");
  CAF_REQUIRE(r.ok());
  CAF_REQUIRE_EQUAL(r.tasks.size(), 2u);
  CAF_CHECK_EQUAL(r.tasks[0].files, (std::vector<std::string>{"a.txt"}));
  CAF_CHECK(r.tasks[1].done);
}

CAF_TEST(markdown links and plain list items are not checkboxes) {
  auto r = read("- [link](http://x) is prose\n"
                "- plain item\n"
                "- [ ] Real task\n");
  CAF_REQUIRE(r.ok());
  CAF_CHECK_EQUAL(r.tasks.size(), 1u);
}

CAF_TEST(ids git cannot use in a branch name are refused at their line) {
  auto r = read("- [ ] One\n  - id: a..b\n"
                "- [ ] Two\n  - id: x.lock\n"
                "- [ ] Three\n  - id: c.\n"
                "- [ ] Four\n  - id: a/b\n"
                "- [ ] Five\n  - id: v1.2-rc_3\n"
                "- [ ] Six\n  - id: lock.x\n");
  CAF_CHECK(has_error(r, 2, "\"..\""));
  CAF_CHECK(has_error(r, 4, "\".lock\""));
  CAF_CHECK(has_error(r, 6, "ending in \".\""));
  CAF_CHECK(has_error(r, 8, "is not an id"));
  CAF_CHECK_EQUAL(r.errors.size(), 4u);
  CAF_CHECK(errors_of(r).find("10:") == std::string::npos);
}

CAF_TEST(default ids and heading numbers are valid ids) {
  std::string many;
  for (int i = 0; i < 120; ++i)
    many += "- [ ] Task " + std::to_string(i) + "\n  - files: f"
            + std::to_string(i) + "\n";
  auto r = read(many);
  CAF_REQUIRE(r.ok());
  CAF_CHECK_EQUAL(r.tasks.back().id, "t120");
  parse_options h;
  h.format = "headings";
  auto ok = parse("### 12. [ ] Twelve\n", "T.md", h);
  CAF_REQUIRE(ok.ok());
  CAF_CHECK_EQUAL(ok.tasks[0].id, "12");
  // A number too long for a branch name is refused.
  auto long_number = std::string(70, '9');
  auto bad = parse("### " + long_number + ". [ ] Long\n", "T.md", h);
  CAF_CHECK(has_error(bad, 1, "is not an id"));
}

CAF_TEST(a headings file read as a checklist yields no acceptance criteria) {
  auto text = "# Plan\n"
              "\n"
              "### 1. [ ] Add the cache layer\n"
              "**Files:** src/cache.ts\n"
              "**Acceptance criteria:**\n"
              "- [ ] a hit avoids the slow path\n"
              "- [ ] a miss fills the cache\n"
              "\n"
              "### 2. [x] Wire it in\n"
              "- [ ] the router uses it\n";
  auto r = read(text);
  // No task: the "no tasks" error names the other format.
  CAF_CHECK(r.tasks.empty());
  CAF_CHECK(has_error(r, 0, "--format headings"));
  CAF_REQUIRE_EQUAL(r.warnings.size(), 1u);
  CAF_CHECK_EQUAL(r.warnings[0].line, 3u);
  CAF_CHECK_EQUAL(r.warnings[0].message,
                  "\"### 1. [ ] Add the cache layer\" is a task of the "
                  "headings format (like 1 more headings here); read as a "
                  "checklist, the checkboxes under it are not tasks: use "
                  "--format headings (or run.taskFormat \"headings\")");
}

CAF_TEST(checklist tasks before and after a headings task stay tasks) {
  auto r = read("- [ ] First\n"
                "  files: a\n"
                "## 1. [ ] A heading task\n"
                "- [ ] its criterion\n"
                "## Later\n"
                "- [ ] Second\n"
                "  files: b\n");
  CAF_REQUIRE(r.ok());
  CAF_REQUIRE_EQUAL(r.tasks.size(), 2u);
  CAF_CHECK_EQUAL(r.tasks[0].title, "First");
  CAF_CHECK_EQUAL(r.tasks[1].title, "Second");
  CAF_REQUIRE_EQUAL(r.warnings.size(), 1u);
  CAF_CHECK_EQUAL(r.warnings[0].line, 3u);
  // An ordinary numbered heading is no task of the other format.
  auto plain = read("### 1. Background\n- [ ] Task\n  files: a\n");
  CAF_CHECK(plain.warnings.empty());
  CAF_CHECK_EQUAL(plain.tasks.size(), 1u);
}

CAF_TEST(run and verify take an indented block as a multi - line command) {
  auto r = read("- [ ] Write two files\n"
                "  - files: a.txt, b.txt\n"
                "  - run: |\n"
                "      printf 'one\\n' > a.txt\n"
                "\n"
                "      if [ -f a.txt ]; then\n"
                "        printf 'two\\n' > b.txt\n"
                "      fi\n"
                "  - verify: |\n"
                "      test -f a.txt\n"
                "      test -f b.txt\n"
                "  - priority: 2\n"
                "- [ ] Next\n"
                "  - run: echo next\n");
  CAF_REQUIRE_EQUAL(errors_of(r), "");
  CAF_REQUIRE_EQUAL(r.tasks.size(), 2u);
  CAF_CHECK_EQUAL(*r.tasks[0].run, "printf 'one\\n' > a.txt\n"
                                   "\n"
                                   "if [ -f a.txt ]; then\n"
                                   "  printf 'two\\n' > b.txt\n"
                                   "fi");
  CAF_CHECK_EQUAL(*r.tasks[0].verify, "test -f a.txt\ntest -f b.txt");
  CAF_CHECK_EQUAL(r.tasks[0].priority, 2);
  CAF_CHECK_EQUAL(*r.tasks[1].run, "echo next");
}

CAF_TEST(a block with nothing under it is an error at its line) {
  auto r = read("- [ ] Nothing to run\n"
                "  - run: |\n"
                "  - verify: |\n"
                "- [ ] Other\n"
                "  - run: echo ok\n");
  CAF_CHECK(has_error(r, 2, "run: \"|\" needs the command on the lines below"));
  CAF_CHECK(has_error(r, 3, "verify: \"|\" needs the command"));
  CAF_CHECK_EQUAL(r.errors.size(), 2u);
}
