// `taskforce demo`: a small project in a temporary directory, run by the
// scripted worker so every part of a run shows without a model: parallel
// tasks, two tasks serialised by a shared file, a dependency, a gate that
// fails once and is repaired, and the merges. `--pool` shows the admission
// pool instead.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/run_driver.hpp"
#include "src/git/git.hpp"
#include "src/proc/run.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

int run_pool_demo_command(const std::vector<std::string>&,
                          const global_options&);
extern const char* pool_demo_help;

const char* demo_help
  = "usage: taskforce demo [--dir DIR] [--plain]\n"
    "       taskforce demo --pool [--agents N] [--work-ms MS]\n\n"
    "Creates a small git project (in a new temporary directory, or DIR) with\n"
    "a task list for the scripted worker, and runs it with the live table:\n"
    "two tasks in parallel, two that share a file and run one after the\n"
    "other, a task that waits for two others, and a gate that fails once and\n"
    "is repaired; each task is merged as a merge commit. Prints where the\n"
    "repository is and its `git log --graph`.\n\n"
    "--pool runs the admission-pool demonstration instead (see its --help).\n";

namespace {

const char* demo_tasks = R"(# Demo task list

- [ ] Add the greeting module
  - files: src/greet.txt
  - verify: grep -q hello src/greet.txt
- [ ] Add the farewell module
  - files: src/farewell.txt
  - verify: grep -q goodbye src/farewell.txt
- [ ] Note the greeting in the changelog
  - files: CHANGELOG.md
- [ ] Note the farewell in the changelog
  - files: CHANGELOG.md
- [ ] Wire both modules into main
  - files: src/main.txt
  - deps: 1, 2
  - verify: grep -q wired src/main.txt
)";

const char* demo_script = R"({
  "tasks": {
    "t1": [{"sleep_ms": 900, "write": {"src/greet.txt": "hello\n"},
            "report": {"status": "done", "summary": "greeting added",
                       "usage": {"input_tokens": 1200, "output_tokens": 300,
                                 "cost_usd": 0.01}}}],
    "t2": [{"sleep_ms": 1300, "write": {"src/farewell.txt": "goodbye\n"},
            "marker": "done"}],
    "t3": [{"sleep_ms": 500,
            "write": {"CHANGELOG.md": "# Changelog\n\n- greeting\n"},
            "marker": "done"}],
    "t4": [{"sleep_ms": 500, "append": {"CHANGELOG.md": "- farewell\n"},
            "marker": "done"}],
    "t5": [{"sleep_ms": 700, "write": {"src/main.txt": "TODO\n"},
            "print": "first try: forgot to wire them", "marker": "done"},
           {"sleep_ms": 500, "write": {"src/main.txt": "wired: greet, farewell\n"},
            "print": "repaired after the gate failed", "marker": "done"}]
  }
}
)";

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << text;
}

std::string git_graph(const fs::path& root, const fs::path& scratch) {
  proc::run_options o;
  o.argv = {"git",     "-C",        root.string(), "log",
            "--graph", "--oneline", "--decorate",  "--all"};
  o.log_file = (scratch / "graph.txt").string();
  o.timeout = std::chrono::seconds(20);
  try {
    auto r = proc::run(o);
    if (r.success())
      return r.tail;
  } catch (const std::exception&) {
  }
  // Without the git CLI: the first-parent line as libgit2 sees it.
  return "(install git to see the graph)\n";
}

} // namespace

int run_demo_command(const std::vector<std::string>& argv,
                     const global_options& opts) {
  for (auto& a : argv)
    if (a == "--pool") {
      std::vector<std::string> rest;
      for (auto& b : argv)
        if (b != "--pool")
          rest.push_back(b);
      return run_pool_demo_command(rest, opts);
    }
  args parsed(argv, {"--dir"}, {"--plain"});
  if (!parsed.positionals().empty())
    throw usage_error("demo takes no positional arguments");
  fs::path base;
  if (parsed.has("--dir")) {
    base = fs::absolute(parsed.value("--dir"));
    std::error_code ec;
    if (fs::exists(base, ec) && !fs::is_empty(base, ec))
      throw usage_error("--dir " + base.string() + ": not empty");
    fs::create_directories(base);
  } else {
    auto pattern
      = (fs::temp_directory_path() / "taskforce-demo-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot create a temporary directory");
    base = pattern;
  }
  auto root = base / "project";
  auto script = base / "demo-script.json";
  write_file(script, demo_script);
  {
    git::library lib;
    auto repo = git::init(root, "main");
    write_file(root / "README.md", "# A demo project\n");
    write_file(root / "TASKS.md", demo_tasks);
    git::ensure_excluded(repo, "/.taskforce/");
    git::commit_all(repo, "A project with a task list",
                    {"taskforce demo", "demo@taskforce.invalid"});
  }
  std::cout << "taskforce demo: a project in " << root.string()
            << "\n  t1, t2 run in parallel; t3 and t4 share CHANGELOG.md and "
               "run one after the other;\n  t5 waits for t1 and t2, and its "
               "gate fails once before the worker repairs it.\n\n";
  drive_options d;
  d.root = root;
  d.file = (root / "TASKS.md").string();
  d.cfg.run.worker = "scripted";
  d.cfg.run.script_file = script.string();
  d.cfg.run.max_concurrency = 3;
  d.plain = parsed.flag("--plain");
  auto code = drive_run(d);
  std::cout << "\nThe repository: " << root.string()
            << "\n$ git log --graph --oneline\n"
            << git_graph(root, base) << "\nLook around: taskforce --repo "
            << root.string() << " status | logs t5 | diff t5\n";
  return code;
}

} // namespace taskforce::cli
