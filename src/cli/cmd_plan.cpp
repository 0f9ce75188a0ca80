// `taskforce plan FILE`: parse a task file and print its schedule. Runs
// nothing and writes nothing (a custom parser command is the only process).
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/plan/report.hpp"
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
    "one.\n";

namespace {

/// The width to fit the table to: the terminal's, else $COLUMNS, else 100.
size_t output_width() {
  winsize size{};
  if (::isatty(STDOUT_FILENO) && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0
      && size.ws_col > 0)
    return size.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    auto value = std::atoi(env);
    if (value > 20)
      return static_cast<size_t>(value);
  }
  return 100;
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
  auto plan
    = plan::make_plan(taskfile::parse(text, file, parse_opts), max_concurrency);
  for (const auto& e : plan.errors)
    std::cerr << taskfile::format_error(file, e) << '\n';
  if (parsed.flag("--json"))
    std::cout << plan::plan_json(plan) << '\n';
  else
    std::cout << plan::plan_text(plan, output_width());
  return plan.errors.empty() ? exit_ok : exit_usage;
}

} // namespace taskforce::cli
