// The live view on a real terminal: `taskforce run` inside tmux in 80x24 and
// 60x15 (and resized while it runs), with more tasks than rows. The screen
// tmux holds is read back: no row wraps, the running tasks are on screen,
// and once the run ended the scrollback holds the table once (no partial
// copies of earlier frames). Skips, saying so, where tmux is not installed.
#define CAF_SUITE e2e.live_view
#include <caf/test/unit_test.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "scenarios/scenario.hpp"
#include "src/cli/live_layout.hpp"

using namespace taskforce;
using namespace taskforce::test;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    while (!l.empty() && l.back() == ' ')
      l.pop_back();
    out.push_back(l);
  }
  return out;
}

/// Where tmux is, or "" when it is not installed.
std::string tmux_path() {
  auto* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string d; std::getline(dirs, d, ':');) {
    auto p = std::filesystem::path(d) / "tmux";
    if (::access(p.c_str(), X_OK) == 0)
      return p.string();
  }
  return {};
}

/// A tmux server of its own (its socket in the test's folder) with one
/// window of the given size running `taskforce run` on the scenario.
struct terminal {
  std::string tmux;
  std::string socket;
  scenario& s;

  terminal(std::string tmux_bin, scenario& sc, size_t cols, size_t rows)
    : tmux(std::move(tmux_bin)), socket((sc.dir.path() / "tmux.sock").string()),
      s(sc) {
    sc.set_config(sc.config_text);
    // The pane stays after the run, so its screen can be read.
    auto cmd = std::string{"cd '"} + s.root.string() + "' && '"
               + TASKFORCE_BINARY + "' --repo . --config '" + s.config.string()
               + "' run TASKS.md; echo TF-EXIT=$?; exec sleep 600";
    auto r = call({"-f", "/dev/null", "new-session", "-d", "-s", "live", "-x",
                   std::to_string(cols), "-y", std::to_string(rows), "sh", "-c",
                   cmd});
    CAF_REQUIRE_EQUAL(r.exit_code, 0);
  }

  ~terminal() {
    call({"kill-server"});
  }

  /// What one tmux command printed, and its exit code. Not through
  /// proc::run: it kills what a command leaves behind, and the tmux server
  /// is meant to stay.
  struct called {
    int exit_code = -1;
    std::string tail;
  };

  called call(std::vector<std::string> args) {
    std::vector<std::string> argv{tmux, "-S", socket};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv)
      cargv.push_back(a.data());
    cargv.push_back(nullptr);
    int fds[2];
    CAF_REQUIRE_EQUAL(::pipe(fds), 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    pid_t pid = -1;
    auto rc
      = ::posix_spawn(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    called out;
    if (rc == 0) {
      char buf[4096];
      for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        out.tail.append(buf, static_cast<size_t>(n));
      int status = 0;
      ::waitpid(pid, &status, 0);
      out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    ::close(fds[0]);
    return out;
  }

  /// The visible screen, one row per line, wrapped rows joined (so a row
  /// that wrapped shows as one longer line).
  std::string screen() {
    return call({"capture-pane", "-p", "-J", "-t", "live"}).tail;
  }

  /// Everything the pane printed: its scrollback and its screen.
  std::string history() {
    return call({"capture-pane", "-p", "-J", "-S", "-", "-t", "live"}).tail;
  }

  void resize(size_t cols, size_t rows) {
    auto r = call({"resize-window", "-t", "live", "-x", std::to_string(cols),
                   "-y", std::to_string(rows)});
    CAF_REQUIRE_EQUAL(r.exit_code, 0);
  }
};

/// `n` tasks, each writing its own file; those in `waiting` wait for
/// `flag` to exist first.
std::string task_list(size_t n, const std::vector<size_t>& waiting,
                      const std::string& flag) {
  std::string text = "# Tasks\n\n";
  for (size_t i = 1; i <= n; ++i) {
    auto file = "out/f" + std::to_string(i) + ".txt";
    bool waits = std::find(waiting.begin(), waiting.end(), i) != waiting.end();
    text
      += "- [ ] " + std::string{waits ? "Wait for the flag and then " : ""}
         + "write file number " + std::to_string(i)
         + " with a title long enough to need cutting in sixty columns\n"
         + "  - files: " + file + "\n  - run: "
         + (waits ? "while [ ! -f '" + flag + "' ]; do sleep 0.1; done; " : "")
         + "mkdir -p out && echo " + std::to_string(i) + " > " + file + "\n";
  }
  return text;
}

/// Whether a row of the screen wrapped: a joined line as wide as the
/// terminal or wider.
std::string wrapped_row(const std::string& text, size_t cols) {
  for (auto& l : lines_of(text))
    if (cli::display_width(l) >= cols)
      return l;
  return {};
}

bool row_shows(const std::string& text, const std::string& id,
               const std::string& state) {
  for (auto& l : lines_of(text))
    if (l.compare(0, id.size() + 1, id + " ") == 0 && contains(l, state))
      return true;
  return false;
}

size_t rows_starting(const std::string& text, const std::string& start) {
  size_t n = 0;
  for (auto& l : lines_of(text))
    n += l.compare(0, start.size(), start) == 0 ? 1 : 0;
  return n;
}

bool all_done_but(const scenario& s, const std::vector<std::string>& ids) {
  std::vector<store::task_row> rows;
  try {
    rows = s.task_rows();
  } catch (const std::exception&) {
    return false; // No ledger yet, or busy.
  }
  if (rows.empty())
    return false;
  for (auto& t : rows) {
    bool waiting = std::find(ids.begin(), ids.end(), t.id) != ids.end();
    if (waiting ? t.state != task_state::running : t.state != task_state::done)
      return false;
  }
  return true;
}

/// Runs 30 tasks in a `cols` x `rows` terminal, two of which (t24, t27,
/// far down the list) wait for a flag; `while_running` looks at the
/// terminal meanwhile. Then checks what stayed: the run's end, once.
template<class F>
void run_in_terminal(size_t cols, size_t rows, F while_running,
                     bool check_scrollback = true) {
  auto tmux = tmux_path();
  if (tmux.empty()) {
    std::cerr << "SKIPPED: tmux is not installed; the live view's terminal "
                 "test did not run\n";
    CAF_MESSAGE("skipped: tmux is not installed");
    return;
  }
  scenario s;
  s.config_text = R"({"run": {"maxConcurrency": 3}})";
  auto flag = (s.dir.path() / "go.flag").string();
  s.tasks(task_list(30, {24, 27}, flag));
  terminal term{tmux, s, cols, rows};
  if (!eventually([&] {
        return all_done_but(s, {"t24", "t27"});
      })) {
    std::string states;
    try {
      for (auto& t : s.task_rows())
        states += t.id + "=" + to_string(t.state) + " ";
    } catch (const std::exception& e) {
      states = e.what();
    }
    CAF_FAIL("the tasks never got there: " << states << "\nthe screen:\n"
                                           << term.screen());
  }
  while_running(term);
  std::ofstream(flag) << "go\n";
  std::string seen;
  CAF_REQUIRE(eventually([&] {
    seen = term.history();
    return contains(seen, "TF-EXIT=");
  }));
  CAF_MESSAGE("the terminal at the end:\n" << seen);
  CAF_CHECK(contains(seen, "TF-EXIT=0"));
  if (!check_scrollback) {
    // A terminal that shrank reflowed rows into its scrollback itself: only
    // the screen is the view's.
    seen = term.screen();
    CAF_CHECK(contains(seen, "t30 "));
    CAF_CHECK(contains(seen, " completed (30 tasks: 30 done;"));
    return;
  }
  CAF_CHECK_EQUAL(wrapped_row(seen, cols), "");
  // One table, every task once in it, one summary line.
  CAF_CHECK_EQUAL(rows_starting(seen, "TASK "), 1u);
  for (int i = 1; i <= 30; ++i)
    CAF_CHECK_EQUAL(rows_starting(seen, "t" + std::to_string(i) + " "), 1u);
  CAF_CHECK(!contains(seen, " more: "));
  CAF_CHECK_EQUAL(rows_starting(seen, "30 tasks:"), 0u);
  CAF_CHECK_EQUAL(rows_starting(seen, "run "), 1u);
  CAF_CHECK(contains(seen, " completed (30 tasks: 30 done;"));
}

/// Waits until the screen shows both waiting tasks running; the screen.
std::string screen_with_running(terminal& term) {
  std::string seen;
  bool shown = eventually([&] {
    seen = term.screen();
    return row_shows(seen, "t24", "running")
           && row_shows(seen, "t27", "running");
  });
  CAF_CHECK(shown);
  if (!shown)
    CAF_MESSAGE("the screen:\n" << seen);
  return seen;
}

} // namespace

CAF_TEST(in 80x24 the table fits and keeps the running tasks on screen) {
  run_in_terminal(80, 24, [](terminal& term) {
    auto seen = screen_with_running(term);
    CAF_CHECK_EQUAL(wrapped_row(seen, 80), "");
    // 23 rows: the header, the two running tasks, 18 of the others, a
    // line counting the rest and the summary (once the view caught up with
    // the ledger's last merges).
    CAF_CHECK(eventually([&] {
      seen = term.screen();
      return contains(seen, "+10 more: 10 done")
             && row_shows(seen, "t24", "running");
    }));
  });
}

CAF_TEST(in 60x15 the table fits and keeps the running tasks on screen) {
  run_in_terminal(60, 15, [](terminal& term) {
    auto seen = screen_with_running(term);
    CAF_CHECK_EQUAL(wrapped_row(seen, 60), "");
    CAF_CHECK_EQUAL(rows_starting(seen, "TASK "), 1u);
  });
}

CAF_TEST(a terminal that changes its size gets the view that fits it) {
  run_in_terminal(
    40, 15,
    [](terminal& term) {
      // Narrower than the table: one ninja-style status line.
      std::string seen;
      CAF_CHECK(eventually([&] {
        seen = term.screen();
        return contains(seen, "[28/30] running t24 t27");
      }));
      CAF_CHECK_EQUAL(wrapped_row(seen, 40), "");
      CAF_CHECK_EQUAL(rows_starting(seen, "TASK "), 0u);
      // Wider: the table, in place of the status line.
      term.resize(70, 20);
      seen = screen_with_running(term);
      CAF_CHECK_EQUAL(rows_starting(seen, "[28/30]"), 0u);
      CAF_CHECK_EQUAL(rows_starting(seen, "TASK "), 1u);
      CAF_CHECK_EQUAL(wrapped_row(seen, 70), "");
      // Narrow again: the table goes from the screen.
      term.resize(45, 12);
      CAF_CHECK(eventually([&] {
        seen = term.screen();
        return contains(seen, "[28/30] running t24 t27")
               && rows_starting(seen, "TASK ") == 0;
      }));
      CAF_CHECK_EQUAL(wrapped_row(seen, 45), "");
      // And a table again for the end.
      term.resize(60, 15);
      seen = screen_with_running(term);
    },
    false);
}
