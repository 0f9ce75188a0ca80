// The commands that steer a run: approve, reject, answer, send, broadcast
// and add. Each asks the run's driver first (steer_live); with no driver it
// takes the run lock, loads the run as `resume` would, lets the run's
// scheduler decide, and records the change in the ledger for the next
// resume.
#include <chrono>
#include <iostream>
#include <iterator>
#include <thread>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/control_client.hpp"
#include "src/cli/run_driver.hpp"
#include "src/cli/steer.hpp"
#include "src/run/run_setup.hpp"
#include "src/run/steer_paused.hpp"
#include "src/store/run_lock.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

#define TF_STEER_COMMON                                                        \
  "Works on the repository's latest unfinished run (--run ID for another),\n"  \
  "whether a process drives it or not. With a driver it takes effect at\n"     \
  "once; with none it is recorded and takes effect at the next\n"              \
  "`taskforce resume`. Exit 0 when accepted, 2 when the run or task is\n"      \
  "unknown or the task is in a state the command does not apply to (the\n"     \
  "message names it), 1 when it could not be recorded.\n"

const char* approve_help
  = "usage: taskforce approve TASK [--run ID]\n\n"
    "A task in review (its risk is in run.approvalRisks, or autoMerge is\n"
    "false): its work is committed and merged. A held task: the hold is\n"
    "lifted for good and the task may start.\n\n" TF_STEER_COMMON;

const char* reject_help
  = "usage: taskforce reject TASK REASON... [--run ID]\n\n"
    "A task in review or held becomes blocked with REASON; its worktree and\n"
    "branch are kept (taskforce discard TASK removes "
    "them).\n\n" TF_STEER_COMMON;

const char* answer_help
  = "usage: taskforce answer TASK TEXT... [--run ID]\n"
    "       taskforce answer TASK - [--run ID]   (the text from standard "
    "input)\n\n"
    "A blocked task runs again, in the same worktree, continuing with TEXT:\n"
    "a shell worker reads it on standard input (TASKFORCE_TURN=answer), an\n"
    "agent gets it as its next prompt, in its own session where the preset\n"
    "can continue one.\n\n" TF_STEER_COMMON;

const char* send_help
  = "usage: taskforce send TASK TEXT... [--run ID]\n"
    "       taskforce send TASK - [--run ID]     (the text from standard "
    "input)\n\n"
    "A message down to the task's worker, delivered exactly once: the\n"
    "worker reads it with `taskforce inbox`, or gets it as the text of its\n"
    "next turn. With a driver it applies to a running or verifying task;\n"
    "with none, to any task that will still run (not done, skipped,\n"
    "merging, in review or in conflict), whose worker gets it at\n"
    "resume.\n\n" TF_STEER_COMMON;

const char* broadcast_help
  = "usage: taskforce broadcast TEXT... [--run ID]\n"
    "       taskforce broadcast - [--run ID]   (the text from standard "
    "input)\n\n"
    "`send` to every running worker of the run; with no driver, to every\n"
    "task that will still run.\n\n" TF_STEER_COMMON;

const char* add_help
  = "usage: taskforce add FILE [--run ID]\n\n"
    "The tasks of FILE join an unfinished run (parsed as the run's task\n"
    "file is, with the same config; FILE is parsed again at every resume,\n"
    "so keep it). Their ids must be new: give them `id:` values that the\n"
    "run does not have. A duplicate id, a dependency on a task outside\n"
    "FILE, or any mistake in FILE refuses the whole file (exit 2) and adds\n"
    "nothing.\n\n" TF_STEER_COMMON;

#undef TF_STEER_COMMON

namespace {

/// The most a text may hold.
constexpr size_t text_limit = 64 * 1024;

/// The words from `first` on, joined by spaces; `-` alone: standard input.
std::string text_of(const std::vector<std::string>& words, size_t first,
                    const std::string& command, const std::string& what) {
  std::string text;
  if (words.size() == first + 1 && words[first] == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin),
                std::istreambuf_iterator<char>());
  } else {
    for (size_t k = first; k < words.size(); ++k)
      text += (text.empty() ? "" : " ") + words[k];
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw usage_error(command + " needs " + what
                      + " (or - to read it from standard input)");
  if (text.size() > text_limit)
    throw usage_error(command + ": the text holds at most 64 KiB; this one "
                      + "has " + std::to_string(text.size()) + " bytes");
  return text;
}

/// How long a command waits for a driver that holds the run lock to take
/// it over its control endpoint.
constexpr auto busy_wait = std::chrono::milliseconds(2000);
constexpr auto busy_step = std::chrono::milliseconds(200);

/// No driver answered: decide `request` against the ledger, holding the
/// run lock.
run::steer_verdict steer_offline(const fs::path& root,
                                 const run::steer_request& request,
                                 const global_options& opts) {
  // Refuses a repository without a run before creating anything.
  open_ledger(root, false);
  auto cfg = effective_config(opts);
  auto lock_file = state_dir(root) / store::run_lock_file_name;
  std::optional<store::run_lock> lock;
  for (auto waited = std::chrono::milliseconds(0);;) {
    auto got = store::run_lock::try_acquire(lock_file);
    if (auto* l = std::get_if<store::run_lock>(&got)) {
      lock.emplace(std::move(*l));
      break;
    }
    // A driver holds the lock: it may just be starting its endpoint.
    if (waited >= busy_wait) {
      auto holder = std::get<store::run_lock_holder>(got);
      return {run::steer_outcome::failed,
              store::describe(holder)
                + " and did not take the command (the driver is busy); "
                  "nothing was changed, try again",
              false};
    }
    std::this_thread::sleep_for(busy_step);
    waited += busy_step;
    if (auto v = steer_live(root, request))
      return *v;
  }
  auto db = open_ledger(root, true);
  auto run = pick_run(db, request.run_id);
  if (is_finished(run.state))
    return {run::steer_outcome::refused,
            "run " + run.id + " is " + to_string(run.state)
              + "; only an unfinished run can be steered",
            false};
  lock->set_run(run.id);
  // The run exactly as a driver resuming it loads it.
  auto loaded = run::load_run(root, db, run.id, cfg);
  run::scheduler sched{std::move(loaded.graph), std::move(loaded.records),
                       loaded.rule_set};
  std::vector<task_spec> added;
  std::string added_file;
  if (request.verb == run::steer_verb::add) {
    added_file = run::relative_to(root, request.file);
    if (added_file == run.file)
      return {run::steer_outcome::refused,
              added_file + " is the task file of run " + run.id
                + "; nothing was added",
              false};
    for (auto& f : loaded.added_files)
      if (f == added_file)
        return {run::steer_outcome::refused,
                added_file + " was added to run " + run.id
                  + " already; nothing was added",
                false};
    added = run::parse_task_file(root, added_file, cfg);
    run::refuse_preflight(root, added_file, added, cfg);
  }
  return run::steer_paused(sched, db, run.id, request, std::move(added),
                           added_file);
}

int steer(const run::steer_request& request, const global_options& opts) {
  auto root = fs::path{repository_of(opts)};
  auto verdict = steer_live(root, request);
  if (!verdict) {
    try {
      verdict = steer_offline(root, request, opts);
    } catch (const run::setup_error& e) {
      // A task file that no longer parses, or an added file with a mistake.
      throw usage_error(e.what());
    }
  }
  switch (verdict->outcome) {
    case run::steer_outcome::accepted:
      std::cout << verdict->message << '\n';
      return exit_ok;
    case run::steer_outcome::refused: throw usage_error(verdict->message);
    case run::steer_outcome::failed: break;
  }
  std::cerr << "taskforce: " << verdict->message << '\n';
  return exit_failed;
}

/// The request of a command about one task: TASK, then (when `what` is
/// set) a text.
run::steer_request task_request(run::steer_verb verb, const std::string& name,
                                const std::vector<std::string>& argv,
                                const char* what) {
  args parsed(argv, {"--run"}, {});
  auto& words = parsed.positionals();
  run::steer_request r;
  r.verb = verb;
  r.run_id = parsed.value("--run");
  if (what == nullptr) {
    if (words.size() != 1)
      throw usage_error(name + " needs exactly one TASK id");
  } else if (words.empty()) {
    throw usage_error(name + " needs a TASK id and " + what);
  } else {
    r.text = text_of(words, 1, name, what);
  }
  r.task = words[0];
  return r;
}

} // namespace

int run_approve_command(const std::vector<std::string>& argv,
                        const global_options& opts) {
  return steer(task_request(run::steer_verb::approve, "approve", argv, nullptr),
               opts);
}

int run_reject_command(const std::vector<std::string>& argv,
                       const global_options& opts) {
  return steer(
    task_request(run::steer_verb::reject, "reject", argv, "a REASON"), opts);
}

int run_answer_command(const std::vector<std::string>& argv,
                       const global_options& opts) {
  return steer(task_request(run::steer_verb::answer, "answer", argv, "a TEXT"),
               opts);
}

int run_send_command(const std::vector<std::string>& argv,
                     const global_options& opts) {
  return steer(task_request(run::steer_verb::send, "send", argv, "a TEXT"),
               opts);
}

int run_broadcast_command(const std::vector<std::string>& argv,
                          const global_options& opts) {
  args parsed(argv, {"--run"}, {});
  run::steer_request r;
  r.verb = run::steer_verb::broadcast;
  r.run_id = parsed.value("--run");
  r.text = text_of(parsed.positionals(), 0, "broadcast", "a TEXT");
  return steer(r, opts);
}

int run_add_command(const std::vector<std::string>& argv,
                    const global_options& opts) {
  args parsed(argv, {"--run"}, {});
  if (parsed.positionals().size() != 1)
    throw usage_error("add needs exactly one FILE");
  run::steer_request r;
  r.verb = run::steer_verb::add;
  r.run_id = parsed.value("--run");
  r.file = fs::absolute(parsed.positionals()[0]).lexically_normal().string();
  std::error_code ec;
  if (!fs::is_regular_file(r.file, ec))
    throw usage_error(parsed.positionals()[0] + ": no such task file");
  return steer(r, opts);
}

} // namespace taskforce::cli
