// `taskforce logs TASK`: a task's state, branch, gate output and history,
// as people read it (local times, durations) or as JSON; `--follow` prints
// its output as its attempts write it, until the task is over.
#include <fstream>
#include <iostream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/live_table.hpp"
#include "src/cli/run_driver.hpp"
#include "src/cli/run_view.hpp"
#include "src/cli/steer.hpp"
#include "src/git/git.hpp"
#include "src/store/mailbox.hpp"
#include "src/text/join.hpp"
#include "src/time/calendar.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

const char* logs_help
  = "usage: taskforce logs TASK [--run ID] [--json] [-f | --follow]\n\n"
    "Shows a task of the latest run (or --run ID): its state and reason,\n"
    "when it started and how long it took, its branch and worktree (while\n"
    "they exist), merge commit, conflicting paths, every attempt with its\n"
    "duration, the model it ran on and its log files\n"
    "(.taskforce/logs/<run>/<task>/attempt-N/{worker,verify}.log), the tail\n"
    "of its last gate and worker output, its mail (messages and answers\n"
    "sent down to it, delivered or not yet, and the reports its worker sent\n"
    "up with taskforce report), and every event, oldest first. Times are\n"
    "local.\n\n"
    "-f, --follow  print the task's state changes and the output of its\n"
    "              attempts (worker, gate, verifier) as they are written,\n"
    "              until the task is done, failed for good, waits on a\n"
    "              person, or the run stops; then say which, and exit 0.\n"
    "--json        one object: {\"task\": {...}, \"attempts\": [...],\n"
    "              \"mail\": [...], \"events\": [...]} (times in milliseconds\n"
    "              since the epoch).\n";

namespace {

using json = nlohmann::json;

/// How often `--follow` looks at the ledger and the log files.
constexpr auto follow_poll = std::chrono::milliseconds(200);

/// Lines of the gate's and the worker's output shown at the end.
constexpr size_t tail_lines = 20;

/// A ledger time in the local time zone: `2026-12-02 06:01:02`; with the
/// zone's name when `zone` (`2026-12-02 06:01:02 CET`).
std::string local_time(int64_t ms, bool zone = false) {
  return local_text(ms, zone ? "%Y-%m-%d %H:%M:%S %Z" : "%Y-%m-%d %H:%M:%S");
}

/// The last `n` lines of `text`, ending in a newline; "" for blank text.
std::string last_lines(const std::string& text, size_t n) {
  auto end = text.find_last_not_of("\r\n");
  if (end == std::string::npos)
    return {};
  size_t start = end + 1;
  for (size_t lines = 0; start > 0; --start)
    if (text[start - 1] == '\n' && ++lines == n)
      break;
  return text.substr(start, end + 1 - start) + '\n';
}

/// The last 64 KiB of the file at `path` (enough for `tail_lines` lines);
/// "" when it cannot be read.
std::string end_of_file(const fs::path& path) {
  constexpr std::streamoff most = 64 * 1024;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return {};
  in.seekg(0, std::ios::end);
  auto size = static_cast<std::streamoff>(in.tellg());
  auto from = size > most ? size - most : 0;
  in.seekg(from);
  std::string text(static_cast<size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return text;
}

/// The first line of `text`, cut at 120 characters.
std::string first_line(const std::string& text) {
  auto line = text.substr(0, text.find('\n'));
  return line.size() > 120 ? line.substr(0, 117) + "..." : line;
}

/// An event in words: `ready -> running (attempt 1)`, `verifying ->
/// failed (attempt 1, exit 1): the gate failed`, `recorded branch
/// taskforce/R/t1`; other kinds as their name and data.
std::string describe(const store::event_row& e) {
  auto data = json::parse(e.data_json, nullptr, false);
  if (!data.is_object())
    data = json::object();
  auto text = [&](const char* key) {
    auto i = data.find(key);
    return i != data.end() && i->is_string() ? i->get<std::string>()
                                             : std::string{};
  };
  if (e.kind == "task.state") {
    auto out = text("from") + " -> " + text("to");
    std::vector<std::string> notes;
    if (auto i = data.find("attempt"); i != data.end() && i->is_number())
      notes.push_back("attempt " + std::to_string(i->get<int64_t>()));
    if (auto i = data.find("exit_code"); i != data.end() && i->is_number())
      notes.push_back("exit " + std::to_string(i->get<int64_t>()));
    if (!notes.empty())
      out += " (" + join(notes, ", ") + ")";
    if (auto reason = text("reason"); !reason.empty())
      out += ": " + first_line(reason);
    return out;
  }
  if (e.kind == "task.update" || e.kind == "task.merge_commit") {
    std::vector<std::string> parts;
    if (auto b = text("branch"); !b.empty())
      parts.push_back("branch " + b);
    if (data.contains("worktree"))
      parts.push_back("its worktree");
    if (auto m = text("merge_commit"); !m.empty())
      parts.push_back("merge commit " + m.substr(0, 10));
    if (auto i = data.find("conflict_paths");
        i != data.end() && i->is_array() && !i->empty())
      parts.push_back("conflicting paths " + first_line(i->dump()));
    if (data.contains("session"))
      parts.push_back("the agent session");
    if (data.contains("cleared"))
      parts.push_back("branch and worktree gone");
    if (!parts.empty())
      return "recorded " + join(parts, ", ");
  }
  auto rest = data.empty() ? std::string{} : " " + first_line(data.dump());
  return e.kind + rest;
}

/// `3.2s`, `1m02s`, `2h05m`.
std::string took(int64_t from_ms, int64_t to_ms) {
  return live_table::format_elapsed(to_ms - from_ms);
}

/// The worktree line: its path while the folder is the task's own; a
/// removed one, or a folder another task's worktree now holds, is no
/// path to go to.
std::string worktree_line(const store::task_row& t) {
  auto where = worktree_of(t);
  if (!where)
    return {};
  if (where->here)
    return "worktree: " + *t.worktree + '\n';
  if (!where->reused_for.empty())
    return "worktree: removed (its folder now holds " + where->reused_for
           + ")\n";
  return "worktree: removed\n";
}

/// The branch line, saying when the branch is gone (merged work's
/// branch is removed when its run ends).
std::string branch_line(git::repository& repo, const store::task_row& t) {
  if (!t.branch)
    return {};
  bool exists = false;
  try {
    exists = git::branch_tip(repo, *t.branch).has_value();
  } catch (const std::exception&) {
  }
  return "branch: " + *t.branch + (exists ? "\n" : " (removed)\n");
}

// `  #3 2026-12-01 18:07:22 message down, delivered … to attempt 1:` and
// the text, indented.
void print_mail(const store::mail_row& m) {
  std::cout << "  #" << m.id << ' ' << local_time(m.created_ms) << ' '
            << to_string(m.kind) << ' ' << to_string(m.direction);
  if (m.direction == store::mail_direction::down) {
    if (m.delivered_ms)
      std::cout << ", delivered " << local_time(*m.delivered_ms);
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

/// Prints `title` and the last lines of `text` (when there are any).
void print_tail(const std::string& title, const std::string& text) {
  auto tail = last_lines(text, tail_lines);
  if (!tail.empty())
    std::cout << title << ":\n" << tail;
}

void print_logs(const fs::path& root, const store::task_history& h,
                const std::vector<store::mail_row>& mail,
                const std::map<std::string, bool>& on_base,
                const std::string& base_branch) {
  auto& t = h.task;
  std::cout << "task " << t.id << ": " << t.title
            << "\nstate: " << to_string(t.state);
  if (t.reason)
    std::cout << " - " << *t.reason;
  std::cout << "\nattempts: " << t.attempts << '\n';
  if (t.started_ms) {
    std::cout << "started: " << local_time(*t.started_ms, true);
    if (t.finished_ms)
      std::cout << ", took " << took(*t.started_ms, *t.finished_ms);
    std::cout << '\n';
  }
  git::library lib;
  std::optional<git::repository> repo;
  try {
    repo.emplace(git::open(root));
  } catch (const std::exception&) {
  }
  if (repo)
    std::cout << branch_line(*repo, t);
  std::cout << worktree_line(t);
  if (t.merge_commit) {
    std::cout << "merge commit: " << *t.merge_commit;
    if (auto found = on_base.find(t.id);
        found != on_base.end() && !found->second)
      std::cout << " (no longer on " << base_branch << ")";
    std::cout << '\n';
  }
  if (!t.conflict_paths.empty()) {
    std::cout << "conflicting paths:\n";
    for (auto& p : t.conflict_paths)
      std::cout << "  " << p << '\n';
  }
  auto dir = state_dir(root);
  for (auto& a : h.attempts) {
    std::cout << "attempt " << a.number << ": " << to_string(a.state);
    if (a.exit_code)
      std::cout << " (exit " << *a.exit_code << ")";
    if (a.repairs > 0)
      std::cout << ", " << a.repairs << " repair(s)";
    if (a.model)
      std::cout << ", model " << *a.model;
    std::cout << ", started " << local_time(a.started_ms);
    if (a.ended_ms)
      std::cout << ", took " << took(a.started_ms, *a.ended_ms);
    else
      std::cout << ", running for " << took(a.started_ms, now_ms());
    std::cout << '\n';
    for (auto* name : {&a.worker_log, &a.verify_log}) {
      if (name->empty())
        continue;
      auto path = dir / *name;
      std::error_code ec;
      if (fs::exists(path, ec))
        std::cout << "  " << path.string() << '\n';
    }
    if (!a.worker_log.empty())
      print_verifier(dir / a.worker_log);
  }
  // The gate's output: the last attempt's gate log, else the tail the
  // ledger kept (its log may be gone).
  bool gate_shown = false;
  if (!h.attempts.empty()) {
    auto& last = h.attempts.back();
    if (!last.verify_log.empty()) {
      auto text = end_of_file(dir / last.verify_log);
      if (!last_lines(text, 1).empty()) {
        print_tail("gate output of attempt " + std::to_string(last.number)
                     + " (tail)",
                   text);
        gate_shown = true;
      }
    }
  }
  if (!gate_shown && t.gate_tail)
    print_tail("last gate output (tail)", *t.gate_tail);
  if (!h.attempts.empty()) {
    auto& last = h.attempts.back();
    if (!last.worker_log.empty())
      print_tail("worker output of attempt " + std::to_string(last.number)
                   + " (tail)",
                 end_of_file(dir / last.worker_log));
  }
  if (!mail.empty()) {
    std::cout << "mail:\n";
    for (auto& m : mail)
      print_mail(m);
  }
  std::cout << "history:\n";
  for (auto& e : h.events)
    std::cout << "  " << local_time(e.at_ms) << "  " << describe(e) << '\n';
}

// -- following a task ---------------------------------------------------------

/// `run.maxAttempts` as the run recorded it.
uint64_t max_attempts_of(const store::run_row& run) {
  auto cfg = json::parse(run.config_json, nullptr, false);
  if (cfg.is_object())
    if (auto i = cfg.find("maxAttempts");
        i != cfg.end() && i->is_number_unsigned())
      return i->get<uint64_t>();
  return run_config{}.max_attempts;
}

/// Why following `t` ends now, or "" while something may still move it:
/// it is over, it waits on a person, or nothing drives its run.
std::string end_of_follow(const fs::path& root, const store::run_row& run,
                          const store::task_row& t) {
  auto state = std::string{to_string(t.state)};
  switch (t.state) {
    case task_state::done:
    case task_state::skipped: return t.id + " is " + state;
    case task_state::review:
    case task_state::held:
    case task_state::blocked:
      if (auto step = next_step(t, asks_user_on_blocked(run)); !step.empty())
        return step;
      return t.id + " is " + state;
    case task_state::failed:
      if (static_cast<uint64_t>(t.attempts) >= max_attempts_of(run))
        return t.id + " failed"
               + (t.reason ? ": " + first_line(*t.reason) : "");
      break;
    default: break;
  }
  if (run.state != run_state::running)
    return t.id + " is " + state + ": run " + run.id + " is "
           + to_string(run.state)
           + (run.reason ? " (" + first_line(*run.reason) + ")" : "");
  if (!driver_of(root))
    return t.id + " is " + state + ": no process drives run " + run.id
           + " (taskforce resume goes on)";
  return {};
}

/// Whether `e` puts the task to running: a worker (re)starts.
bool starts_worker(const store::event_row& e) {
  if (e.kind != "task.state")
    return false;
  auto data = json::parse(e.data_json, nullptr, false);
  return data.is_object() && data.value("to", std::string{}) == "running";
}

/// What `--follow` has printed so far.
struct follow_state {
  /// Bytes printed of each log file.
  std::map<fs::path, std::streamoff> printed;
  /// The log file printed last; "" after an event line.
  fs::path current;
  /// The last output did not end a line.
  bool mid_line = false;
  /// The last event printed.
  int64_t last_seq = 0;
};

void end_line(follow_state& f) {
  if (f.mid_line)
    std::cout << '\n';
  f.mid_line = false;
}

/// Prints what `path` gained since the last look, under a `==> PATH <==`
/// header when it is not the file printed last (as `tail -f` does).
void print_new_bytes(follow_state& f, const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return;
  in.seekg(0, std::ios::end);
  auto size = static_cast<std::streamoff>(in.tellg());
  auto& done = f.printed[path];
  if (size < done)
    done = 0; // rewritten from the start
  if (size == done)
    return;
  if (f.current != path) {
    end_line(f);
    std::cout << "==> " << path.string() << " <==\n";
    f.current = path;
  }
  // In pieces: a log of gigabytes is never held in memory at once.
  in.seekg(done);
  std::string piece(64 * 1024, '\0');
  while (done < size) {
    auto want = std::min<std::streamoff>(size - done, piece.size());
    in.read(piece.data(), static_cast<std::streamsize>(want));
    auto got = in.gcount();
    if (got <= 0)
      break;
    std::cout.write(piece.data(), got);
    f.mid_line = piece[static_cast<size_t>(got) - 1] != '\n';
    done += got;
  }
}

int follow(store::ledger& db, const fs::path& root, const std::string& run_id,
           const std::string& task_id) {
  auto dir = state_dir(root);
  follow_state f;
  for (;;) {
    auto run = db.find_run(run_id);
    auto h = db.history(run_id, task_id);
    if (!run || !h)
      throw std::runtime_error("run " + run_id + " or its task " + task_id
                               + " is gone from the ledger");
    // Events up to the latest start of the worker come before the output
    // it wrote; the rest (the gate's verdict, the merge) after it.
    size_t before = 0;
    for (size_t i = 0; i < h->events.size(); ++i)
      if (starts_worker(h->events[i]))
        before = i + 1;
    auto print_events = [&](size_t from, size_t to) {
      for (size_t i = from; i < to; ++i) {
        auto& e = h->events[i];
        if (e.seq <= f.last_seq)
          continue;
        end_line(f);
        std::cout << "-- " << local_time(e.at_ms) << "  " << task_id << ' '
                  << describe(e) << '\n';
        f.last_seq = e.seq;
        f.current.clear();
      }
    };
    print_events(0, before);
    for (auto& a : h->attempts)
      for (auto* name : {&a.worker_log, &a.verify_log}) {
        if (name->empty())
          continue;
        print_new_bytes(f, dir / *name);
        if (name == &a.worker_log)
          print_new_bytes(f, (dir / *name).parent_path() / "verifier.log");
      }
    print_events(before, h->events.size());
    if (auto why = end_of_follow(root, *run, h->task); !why.empty()) {
      end_line(f);
      std::cout << "-- " << why << '\n' << std::flush;
      return exit_ok;
    }
    std::cout << std::flush;
    std::this_thread::sleep_for(follow_poll);
  }
}

} // namespace

int run_logs_command(const std::vector<std::string>& argv,
                     const global_options& opts) {
  args parsed(argv, {"--run"}, {"--json", "-f", "--follow"});
  if (parsed.positionals().size() != 1)
    throw usage_error("logs needs exactly one TASK id");
  bool following = parsed.flag("-f") || parsed.flag("--follow");
  if (following && parsed.flag("--json"))
    throw usage_error("logs: --follow prints text; leave out --json");
  auto task_id = parsed.positionals()[0];
  auto root = repository_of(opts);
  auto db = open_ledger(root, false);
  auto run = pick_run(db, parsed.value("--run"));
  auto h = db.history(run.id, task_id);
  if (!h)
    throw usage_error("run " + run.id + " has no task " + task_id);
  if (following)
    return follow(db, root, run.id, task_id);
  auto mail = store::mailbox{db}.list(run.id, task_id);
  auto on_base = merges_on_base(root, *db.status(run.id));
  if (parsed.flag("--json")) {
    std::cout << to_logs_json(*h, mail, on_base) << '\n';
    return exit_ok;
  }
  print_logs(root, *h, mail, on_base, run.base_branch);
  return exit_ok;
}

} // namespace taskforce::cli
