// `taskforce run FILE`: runs a task file in the repository.
#include <iostream>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/run_driver.hpp"

namespace taskforce::cli {

const char* run_help
  = "usage: taskforce run FILE [--max-concurrency N] [--worker "
    "shell|agent|scripted]\n"
    "                     [--mode integrate|assist] [--events FILE] "
    "[--plain]\n\n"
    "Runs the tasks of FILE: ready tasks that share no file run in parallel,\n"
    "each in its own git worktree on branch taskforce/<run>/<task>; each is\n"
    "gated by its verify: command and merged into the base branch as a merge\n"
    "commit. Progress is kept in .taskforce/ledger.sqlite, so a run that was\n"
    "stopped (Ctrl-C, a crash) continues with `taskforce resume` or by\n"
    "running the same FILE again. Once a run of FILE ended, running it again\n"
    "skips the tasks that run merged and that did not change since.\n"
    "A task whose files a managed background task (`taskforce bg`) holds\n"
    "waits, ready, until that task is done or cancelled (`status` names it).\n"
    "Before anything starts, a shell task without run:, an unknown agent\n"
    "preset and an agent program not on PATH are refused (exit 2, "
    "FILE:LINE).\n\n"
    "  --max-concurrency N   workers at once (run.maxConcurrency, 3)\n"
    "  --worker NAME         shell (the task's run: command), agent, scripted\n"
    "  --mode MODE           integrate (merge each task) or assist (leave the\n"
    "                        changes uncommitted, one task at a time)\n"
    "  --events FILE         every transition as a JSON line\n"
    "  --plain               one line per transition, even on a terminal\n\n"
    "Exit status: 0 every task done and merged (or merged before); 1 the run\n"
    "paused, failed or was aborted (Ctrl-C pauses; a second Ctrl-C stops at\n"
    "once); 2 bad input, a mistake found before the start, a dirty main\n"
    "checkout, or another file's run is unfinished.\n";

const char* resume_help
  = "usage: taskforce resume [--max-concurrency N] [--events FILE] "
    "[--plain]\n\n"
    "Continues the repository's latest unfinished run: interrupted attempts\n"
    "run again in their kept worktrees, failed and blocked tasks get another\n"
    "chance, a conflicting task is merged again (a merge done by hand is\n"
    "noticed). Exits like `run`; with no unfinished run, 0 when the last run\n"
    "completed and 2 when there is none.\n";

namespace {

void apply_overrides(const args& parsed, config& cfg) {
  if (parsed.has("--max-concurrency"))
    cfg.run.max_concurrency = parsed.positive("--max-concurrency", 3);
  if (parsed.has("--worker")) {
    auto w = parsed.value("--worker");
    if (w != "shell" && w != "agent" && w != "scripted")
      throw usage_error("--worker " + w
                        + ": expected shell, agent or scripted");
    cfg.run.worker = w;
  }
  if (parsed.has("--mode")) {
    auto m = parsed.value("--mode");
    if (m != "integrate" && m != "assist")
      throw usage_error("--mode " + m + ": expected integrate or assist");
    cfg.run.mode = m;
  }
  if (cfg.run.mode == "assist") {
    // The seed: assist forces merging, committing and cleanup off.
    cfg.run.auto_merge = false;
    cfg.run.cleanup_worktrees = false;
    cfg.run.use_worktrees = false;
  }
}

} // namespace

int run_run_command(const std::vector<std::string>& argv,
                    const global_options& opts) {
  args parsed(argv, {"--max-concurrency", "--worker", "--mode", "--events"},
              {"--plain"});
  if (parsed.positionals().size() != 1)
    throw usage_error("run needs exactly one task FILE (see taskforce run "
                      "--help)");
  drive_options d;
  d.root = repository_of(opts);
  d.cfg = effective_config(opts);
  apply_overrides(parsed, d.cfg);
  d.file = parsed.positionals()[0];
  d.events_file = parsed.value("--events");
  d.plain = parsed.flag("--plain");
  return drive_run(d);
}

int run_resume_command(const std::vector<std::string>& argv,
                       const global_options& opts) {
  args parsed(argv, {"--max-concurrency", "--events", "--worker", "--mode"},
              {"--plain"});
  if (!parsed.positionals().empty())
    throw usage_error("resume takes no arguments");
  drive_options d;
  d.root = repository_of(opts);
  d.cfg = effective_config(opts);
  apply_overrides(parsed, d.cfg);
  d.events_file = parsed.value("--events");
  d.plain = parsed.flag("--plain");
  return drive_run(d);
}

} // namespace taskforce::cli
