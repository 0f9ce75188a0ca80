// `taskforce status` and `taskforce list`: where the runs stand.
#include <unistd.h>

#include <iostream>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/live_table.hpp"
#include "src/cli/steer.hpp"

namespace taskforce::cli {

const char* status_help
  = "usage: taskforce status [--json] [--run ID]\n\n"
    "Shows the latest unfinished run (else the latest run, or --run ID): its\n"
    "state and reason, and each task's state, attempts, branch, merge commit\n"
    "and reason. Works while another process drives the run. --json prints\n"
    "{\"run\": {...}, \"tasks\": [...]} as CLI.md fixes it.\n";

const char* list_help
  = "usage: taskforce list [--json]\n\n"
    "One line per run of the repository, newest first: id, file, state and\n"
    "its tasks counted by state.\n";

int run_status_command(const std::vector<std::string>& argv,
                       const global_options& opts) {
  args parsed(argv, {"--run"}, {"--json"});
  if (!parsed.positionals().empty())
    throw usage_error("status takes no arguments");
  auto root = repository_of(opts);
  auto db = open_ledger(root, false);
  auto run = pick_run(db, parsed.value("--run"));
  auto st = db.status(run.id);
  if (parsed.flag("--json")) {
    std::cout << store::to_status_json(*st) << '\n';
    return exit_ok;
  }
  std::cout << "run " << run.id << " (" << run.file << "): "
            << to_string(run.state);
  if (run.reason)
    std::cout << " - " << *run.reason;
  std::cout << '\n';
  if (auto who = driver_of(root))
    std::cout << *who << '\n';
  bool color = ::isatty(1) == 1 && color_wanted();
  for (auto& t : st->tasks) {
    std::string state = to_string(t.state);
    std::string line = t.id;
    line.resize(std::max<size_t>(line.size() + 1, 10), ' ');
    std::string s = state;
    s.resize(13, ' ');
    if (color) {
      const char* c = state == "done"      ? "32"
                      : state == "failed" || state == "conflict"
                          || state == "blocked"
                        ? "31"
                      : state == "running" || state == "verifying"
                          || state == "merging"
                        ? "36"
                        : "0";
      s = std::string{"\x1b["} + c + "m" + s + "\x1b[0m";
    }
    line += s;
    line += "try " + std::to_string(t.attempts) + "  ";
    if (t.merge_commit)
      line += "merged " + t.merge_commit->substr(0, 10) + "  ";
    else if (t.branch)
      line += *t.branch + "  ";
    if (t.reason)
      line += *t.reason;
    std::cout << line << "  " << t.title << '\n';
  }
  return exit_ok;
}

int run_list_command(const std::vector<std::string>& argv,
                     const global_options& opts) {
  args parsed(argv, {}, {"--json"});
  if (!parsed.positionals().empty())
    throw usage_error("list takes no arguments");
  auto root = repository_of(opts);
  auto db = open_ledger(root, false);
  auto runs = db.list_runs();
  if (parsed.flag("--json")) {
    std::cout << '[';
    bool first = true;
    for (auto& r : runs) {
      auto st = db.status(r.run.id);
      if (!first)
        std::cout << ',';
      first = false;
      std::cout << store::to_status_json(*st);
    }
    std::cout << "]\n";
    return exit_ok;
  }
  if (runs.empty())
    std::cout << "no runs\n";
  for (auto& r : runs) {
    std::cout << r.run.id << "  " << r.run.file << "  "
              << to_string(r.run.state) << "  " << r.total << " tasks:";
    for (auto& [state, n] : r.counts)
      std::cout << ' ' << n << ' ' << to_string(state);
    if (r.run.reason)
      std::cout << "  (" << *r.run.reason << ')';
    std::cout << '\n';
  }
  return exit_ok;
}

} // namespace taskforce::cli
