#define CAF_SUITE e2e.plan
#include <caf/test/unit_test.hpp>

#include <filesystem>
#include <map>

#include <nlohmann/json.hpp>

#include "src/proc/spawn.hpp"
#include "test.hpp"

using namespace taskforce;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct outcome {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `taskforce args...` in `cwd`; output goes to a separate directory.
outcome taskforce_cli(const std::vector<std::string>& args,
                      const fs::path& cwd) {
  test::temp_dir scratch;
  proc::spawn_options opts;
  opts.argv = {TASKFORCE_BINARY};
  opts.argv.insert(opts.argv.end(), args.begin(), args.end());
  opts.cwd = cwd.string();
  opts.in = proc::stdio::null();
  opts.out = proc::stdio::file((scratch.path() / "out").string());
  opts.err = proc::stdio::file((scratch.path() / "err").string());
  opts.env = {{"NO_COLOR", "1"}, {"COLUMNS", "120"}};
  auto child = proc::spawn(opts);
  auto status = proc::wait_for(child.pid);
  return {status.code, test::read_file(scratch.path() / "out"),
          test::read_file(scratch.path() / "err")};
}

fs::path example(const char* name) {
  return fs::path{TASKFORCE_SOURCE_DIR} / "examples" / name;
}

/// Every path under `dir` with its size and modification time.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    auto stamp
      = e.is_regular_file()
          ? std::to_string(e.file_size()) + "@"
              + std::to_string(e.last_write_time().time_since_epoch().count())
          : "dir";
    files[fs::relative(e.path(), dir).string()] = stamp;
  }
  return files;
}

/// A scratch repository (a `.git` folder is enough to be found as one).
struct repo_fixture {
  test::temp_dir dir;
  repo_fixture() {
    fs::create_directories(dir.path() / ".git");
  }
};

} // namespace

CAF_TEST(the seed checklist example plans to the documented JSON) {
  repo_fixture repo;
  auto r = taskforce_cli(
    {"plan", example("tasks.example.md").string(), "--json"}, repo.dir.path());
  CAF_CHECK_EQUAL(r.status, 0);
  // No task has a run: line: the shell worker (the default) could not run
  // them, which plan notes without refusing the file.
  auto no_run = [](int n) {
    return "task t" + std::to_string(n)
           + " has no run: command for the shell worker (run.worker "
             "\"shell\"); add a run: line, or agent: NAME to give it to an "
             "agent";
  };
  auto file = example("tasks.example.md").string();
  CAF_CHECK_EQUAL(r.err, file + ":3: warning: " + no_run(1) + "\n" + file
                           + ":6: warning: " + no_run(2) + "\n" + file
                           + ":9: warning: " + no_run(3) + "\n");
  auto expected = json::parse(R"({
    "tasks": [
      {"id": "t1", "index": 1, "line": 3, "title": "Add cache to the auth module",
       "done": false, "deps": [],
       "files": ["src/auth/cache.ts", "src/auth/cache.test.ts"], "locks": [],
       "priority": 0, "verify": "npm test -- auth", "run": null, "agent": null,
       "model": null, "risk": null, "timeout_ms": null, "held": false,
       "hold_reason": null},
      {"id": "t2", "index": 2, "line": 6, "title": "Update the docs",
       "done": false, "deps": [], "files": ["docs/auth.md"], "locks": [],
       "priority": 0, "verify": null, "run": null, "agent": null,
       "model": null, "risk": null, "timeout_ms": null, "held": false,
       "hold_reason": null},
      {"id": "t3", "index": 3, "line": 9,
       "title": "Wire the cache into the router", "done": false,
       "deps": ["t1", "t2"], "files": ["src/router.ts"], "locks": [],
       "priority": 0, "verify": null, "run": null, "agent": null,
       "model": null, "risk": null, "timeout_ms": null, "held": false,
       "hold_reason": null}
    ],
    "conflicts": [],
    "waves": [["t1", "t2"], ["t3"]],
    "errors": [],
    "warnings": []
  })");
  for (int n = 1; n <= 3; ++n)
    expected["warnings"].push_back({{"line", 3 * n}, {"message", no_run(n)}});
  CAF_CHECK_EQUAL(json::parse(r.out), expected);
}

CAF_TEST(the seed headings example plans with the heading number as id) {
  repo_fixture repo;
  auto r = taskforce_cli({"plan", "--format", "headings", "--json",
                          example("tasks.headings.example.md").string()},
                         repo.dir.path());
  CAF_CHECK_EQUAL(r.status, 0);
  auto plan = json::parse(r.out);
  CAF_REQUIRE_EQUAL(plan["tasks"].size(), 1u);
  const auto& t = plan["tasks"][0];
  CAF_CHECK_EQUAL(t["id"], "1");
  CAF_CHECK_EQUAL(t["line"], 3);
  CAF_CHECK_EQUAL(t["title"], "Add the cache layer");
  CAF_CHECK_EQUAL(t["files"], json::parse(R"(["src/auth/cache.ts",
                                              "src/auth/cache.test.ts"])"));
  CAF_CHECK_EQUAL(t["risk"], "\xF0\x9F\x9F\xA0");
  CAF_CHECK(t["verify"].is_null()); // How verified is prose, never a gate
  CAF_CHECK_EQUAL(plan["waves"], json::parse(R"([["1"]])"));
}

CAF_TEST(the locks example shows conflicts waves done and held tasks) {
  repo_fixture repo;
  auto r = taskforce_cli(
    {"plan", "--json", example("tasks.locks.example.md").string()},
    repo.dir.path());
  CAF_CHECK_EQUAL(r.status, 0);
  auto plan = json::parse(r.out);
  CAF_CHECK_EQUAL(plan["conflicts"],
                  json::parse(R"([["users-table", "orders-table"],
                                  ["auth", "cache"]])"));
  CAF_CHECK_EQUAL(plan["waves"], json::parse(R"([["users-table", "auth", "t5"],
                                  ["orders-table", "router", "cache"]])"));
  const auto& tasks = plan["tasks"];
  CAF_CHECK_EQUAL(tasks[0]["files"], json::parse(R"(["db/migrations/"])"));
  CAF_CHECK_EQUAL(tasks[0]["locks"], json::parse(R"(["db-migration"])"));
  CAF_CHECK_EQUAL(tasks[0]["priority"], 2);
  CAF_CHECK_EQUAL(tasks[2]["timeout_ms"], 600000);
  CAF_CHECK_EQUAL(tasks[3]["model"], "anthropic/claude-sonnet-4-5");
  CAF_CHECK_EQUAL(tasks[4]["verify"], nullptr);
  CAF_CHECK_EQUAL(tasks[5]["done"], true);
  CAF_CHECK_EQUAL(tasks[6]["held"], true);
  CAF_CHECK_EQUAL(tasks[6]["hold_reason"],
                  "[NEEDS DECISION: redis or an in-memory map?]");
  CAF_CHECK_EQUAL(tasks[6]["risk"], "high");
}

CAF_TEST(the human report shows the table conflicts and waves) {
  repo_fixture repo;
  auto r = taskforce_cli({"plan", example("tasks.locks.example.md").string(),
                          "--max-concurrency", "2"},
                         repo.dir.path());
  CAF_CHECK_EQUAL(r.status, 0);
  CAF_CHECK(r.out.rfind("ID ", 0) == 0);
  CAF_CHECK(r.out.find("GATE") != std::string::npos);
  CAF_CHECK(r.out.find("users-table: orders-table") != std::string::npos);
  CAF_CHECK(r.out.find("  1: users-table, auth\n") != std::string::npos);
  CAF_CHECK(r.out.find("cache: [NEEDS DECISION") != std::string::npos);
  // Every line fits the width ($COLUMNS here, the terminal's on a tty).
  size_t start = 0;
  while (start < r.out.size()) {
    auto end = r.out.find('\n', start);
    auto line = r.out.substr(start, end - start);
    size_t cols = 0;
    for (unsigned char c : line)
      cols += (c & 0xC0) != 0x80;
    CAF_CHECK_LESS_OR_EQUAL(cols, 120u);
    start = end + 1;
  }
}

CAF_TEST(errors are located and exit 2 with empty tasks and nothing written) {
  repo_fixture repo;
  repo.dir.write("TASKS.md", "- [ ] A\n"
                             "  fles: a.txt\n"
                             "  deps: zz\n"
                             "- [ ] B\n"
                             "  timeout: soon\n");
  auto before = snapshot(repo.dir.path());
  auto r = taskforce_cli({"plan", "TASKS.md"}, repo.dir.path());
  CAF_CHECK_EQUAL(r.status, 2);
  CAF_CHECK_EQUAL(r.out, "");
  CAF_CHECK_EQUAL(r.err,
                  "TASKS.md:2: unknown key \"fles\"; did you mean \"files\"?\n"
                  "TASKS.md:3: deps: unknown task \"zz\" (neither an id nor "
                  "an item number 1..2)\n"
                  "TASKS.md:5: timeout: \"soon\" is not a duration (30s, 5m, "
                  "1h or milliseconds)\n");
  auto j = taskforce_cli({"plan", "TASKS.md", "--json"}, repo.dir.path());
  CAF_CHECK_EQUAL(j.status, 2);
  auto plan = json::parse(j.out);
  CAF_CHECK(plan["tasks"].empty());
  CAF_CHECK(plan["conflicts"].empty());
  CAF_CHECK(plan["waves"].empty());
  CAF_REQUIRE_EQUAL(plan["errors"].size(), 3u);
  CAF_CHECK_EQUAL(plan["errors"][0]["line"], 2);
  CAF_CHECK_EQUAL(plan["errors"][1]["line"], 3);
  CAF_CHECK_EQUAL(plan["errors"][2]["message"],
                  "timeout: \"soon\" is not a duration (30s, 5m, 1h or "
                  "milliseconds)");
  CAF_CHECK(snapshot(repo.dir.path()) == before);
  CAF_CHECK(!fs::exists(repo.dir.path() / ".taskforce"));
}

CAF_TEST(a cycle is named on a deps line) {
  repo_fixture repo;
  repo.dir.write("T.md", "- [ ] A\n  id: a\n  files: a\n  deps: b\n"
                         "- [ ] B\n  id: b\n  files: b\n  deps: a\n");
  auto r = taskforce_cli({"plan", "T.md"}, repo.dir.path());
  CAF_CHECK_EQUAL(r.status, 2);
  CAF_CHECK_EQUAL(r.err, "T.md:4: dependency cycle: a -> b -> a\n");
}

CAF_TEST(options override the config and bad usage exits 2) {
  repo_fixture repo;
  repo.dir.write("T.md", "- [ ] A\n  files: a\n- [ ] B\n  files: b\n"
                         "- [ ] C\n  files: c\n");
  auto seq = taskforce_cli({"plan", "T.md", "--json", "--sequential-deps"},
                           repo.dir.path());
  auto seq_plan = json::parse(seq.out);
  CAF_CHECK_EQUAL(seq_plan["waves"],
                  json::parse(R"([["t1"], ["t2"], ["t3"]])"));
  auto one = taskforce_cli({"plan", "T.md", "--json", "--max-concurrency", "1"},
                           repo.dir.path());
  auto one_plan = json::parse(one.out);
  CAF_CHECK_EQUAL(one_plan["waves"].size(), 3u);
  repo.dir.write(".taskforce/config.json",
                 R"({"run": {"maxConcurrency": 2, "sequentialDeps": false}})");
  auto cfg = taskforce_cli({"plan", "T.md", "--json"}, repo.dir.path());
  auto cfg_plan = json::parse(cfg.out);
  CAF_CHECK_EQUAL(cfg_plan["waves"], json::parse(R"([["t1", "t2"], ["t3"]])"));
  CAF_CHECK_EQUAL(taskforce_cli({"plan"}, repo.dir.path()).status, 2);
  CAF_CHECK_EQUAL(taskforce_cli({"plan", "nope.md"}, repo.dir.path()).status,
                  2);
  CAF_CHECK_EQUAL(
    taskforce_cli({"plan", "T.md", "--format", "yaml"}, repo.dir.path()).status,
    2);
}

CAF_TEST(a custom parser command is run and its output validated) {
  repo_fixture repo;
  repo.dir.write("parser.sh",
                 "#!/bin/sh\n"
                 "cat > /dev/null\n"
                 "cat <<'EOF'\n"
                 "{\"tasks\": [\n"
                 " {\"id\": \"a\", \"title\": \"First\", \"line\": 1,\n"
                 "  \"files\": [\"./src//a.ts\"], \"priority\": 1},\n"
                 " {\"id\": \"b\", \"title\": \"Second\", \"deps\": [\"a\"],\n"
                 "  \"files\": [\"src/*.ts\"], \"timeout_ms\": 5000,\n"
                 "  \"verify\": \"make\"}\n"
                 "], \"errors\": []}\n"
                 "EOF\n");
  repo.dir.write("cfg.json", R"({"run": {"parserCommand": "sh parser.sh"}})");
  repo.dir.write("T.txt", "anything the parser understands\n");
  auto r = taskforce_cli({"--config", "cfg.json", "plan", "T.txt", "--json"},
                         repo.dir.path());
  CAF_CHECK_EQUAL(r.status, 0);
  // Neither task has a command for the shell worker: warnings only, at the
  // line the parser gave (none for b).
  CAF_CHECK(r.err.find("T.txt:1: warning: task a has no run: command")
            != std::string::npos);
  CAF_CHECK(r.err.find("T.txt: warning: task b has no run: command")
            != std::string::npos);
  auto plan = json::parse(r.out);
  CAF_CHECK_EQUAL(plan["tasks"][0]["files"], json::parse(R"(["src/a.ts"])"));
  CAF_CHECK_EQUAL(plan["tasks"][1]["index"], 2);
  CAF_CHECK_EQUAL(plan["tasks"][1]["timeout_ms"], 5000);
  CAF_CHECK_EQUAL(plan["conflicts"], json::parse(R"([["a", "b"]])"));
  CAF_CHECK_EQUAL(plan["waves"], json::parse(R"([["a"], ["b"]])"));
  // Its errors and its mistakes are reported like a file's.
  repo.dir.write("bad.sh",
                 "#!/bin/sh\n"
                 "cat > /dev/null\n"
                 "echo '{\"tasks\": [{\"id\": \"a\", \"title\": \"A\", "
                 "\"line\": 4, \"files\": [\"/abs\"], \"fils\": []}],'\n"
                 "echo '\"errors\": [{\"line\": 9, \"message\": \"odd "
                 "line\"}]}'\n");
  repo.dir.write("cfg2.json", R"({"run": {"parserCommand": "sh bad.sh"}})");
  auto bad = taskforce_cli({"--config", "cfg2.json", "plan", "T.txt"},
                           repo.dir.path());
  CAF_CHECK_EQUAL(bad.status, 2);
  CAF_MESSAGE(bad.err);
  CAF_CHECK(bad.err.find("T.txt:4: files: \"/abs\" is absolute")
            != std::string::npos);
  CAF_CHECK(bad.err.find("T.txt:4: task 1: unknown field \"fils\"; did you "
                         "mean \"files\"?")
            != std::string::npos);
  CAF_CHECK(bad.err.find("T.txt:9: odd line") != std::string::npos);
  // A failing parser is an error too, with its message.
  repo.dir.write("cfg3.json",
                 R"({"run": {"parserCommand": "echo broken >&2; exit 3"}})");
  auto failed = taskforce_cli({"--config", "cfg3.json", "plan", "T.txt"},
                              repo.dir.path());
  CAF_CHECK_EQUAL(failed.status, 2);
  CAF_CHECK(failed.err.find("failed (exit 3): broken") != std::string::npos);
}

CAF_TEST(the config picks the headings format and sequential deps) {
  repo_fixture repo;
  repo.dir.write(".taskforce/config.json",
                 R"({"run": {"taskFormat": "headings", "sequentialDeps": true,
                             "approvalRisks": ["high"],
                             "fields": {"Scope": "files"}}})");
  repo.dir.write("tasks.md", "# Feature\n"
                             "### 1. [x] Scaffold\n"
                             "- **Files:** `src/app.ts`\n"
                             "### 2. [ ] [design] Login page\n"
                             "- **Scope:** `web/login/`\n"
                             "- **Risk:** High\n"
                             "- **Verify:** `npm run e2e -- login`\n"
                             "### 3. [ ] Session store\n"
                             "- **Scope:** `src/session.ts`\n"
                             "- **Timeout:** 5m\n");
  auto r = taskforce_cli({"plan", "tasks.md", "--json"}, repo.dir.path());
  CAF_CHECK_EQUAL(r.status, 0);
  auto plan = json::parse(r.out);
  const auto& tasks = plan["tasks"];
  CAF_REQUIRE_EQUAL(tasks.size(), 3u);
  CAF_CHECK_EQUAL(tasks[0]["done"], true);
  CAF_CHECK_EQUAL(tasks[1]["title"], "Login page");
  CAF_CHECK_EQUAL(tasks[1]["deps"], json::parse(R"(["1"])"));
  CAF_CHECK_EQUAL(tasks[1]["files"], json::parse(R"(["web/login/"])"));
  CAF_CHECK_EQUAL(tasks[1]["verify"], "npm run e2e -- login");
  CAF_CHECK_EQUAL(tasks[2]["deps"], json::parse(R"(["2"])"));
  CAF_CHECK_EQUAL(tasks[2]["timeout_ms"], 300000);
  CAF_CHECK_EQUAL(plan["waves"], json::parse(R"([["2"], ["3"]])"));
  auto text = taskforce_cli({"plan", "tasks.md"}, repo.dir.path());
  CAF_CHECK(text.out.find("[approval] npm run e2e") != std::string::npos);
  // --format on the command line wins over the config.
  auto checklist = taskforce_cli({"plan", "tasks.md", "--format", "checklist"},
                                 repo.dir.path());
  CAF_CHECK_EQUAL(checklist.status, 2);
  CAF_CHECK(checklist.err.find("no tasks found") != std::string::npos);
}

CAF_TEST(plan refuses gits folders in any case and a nested repositorys) {
  repo_fixture repo;
  auto root = repo.dir.path();
  repo.dir.write("bad.md", "- [ ] Hook\n  - files: .GIT/hooks/pre-commit\n"
                           "- [ ] Nested\n  - files: vendor/lib/.git/config\n"
                           "- [ ] State\n  - files: .Taskforce/ledger.sqlite\n"
                           "- [ ] Fine\n  - files: vendor/lib/.gitignore\n");
  auto bad = taskforce_cli({"plan", "--json", "bad.md"}, root);
  CAF_CHECK_EQUAL(bad.status, 2);
  CAF_CHECK(bad.err.find("bad.md:2: files: \".GIT/hooks/pre-commit\" points "
                         "into .GIT/, which belongs to git")
            != std::string::npos);
  CAF_CHECK(bad.err.find("bad.md:4: files: \"vendor/lib/.git/config\" points "
                         "into vendor/lib/.git/, a nested repository's git "
                         "folder, which belongs to git")
            != std::string::npos);
  CAF_CHECK(bad.err.find("bad.md:6: files: \".Taskforce/ledger.sqlite\" "
                         "points into .Taskforce/, which belongs to taskforce")
            != std::string::npos);
  auto errors = json::parse(bad.out)["errors"];
  CAF_CHECK_EQUAL(errors.size(), 3u);
}

CAF_TEST(plan judges scopes where they lie through symlinks) {
  repo_fixture repo;
  auto root = repo.dir.path();
  test::temp_dir elsewhere;
  fs::create_directories(root / "src");
  fs::create_symlink("src", root / "inlink");
  fs::create_symlink(elsewhere.path(), root / "out");
  fs::create_symlink(".git", root / "g");
  repo.dir.write("bad.md", "- [ ] Escape\n  - files: out/pwn.txt\n"
                           "- [ ] Hook\n  - files: g/hooks/pre-commit\n");
  repo.dir.write("good.md", "- [ ] Direct\n  - files: src/a.txt\n"
                            "- [ ] Aliased\n  - files: inlink/a.txt\n");
  auto before = snapshot(root);
  auto bad = taskforce_cli({"plan", "--json", "bad.md"}, root);
  CAF_CHECK_EQUAL(bad.status, 2);
  CAF_CHECK(bad.err.find("bad.md:2: files: \"out/pwn.txt\" leads through a "
                         "symlink to ")
            != std::string::npos);
  CAF_CHECK(bad.err.find("outside the repository") != std::string::npos);
  CAF_CHECK(bad.err.find("bad.md:4: files: \"g/hooks/pre-commit\"")
            != std::string::npos);
  auto errors = json::parse(bad.out)["errors"];
  CAF_REQUIRE_EQUAL(errors.size(), 2u);
  CAF_CHECK_EQUAL(errors[0]["line"], 2);
  CAF_CHECK_EQUAL(errors[1]["line"], 4);
  auto good = taskforce_cli({"plan", "--json", "good.md"}, root);
  CAF_CHECK_EQUAL(good.status, 0);
  auto plan = json::parse(good.out);
  CAF_CHECK_EQUAL(plan["tasks"][1]["files"], json::parse(R"(["src/a.txt"])"));
  CAF_CHECK_EQUAL(plan["conflicts"], json::parse(R"([["t1", "t2"]])"));
  CAF_CHECK(snapshot(root) == before);
  CAF_CHECK(fs::is_empty(elsewhere.path()));
}
