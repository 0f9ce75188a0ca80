// What a user sees while a run executes: on a terminal, a table of tasks
// redrawn in place with a summary line; otherwise one plain line per
// transition. Optionally every transition as a JSON line (`--events FILE`).
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "messages/run.hpp"

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
  /// `tty` redraws in place; `color` uses ANSI colours (never with NO_COLOR).
  live_table(std::ostream& out, bool tty, bool color);

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

  /// Redraws the table (terminal mode only); `now_ms` ages elapsed times.
  void redraw(int64_t now_ms);

  /// Final redraw; leaves the cursor below the table.
  void finish(int64_t now_ms);

  /// The JSON line of an event, as `--events` writes it.
  static std::string event_json(const run_event& ev);

  /// `1m05s`-style duration.
  static std::string format_elapsed(int64_t ms);

  /// The table's last line: tasks counted by state, then the tokens and
  /// cost of the run so far when any were reported.
  std::string summary() const;

 private:
  std::string paint(const std::string& state, const std::string& text) const;

  std::ostream& out_;
  bool tty_;
  bool color_;
  std::vector<table_row> rows_;
  std::map<std::string, size_t> index_;
  size_t drawn_lines_ = 0;
  bool ask_user_on_blocked_ = false;
  std::ofstream events_;
};

/// Whether colour is wanted on a terminal: NO_COLOR unset (or empty).
bool color_wanted();

/// Milliseconds since the epoch.
int64_t now_ms();

} // namespace taskforce::cli
