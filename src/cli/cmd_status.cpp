// `taskforce status` and `taskforce list`: where the runs stand.
#include <unistd.h>

#include <iostream>

#include "src/cli/args.hpp"
#include "src/cli/clean.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/live_table.hpp"
#include "src/cli/run_view.hpp"
#include "src/cli/steer.hpp"
#include "src/run/budget.hpp"
#include "src/store/mailbox.hpp"

namespace taskforce::cli {

const char* status_help
  = "usage: taskforce status [--json] [--run ID]\n\n"
    "Shows the latest unfinished run (else the latest run, or --run ID): its\n"
    "state and reason, and each task's state, attempts, branch, merge commit\n"
    "(\"merged ID (no longer on BASE)\" when the base branch lost it since)\n"
    "and reason: the question of a blocked worker, the hold line of a held\n"
    "task, why a task in review awaits approval, the last lines of the\n"
    "output that failed a task. Below the table, the tasks waiting on you\n"
    "and the command each one needs. Then the tokens and cost workers\n"
    "reported, and the job log: per task its start, duration, attempts,\n"
    "repairs, last exit code, tokens and cost, and the run's wall time.\n"
    "Then what runs that are over left behind (worktrees, branches,\n"
    "folders), counted, when there is any (taskforce clean lists them).\n"
    "Works while another process drives the run. --json prints one object:\n"
    "  {\"run\": {\"id\", \"file\", \"state\", \"reason\", \"usage\"},\n"
    "   \"tasks\": [{\"id\", \"state\", \"attempts\", \"branch\", "
    "\"merge_commit\",\n"
    "              \"merge_on_base\", \"reason\", \"usage\"}]}\n"
    "each usage {\"input_tokens\", \"output_tokens\", \"cost_usd\"};\n"
    "merge_on_base is false for a merge the base branch no longer has (null\n"
    "without a merge commit). With no run yet it says so (--json:\n"
    "{\"run\": null, \"tasks\": []}) and exits 0.\n";

const char* list_help
  = "usage: taskforce list [--json]\n\n"
    "One line per run of the repository, newest first: id, file, state,\n"
    "its tasks counted by state, the merges its base branch no longer has,\n"
    "and the tokens and cost its workers reported. --json prints an array\n"
    "of status --json objects. With no runs yet it prints \"no runs yet\"\n"
    "(--json: []) and exits 0.\n";

namespace {

// The table's colours (only on a terminal, never with NO_COLOR).
const char* color_of(task_state s) {
  switch (s) {
    case task_state::done: return "32";
    case task_state::failed:
    case task_state::conflict:
    case task_state::blocked: return "31";
    case task_state::running:
    case task_state::verifying:
    case task_state::merging: return "36";
    case task_state::review:
    case task_state::held:
    case task_state::interrupted: return "33";
    default: return nullptr;
  }
}

// A reason on one line: its first line and, when it goes on (a failed
// task's output), its last one, which usually says what went wrong.
std::string one_line(const std::string& reason) {
  auto first = reason.find('\n');
  auto line = reason.substr(0, first);
  if (first == std::string::npos)
    return line;
  auto last = reason.substr(reason.rfind('\n') + 1);
  if (last.size() > 80)
    last = last.substr(0, 77) + "...";
  return line + " ... " + last;
}

// The table's note on a task: what it waits for, then why, on one line.
std::string note_of(const store::task_row& t, bool ask_user_on_blocked,
                    int unread) {
  auto first_line = one_line(shown_reason(t).value_or(""));
  std::string note;
  switch (awaiting_of(t)) {
    case awaiting::approval:
      note = "awaiting approval";
      if (t.reason)
        note += ": " + first_line;
      break;
    case awaiting::answer:
      note
        = ask_user_on_blocked ? "awaiting answer: " + first_line : first_line;
      break;
    default: note = first_line;
  }
  if (unread > 0) {
    if (!note.empty())
      note += "  ";
    note += "(" + std::to_string(unread)
            + (unread == 1 ? " message" : " messages") + " not read yet)";
  }
  return note;
}

} // namespace

int run_status_command(const std::vector<std::string>& argv,
                       const global_options& opts) {
  args parsed(argv, {"--run"}, {"--json"});
  if (!parsed.positionals().empty())
    throw usage_error("status takes no arguments");
  auto root = repository_of(opts);
  auto db = open_ledger_if_any(root);
  if (!parsed.has("--run") && (!db || !db->latest_run())) {
    // No run yet is an answer, not an error.
    if (parsed.flag("--json"))
      std::cout << R"({"run":null,"tasks":[]})" << '\n';
    else
      std::cout << "no run yet in " << root
                << " (start one with taskforce run FILE)\n";
    return exit_ok;
  }
  if (!db)
    throw usage_error("no run " + parsed.value("--run"));
  auto run = pick_run(*db, parsed.value("--run"));
  auto st = db->status(run.id);
  // A merge the base lost since (reset away) is flagged, never shown as if
  // it were still there.
  auto on_base = merges_on_base(root, *st);
  if (parsed.flag("--json")) {
    std::cout << to_status_json(*st, on_base) << '\n';
    return exit_ok;
  }
  auto unread = store::mailbox{*db}.undelivered_counts(run.id);
  bool ask = asks_user_on_blocked(st->run);
  std::cout << "run " << run.id << " (" << st->run.file;
  for (auto& f : st->added_files)
    std::cout << " + " << f;
  std::cout << "): " << to_string(st->run.state);
  if (st->run.reason)
    std::cout << " - " << *st->run.reason;
  std::cout << '\n';
  if (auto who = driver_of(root))
    std::cout << *who << '\n';
  bool color = ::isatty(1) == 1 && color_wanted();
  std::vector<std::string> steps;
  for (auto& t : st->tasks) {
    std::string line = t.id;
    line.resize(std::max<size_t>(line.size() + 1, 10), ' ');
    std::string s = to_string(t.state);
    s.resize(13, ' ');
    if (auto* c = color_of(t.state); color && c)
      s = std::string{"\x1b["} + c + "m" + s + "\x1b[0m";
    line += s;
    line += "try " + std::to_string(t.attempts) + "  ";
    if (t.merge_commit) {
      line += "merged " + t.merge_commit->substr(0, 10);
      if (auto found = on_base.find(t.id);
          found != on_base.end() && !found->second)
        line += " (no longer on " + st->run.base_branch + ")";
      line += "  ";
    } else if (t.branch)
      line += *t.branch + "  ";
    auto i = unread.find(t.id);
    auto note = note_of(t, ask, i == unread.end() ? 0 : i->second);
    if (!note.empty())
      line += note + "  ";
    std::cout << line << t.title << '\n';
    if (auto step = next_step(t, ask); !step.empty())
      steps.push_back(step);
  }
  store::usage total;
  for (auto& t : st->tasks) {
    total.input_tokens += t.usage.input_tokens;
    total.output_tokens += t.usage.output_tokens;
    total.cost_usd += t.usage.cost_usd;
  }
  std::cout << usage_line(total) << "\n\n"
            << format_job_log(st->run, db->job_log(run.id), now_ms());
  try {
    if (auto line = leftovers_line(leftovers_of(root)); !line.empty())
      std::cout << line << '\n';
  } catch (const std::exception& e) {
    std::cerr << "taskforce: cannot look for leftovers: " << e.what() << '\n';
  }
  if (auto note = budget_note(st->run, total); !note.empty())
    steps.insert(steps.begin(), note);
  if (!steps.empty()) {
    std::cout << "waiting on you:\n";
    for (auto& step : steps)
      std::cout << "  " << step << '\n';
  }
  return exit_ok;
}

int run_list_command(const std::vector<std::string>& argv,
                     const global_options& opts) {
  args parsed(argv, {}, {"--json"});
  if (!parsed.positionals().empty())
    throw usage_error("list takes no arguments");
  auto root = repository_of(opts);
  // A repository that never ran anything has no runs to list: an empty
  // list, not an error.
  auto db = open_ledger_if_any(root);
  auto runs = db ? db->list_runs() : std::vector<store::run_summary>{};
  if (parsed.flag("--json")) {
    std::cout << '[';
    bool first = true;
    for (auto& r : runs) {
      auto st = db->status(r.run.id);
      if (!first)
        std::cout << ',';
      first = false;
      std::cout << to_status_json(*st, merges_on_base(root, *st));
    }
    std::cout << "]\n";
    return exit_ok;
  }
  if (runs.empty())
    std::cout << "no runs yet\n";
  for (auto& r : runs) {
    std::cout << r.run.id << "  " << r.run.file << "  "
              << to_string(r.run.state) << "  " << r.total << " tasks:";
    for (auto& [state, n] : r.counts)
      std::cout << ' ' << n << ' ' << to_string(state);
    if (r.run.reason)
      std::cout << "  (" << *r.run.reason << ')';
    size_t lost = 0;
    if (r.counts.count(task_state::done) > 0)
      if (auto st = db->status(r.run.id))
        for (auto& [task, on] : merges_on_base(root, *st))
          lost += on ? 0 : 1;
    if (lost > 0)
      std::cout << "  (" << lost << (lost == 1 ? " merge" : " merges")
                << " no longer on " << r.run.base_branch << ')';
    if (auto& u = r.usage;
        u.input_tokens > 0 || u.output_tokens > 0 || u.cost_usd > 0)
      std::cout << "  " << u.input_tokens + u.output_tokens << " tokens, "
                << run::format_cost(u.cost_usd);
    std::cout << '\n';
  }
  return exit_ok;
}

} // namespace taskforce::cli
