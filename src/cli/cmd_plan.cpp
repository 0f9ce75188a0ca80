// `taskforce plan FILE`: parse a task file and print its schedule. Runs
// nothing and writes nothing (a custom parser command is the only process).

#include <algorithm>
#include <fstream>
#include <iostream>
#include <sstream>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/terminal.hpp"
#include "src/plan/report.hpp"
#include "src/run/preflight.hpp"
#include "src/run/run_setup.hpp"
#include "src/store/ledger.hpp"
#include "src/text/file.hpp"

namespace taskforce::cli {

const char* plan_help
  = "usage: taskforce plan FILE [--json] [--format checklist|headings]\n"
    "                           [--max-concurrency N] [--sequential-deps]\n\n"
    "Parses a task file (FILE, or - for standard input) and prints the\n"
    "schedule without running anything: a table of tasks (id, title, deps,\n"
    "files, locks, priority, gate), the pairs that may never run at once, and\n"
    "the waves a run would start with unit durations.\n\n"
    "  --json               print one JSON object: tasks, conflicts, waves, "
    "errors\n"
    "  --format F           checklist (\"- [ ] Title\") or headings\n"
    "                       (\"### 1. [ ] Title\"); default run.taskFormat\n"
    "  --max-concurrency N  tasks per wave; default run.maxConcurrency\n"
    "  --sequential-deps    each task depends on the one before it\n\n"
    "With run.parserCommand set, that program reads the file on standard\n"
    "input and prints the tasks as JSON instead.\n"
    "Every mistake is reported as FILE:LINE: message; exit 2 when there is "
    "one.\n"
    "The checks `run` makes before it starts are made too: an unknown agent\n"
    "preset is an error; a shell task without run: and an agent program not\n"
    "on PATH are warnings (FILE:LINE: warning: ...), as the file may run\n"
    "elsewhere. With run.coChangeLearning, file pairs learned from earlier\n"
    "runs of the repository add conflicts, listed apart.\n";

namespace {

/// The learned co-change pairs of the repository at `top` (read-only);
/// none without learning or a ledger. Trouble reading becomes a warning.
plan::graph_options
learned_pairs(const std::optional<std::string>& top, const config& cfg,
              std::vector<taskfile::parse_error>& warnings) {
  plan::graph_options opts;
  if (!cfg.run.co_change_learning || !top)
    return opts;
  auto file = run::state_dir(*top) / store::ledger_file_name;
  std::error_code ec;
  if (!std::filesystem::exists(file, ec))
    return opts;
  try {
    store::ledger_options o;
    o.read_only = true;
    opts.co_change = store::ledger::open(file, o).co_change_pairs(
      cfg.run.co_change_min_count);
  } catch (const std::exception& e) {
    warnings.push_back(
      {0,
       std::string{"the learned co-change pairs cannot be read: "} + e.what()});
  }
  return opts;
}

bool by_line(const taskfile::parse_error& a, const taskfile::parse_error& b) {
  return a.line < b.line;
}

} // namespace

int run_plan_command(const std::vector<std::string>& argv,
                     const global_options& opts) {
  args parsed(argv, {"--format", "--max-concurrency"},
              {"--json", "--sequential-deps"});
  if (parsed.positionals().size() != 1)
    throw usage_error("plan needs exactly one task file (see taskforce plan "
                      "--help)");
  auto cfg = effective_config(opts);
  auto parse_opts = taskfile::options_from(cfg.run);
  if (parsed.has("--format")) {
    parse_opts.format = parsed.value("--format");
    if (parse_opts.format != "checklist" && parse_opts.format != "headings")
      throw usage_error("--format " + parse_opts.format
                        + ": use checklist or headings");
  }
  if (parsed.flag("--sequential-deps"))
    parse_opts.sequential_deps = true;
  auto max_concurrency
    = parsed.positive("--max-concurrency", cfg.run.max_concurrency);
  auto top = find_repository(opts.repo);
  if (top) {
    parse_opts.working_directory = *top;
    parse_opts.repository = *top;
  }
  const auto& file = parsed.positionals()[0];
  std::string text;
  if (file == "-") {
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    text = buffer.str();
  } else {
    auto content = read_file(file);
    if (!content)
      throw usage_error(file + ": cannot read the task file");
    text = std::move(*content);
  }
  auto tasks_read = taskfile::parse(text, file, parse_opts);
  if (tasks_read.ok()) {
    // What `run` would refuse before starting: certain mistakes are
    // errors here too, the others depend on where the file runs.
    run::preflight_context ctx{cfg.run, top.value_or("."), run::current_path()};
    for (auto& f : run::preflight(tasks_read.tasks, ctx))
      (f.certain ? tasks_read.errors : tasks_read.warnings)
        .push_back({f.line, f.message});
    if (!tasks_read.errors.empty())
      tasks_read.tasks.clear();
  }
  auto gopts = learned_pairs(top, cfg, tasks_read.warnings);
  std::stable_sort(tasks_read.errors.begin(), tasks_read.errors.end(), by_line);
  std::stable_sort(tasks_read.warnings.begin(), tasks_read.warnings.end(),
                   by_line);
  auto plan = plan::make_plan(std::move(tasks_read), max_concurrency, gopts);
  for (const auto& e : plan.errors)
    std::cerr << taskfile::format_error(file, e) << '\n';
  for (const auto& w : plan.warnings)
    std::cerr << taskfile::format_error(
      file, taskfile::parse_error{w.line, "warning: " + w.message})
              << '\n';
  if (parsed.flag("--json"))
    std::cout << plan::plan_json(plan) << '\n';
  else
    std::cout << plan::plan_text(plan, terminal_size({100, 24}).cols);
  return plan.errors.empty() ? exit_ok : exit_usage;
}

} // namespace taskforce::cli
