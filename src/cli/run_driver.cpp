#include "src/cli/run_driver.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iostream>

#include <caf/all.hpp>

#include "actors/run_host.hpp"
#include "actors/runtime_config.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/live_table.hpp"
#include "src/cli/run_view.hpp"
#include "src/cli/terminal.hpp"
#include "src/proc/registry.hpp"
#include "src/run/run_setup.hpp"
#include "src/worker/script.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

fs::path state_dir(const fs::path& root) {
  return run::state_dir(root);
}

namespace {

// -- Ctrl-C
// ---------------------------------------------------------------------

std::atomic<int> interrupts{0};

extern "C" void on_interrupt(int) {
  if (interrupts.fetch_add(1) >= 1) {
    // The second Ctrl-C: stop now. The ledger still says running; the next
    // start finds the attempts interrupted and resumes them.
    proc::kill_all_running();
    const char msg[] = "\ntaskforce: stopped at once; run `taskforce resume` "
                       "to continue\n";
    auto n = ::write(2, msg, sizeof msg - 1);
    (void)n;
    ::_exit(1);
  }
}

// -- the terminal's size
// -------------------------------------------------------

/// Set when the terminal changed its size: the live view redraws at once.
std::atomic<bool> resized{false};

extern "C" void on_resize(int) {
  resized = true;
}

struct signal_guard {
  struct sigaction old_int {};
  struct sigaction old_term {};
  struct sigaction old_winch {};
  signal_guard() {
    interrupts = 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    struct sigaction winch {};
    winch.sa_handler = on_resize;
    winch.sa_flags = SA_RESTART;
    sigemptyset(&winch.sa_mask);
    sigaction(SIGWINCH, &winch, &old_winch);
  }
  ~signal_guard() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGWINCH, &old_winch, nullptr);
  }
};

/// Whether the terminal moves the cursor: TERM is set and not "dumb".
bool smart_terminal() {
  auto* term = std::getenv("TERM");
  return term != nullptr && *term != '\0' && std::string{term} != "dumb";
}

/// The run's job log and usage as the ledger has them now (a ledger that
/// cannot be read leaves them out: the run's outcome is what matters). On
/// a terminal the last table already showed every task and the summary
/// line carries the usage: only a budget's note is added (`status` shows
/// the job log), fitted to the terminal's `width` (0 = not a terminal).
void print_job_log(const std::filesystem::path& root, const std::string& run_id,
                   size_t width) {
  bool on_terminal = width > 0;
  try {
    store::ledger_options o;
    o.read_only = true;
    auto db
      = store::ledger::open(run::state_dir(root) / store::ledger_file_name, o);
    auto st = db.status(run_id);
    if (!st)
      return;
    if (!on_terminal)
      std::cout << '\n'
                << format_job_log(st->run, db.job_log(run_id), now_ms())
                << usage_line(db.run_usage(run_id)) << '\n';
    if (auto note = budget_note(st->run, db.run_usage(run_id)); !note.empty())
      for (auto& line :
           on_terminal ? wrap_words(note, width) : std::vector{note})
        std::cout << line << '\n';
  } catch (const std::exception& e) {
    std::cerr << "taskforce: cannot show the job log: " << e.what() << '\n';
  }
}

/// "t1, t2 (run A); t3 (run B)": tasks merged before, by the run that
/// merged them.
std::string merged_list(const std::vector<run::merged_before>& merged) {
  std::vector<std::pair<std::string, std::string>> by_run; // run, ids
  for (auto& m : merged) {
    auto at = std::find_if(by_run.begin(), by_run.end(), [&](auto& r) {
      return r.first == m.run_id;
    });
    if (at == by_run.end())
      at = by_run.insert(by_run.end(), {m.run_id, ""});
    at->second += (at->second.empty() ? "" : ", ") + m.task_id;
  }
  std::string text;
  for (auto& [run, ids] : by_run)
    text += (text.empty() ? "" : "; ") + ids + " (run " + run + ")";
  return text;
}

} // namespace

int drive_run(const drive_options& opts) {
  run::open_options oo{opts.root, opts.file, opts.cfg};
  run::open_result opened;
  try {
    opened = run::open_run(oo);
  } catch (const run::setup_error& e) {
    throw usage_error(e.what());
  }
  if (!opened.merged.empty()) {
    auto file
      = opened.run ? opened.run->file : run::relative_to(opts.root, opts.file);
    std::cout << file << ": already merged, unchanged since: "
              << merged_list(opened.merged)
              << (opened.run ? "; the other tasks run now\n"
                             : "; nothing left to run\n");
  }
  if (!opened.run && !opened.merged.empty())
    return exit_ok;
  if (!opened.run) {
    auto& last = *opened.completed_run;
    std::cout << "nothing to resume: run " << last.id << " (" << last.file
              << ") completed\n";
    return exit_ok;
  }
  auto run_id = opened.run->loaded.run.id;
  auto file_rel = opened.run->file;

  // The actors.
  runtime_config sys_cfg{0, false};
  caf::actor_system sys{sys_cfg};
  caf::scoped_actor self{sys};
  bool tty = !opts.plain && ::isatty(1) == 1;
  auto screen = terminal_size();
  bool smart = smart_terminal();
  live_table table{std::cout, choose_mode(tty, smart, opts.plain, screen),
                   color_wanted()};
  table.set_screen(screen);
  table.set_start(now_ms());
  table.set_parallel(std::max<uint64_t>(1, opts.cfg.run.max_concurrency));
  if (!opts.events_file.empty())
    table.write_events_to(opts.events_file);
  {
    auto& loaded = opened.run->loaded;
    std::vector<table_row> table_rows;
    for (size_t i = 0; i < loaded.graph.size(); ++i) {
      table_row r;
      r.id = loaded.graph.task(i).id;
      r.title = loaded.graph.task(i).title;
      r.state = to_string(loaded.records[i].state);
      r.reason = loaded.records[i].reason;
      if (i < loaded.rows.size()) {
        auto& u = loaded.rows[i].usage;
        r.tokens = static_cast<uint64_t>(
          std::max<int64_t>(0, u.input_tokens + u.output_tokens));
        r.cost_usd = u.cost_usd;
      }
      table_rows.push_back(r);
    }
    table.set_rows(std::move(table_rows));
  }
  table.set_ask_user_on_blocked(opts.cfg.run.ask_user_on_blocked);
  run_host_options ho;
  ho.root = opts.root;
  ho.cfg = opts.cfg;
  ho.watcher = caf::actor_cast<caf::actor>(self);
  ho.self_exe = current_executable();
  run_host host{sys, std::move(*opened.run), std::move(ho)};
  self->monitor(host.orchestrator());

  signal_guard signals;
  if (!tty)
    std::cout << "run " << run_id << " (" << file_rel << ")\n";
  host.start();
  std::string final_state, final_reason;
  bool asked_to_pause = false;
  int64_t drawn_at = 0;
  // Redraws at most five times a second, and at once when the terminal's
  // size changed (it may also change how the view draws).
  auto refresh = [&](bool now) {
    auto t = now_ms();
    if (!now && !resized && t - drawn_at < 200)
      return;
    if (tty && resized.exchange(false)) {
      screen = terminal_size();
      table.set_screen(screen);
      table.set_mode(choose_mode(tty, smart, opts.plain, screen));
    }
    drawn_at = t;
    table.redraw(t);
  };
  while (final_state.empty()) {
    self->receive(
      [&](run_event& ev) {
        table.apply(ev);
        refresh(false);
      },
      [&](finished_atom, run_state state, std::string& reason) {
        final_state = to_string(state);
        final_reason = reason;
      },
      [&](caf::down_msg& msg) {
        // The orchestrator is gone without a word: the run stays as the
        // ledger has it (resume picks it up).
        final_state = "paused";
        final_reason = "the orchestrator stopped: " + sys.render(msg.reason);
      },
      caf::after(std::chrono::milliseconds(200)) >>
        [&] {
          if (interrupts.load() > 0 && !asked_to_pause) {
            asked_to_pause = true;
            if (!tty)
              std::cout << "interrupted: pausing (Ctrl-C again to stop at "
                           "once)\n";
            host.pause("interrupted by Ctrl-C", true);
          }
          refresh(true);
        });
  }
  if (tty && resized.exchange(false)) {
    screen = terminal_size();
    table.set_screen(screen);
  }
  auto ended_ms = now_ms();
  table.finish(ended_ms);
  self->demonitor(host.orchestrator().address());
  host.stop();
  // What this run merged is learned now, so `plan` shows it at once.
  try {
    run::learn_co_changes(opts.root, opts.cfg);
  } catch (const std::exception& e) {
    std::cerr << "taskforce: co-change learning: " << e.what() << '\n';
  }
  print_job_log(opts.root, run_id,
                table.mode() == view_mode::plain ? 0 : screen.cols);
  // Counted from the ledger's point of view: what the orchestrator recorded.
  int code = exit_failed;
  if (final_state == "completed" && final_reason.empty())
    code = exit_ok;
  // One line says how the run ended, with its counts and time (on a
  // terminal broken at spaces where it would wrap).
  auto summary = "run " + run_id + " " + final_state
                 + (final_reason.empty() ? "" : ": " + final_reason) + " ("
                 + table.final_line(ended_ms) + ")";
  if (table.mode() == view_mode::plain) {
    std::cout << summary << '\n';
  } else {
    if (tty && resized.exchange(false))
      screen = terminal_size();
    for (auto& line : wrap_words(summary, screen.cols))
      std::cout << line << '\n';
  }
  if (final_state == "paused")
    std::cout << "resume with: taskforce resume\n";
  return code;
}

} // namespace taskforce::cli
