// `taskforce logs TASK`: a task's state, branch, gate output and history.
#include <fstream>
#include <iostream>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/run_driver.hpp"
#include "src/cli/run_view.hpp"
#include "src/cli/steer.hpp"
#include "src/store/mailbox.hpp"
#include "src/text/join.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

const char* logs_help
  = "usage: taskforce logs TASK [--run ID] [--json]\n\n"
    "Shows a task of the latest run (or --run ID): its state and reason,\n"
    "branch, worktree, merge commit, conflicting paths, the tail of its last\n"
    "gate output, every attempt with the model it ran on and its log files\n"
    "(.taskforce/logs/<run>/<task>/attempt-N/{worker,verify}.log), its mail\n"
    "(messages and answers sent down to it, delivered or not yet, and the\n"
    "reports its worker sent up with taskforce report), and every event,\n"
    "oldest first. --json prints one object: {\"task\": {...}, \"attempts\":\n"
    "[...], \"mail\": [...], \"events\": [...]}.\n";

namespace {

std::string tail_of_file(const fs::path& p, size_t n) {
  std::ifstream in(p, std::ios::binary);
  if (!in)
    return {};
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  return text.size() <= n ? text : text.substr(text.size() - n);
}

// `  #3 2026-12-01 17:07:22Z message down, delivered … to attempt 1:` and
// the text, indented.
void print_mail(const store::mail_row& m) {
  std::cout << "  #" << m.id << ' ' << format_time(m.created_ms) << ' '
            << to_string(m.kind) << ' ' << to_string(m.direction);
  if (m.direction == store::mail_direction::down) {
    if (m.delivered_ms)
      std::cout << ", delivered " << format_time(*m.delivered_ms);
    else
      std::cout << ", not delivered yet";
    if (m.attempt)
      std::cout << " to attempt " << *m.attempt;
  } else if (m.attempt) {
    std::cout << " from attempt " << *m.attempt;
  }
  std::cout << ":\n";
  size_t start = 0;
  while (start <= m.text.size()) {
    auto end = m.text.find('\n', start);
    if (end == std::string::npos)
      end = m.text.size();
    if (end == m.text.size() && start == end && start > 0)
      break; // a trailing newline
    std::cout << "    " << m.text.substr(start, end - start) << '\n';
    start = end + 1;
  }
}

/// The verifier's log next to `worker_log`, if it ran, and the changes it
/// made in its scratch copy, which were discarded.
void print_verifier(const fs::path& worker_log) {
  auto path = worker_log.parent_path() / "verifier.log";
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return;
  std::cout << "  " << path.string() << '\n';
  std::string line;
  bool listing = false;
  std::vector<std::string> discarded;
  while (std::getline(in, line)) {
    if (line.rfind("taskforce: the verifier is read-only", 0) == 0) {
      listing = true;
      continue;
    }
    if (listing && line.rfind("  ", 0) == 0)
      discarded.push_back(line.substr(2));
    else
      listing = false;
  }
  if (!discarded.empty())
    std::cout << "  verifier changes discarded: " << join(discarded, ", ")
              << '\n';
}

} // namespace

int run_logs_command(const std::vector<std::string>& argv,
                     const global_options& opts) {
  args parsed(argv, {"--run"}, {"--json"});
  if (parsed.positionals().size() != 1)
    throw usage_error("logs needs exactly one TASK id");
  auto task_id = parsed.positionals()[0];
  auto root = repository_of(opts);
  auto db = open_ledger(root, false);
  auto run = pick_run(db, parsed.value("--run"));
  auto h = db.history(run.id, task_id);
  if (!h)
    throw usage_error("run " + run.id + " has no task " + task_id);
  auto mail = store::mailbox{db}.list(run.id, task_id);
  if (parsed.flag("--json")) {
    std::cout << to_logs_json(*h, mail) << '\n';
    return exit_ok;
  }
  auto& t = h->task;
  std::cout << "task " << t.id << ": " << t.title
            << "\nstate: " << to_string(t.state);
  if (t.reason)
    std::cout << " - " << *t.reason;
  std::cout << "\nattempts: " << t.attempts << '\n';
  if (t.branch)
    std::cout << "branch: " << *t.branch << '\n';
  if (t.worktree)
    std::cout << "worktree: " << *t.worktree << '\n';
  if (t.merge_commit)
    std::cout << "merge commit: " << *t.merge_commit << '\n';
  if (!t.conflict_paths.empty()) {
    std::cout << "conflicting paths:\n";
    for (auto& p : t.conflict_paths)
      std::cout << "  " << p << '\n';
  }
  if (t.gate_tail && !t.gate_tail->empty())
    std::cout << "last output (tail):\n"
              << *t.gate_tail << (t.gate_tail->back() == '\n' ? "" : "\n");
  auto dir = state_dir(root);
  for (auto& a : h->attempts) {
    std::cout << "attempt " << a.number << ": " << to_string(a.state);
    if (a.exit_code)
      std::cout << " (exit " << *a.exit_code << ")";
    if (a.repairs > 0)
      std::cout << ", " << a.repairs << " repair(s)";
    if (a.model)
      std::cout << ", model " << *a.model;
    std::cout << '\n';
    for (auto* name : {&a.worker_log, &a.verify_log}) {
      if (name->empty())
        continue;
      auto path = dir / *name;
      std::error_code ec;
      if (fs::exists(path, ec))
        std::cout << "  " << path.string() << '\n';
    }
    print_verifier(dir / a.worker_log);
  }
  if (!h->attempts.empty()) {
    auto& last = h->attempts.back();
    auto wlog = dir / last.worker_log;
    auto text = tail_of_file(wlog, 2000);
    if (!text.empty())
      std::cout << "worker output of attempt " << last.number << " (tail):\n"
                << text << (text.back() == '\n' ? "" : "\n");
  }
  if (!mail.empty()) {
    std::cout << "mail:\n";
    for (auto& m : mail)
      print_mail(m);
  }
  std::cout << "history:\n";
  for (auto& e : h->events)
    std::cout << "  " << to_json_line(e) << '\n';
  return exit_ok;
}

} // namespace taskforce::cli
