// What a user sees while a run executes: on a terminal, a table of tasks
// redrawn in place that fits the terminal (or, in a narrow or short one, a
// ninja-style status line); otherwise one plain line per transition. Ends
// with one summary line. Optionally every transition as a JSON line
// (`--events FILE`). The layout itself is src/cli/live_layout.hpp.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "messages/run.hpp"
#include "src/cli/live_layout.hpp"

namespace taskforce::cli {

/// One task's row of the live table.
struct table_row {
  std::string id;
  std::string title;
  std::string state = "pending";
  uint64_t attempt = 0;
  /// When the current attempt started (ms since the epoch); 0 = not yet.
  int64_t started_ms = 0;
  /// When the task reached a final state; 0 = still going.
  int64_t ended_ms = 0;
  std::string reason;
  /// Tokens (input plus output) and cost its workers reported.
  uint64_t tokens = 0;
  double cost_usd = 0;
};

/// Renders run events for a human, and as JSON lines for a program.
class live_table {
 public:
  /// Draws in `mode`; `color` uses ANSI colours on a terminal (never with
  /// NO_COLOR).
  live_table(std::ostream& out, view_mode mode, bool color);

  /// The terminal's size now; the next redraw fits it.
  void set_screen(screen_size size) {
    screen_ = size;
  }

  /// When the run started here (ms), for the elapsed time.
  void set_start(int64_t ms) {
    start_ms_ = ms;
  }

  /// How many tasks run at once at most, for the ETA.
  void set_parallel(size_t n) {
    parallel_ = n;
  }

  /// How the view draws.
  view_mode mode() const {
    return mode_;
  }

  /// Draws in `mode` from now on (the terminal changed its size). Between
  /// the status line and the table, the next redraw replaces what was
  /// drawn; plain mode is never entered or left.
  void set_mode(view_mode mode) {
    if (mode != view_mode::plain && mode_ != view_mode::plain)
      mode_ = mode;
  }

  /// Opens `path` for JSON lines; throws std::runtime_error when it can't.
  void write_events_to(const std::string& path);

  /// The tasks of the run, in file order, with their current states.
  void set_rows(std::vector<table_row> rows);

  /// Whether blocked workers are kept for an answer (run.askUserOnBlocked):
  /// a blocked task then shows as awaiting an answer.
  void set_ask_user_on_blocked(bool on) {
    ask_user_on_blocked_ = on;
  }

  /// What a task in `state` waits for from a person, with the command that
  /// gives it ("awaiting approval: taskforce approve t1"), or "".
  static std::string awaiting_note(const std::string& id,
                                   const std::string& state,
                                   bool ask_user_on_blocked);

  /// Applies one transition: updates its row, prints a line (plain mode),
  /// appends a JSON line (events file).
  void apply(const run_event& ev);

  /// Redraws the table or the status line (terminal modes only); `now_ms`
  /// ages elapsed times.
  void redraw(int64_t now_ms);

  /// Replaces what the terminal modes drew by the last frame: on a full
  /// screen every task's row (never redrawn, so the scrollback holds one
  /// copy); else nothing. Plain mode prints nothing either.
  void finish(int64_t now_ms);

  /// The run's one summary line: the counts, usage, elapsed time.
  std::string final_line(int64_t now_ms) const;

  /// The JSON line of an event, as `--events` writes it.
  static std::string event_json(const run_event& ev);

  /// `1m05s`-style duration.
  static std::string format_elapsed(int64_t ms);

  /// The table's last line: tasks counted by state, then the tokens and
  /// cost of the run so far when any were reported.
  std::string summary() const;

 private:
  std::string paint(const std::string& state, const std::string& text) const;

  /// The rows as the layout takes them.
  std::vector<view_task> view(int64_t now_ms) const;

  /// The elapsed time and, once tasks finished, the ETA.
  std::string timing(int64_t now_ms) const;

  /// Moves the cursor to where the last drawing began (the terminal may
  /// have reflowed it since).
  std::string to_drawn_start() const;

  /// Writes `lines` where the last drawing was; `newline` ends the last
  /// line with one (the table) or leaves the cursor on it (a status line).
  void draw(const std::vector<frame_line>& lines, bool newline);

  std::ostream& out_;
  view_mode mode_;
  bool color_;
  std::vector<table_row> rows_;
  std::map<std::string, size_t> index_;
  screen_size screen_;
  int64_t start_ms_ = 0;
  size_t parallel_ = 1;
  /// The widths of the lines drawn last, and whether the cursor is below
  /// them (after a table) or at the end of the last (after a status line).
  std::vector<size_t> drawn_widths_;
  bool cursor_below_ = false;
  /// The status line printed last (status_lines mode), without times.
  std::string printed_status_;
  bool ask_user_on_blocked_ = false;
  std::ofstream events_;
};

/// Whether colour is wanted on a terminal: NO_COLOR unset (or empty).
bool color_wanted();

/// Milliseconds since the epoch.
int64_t now_ms();

} // namespace taskforce::cli
