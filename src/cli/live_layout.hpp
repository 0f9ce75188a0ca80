// How the live view of a run fits a terminal, as pure functions of the
// tasks and the terminal's size: a table whose columns shrink so that the
// titles get the room and no row wraps, in which running, failed and waiting
// tasks stay on screen when rows run out (the rest collapse into counts);
// or, when the terminal is narrow or not a full screen, one status line as
// ninja prints it. Also the elapsed time and the ETA the view shows, and
// the run's one summary line. Nothing here writes to a terminal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskforce::cli {

/// The terminal a view draws on, in character cells.
struct screen_size {
  size_t cols = 80;
  size_t rows = 24;
};

/// How the view draws.
enum class view_mode : uint8_t {
  /// One line per transition, never redrawn (not a terminal, or --plain).
  plain,
  /// One status line, rewritten in place (a narrow or short terminal).
  status_line,
  /// One status line per change, never rewritten (a terminal that cannot
  /// move the cursor: TERM=dumb).
  status_lines,
  /// The table, redrawn in place.
  table,
};

/// The narrowest terminal the table is drawn in; narrower gets the status
/// line.
constexpr size_t table_min_cols = 50;

/// The shortest terminal the table is drawn in (a header, a task, the
/// counts, the summary and the cursor's line).
constexpr size_t table_min_rows = 6;

/// The mode for a terminal: `tty` whether the output is one, `smart`
/// whether it moves the cursor (TERM is set and not "dumb"), `plain` the
/// user asked for plain lines.
view_mode choose_mode(bool tty, bool smart, bool plain, screen_size size);

/// One task as the view shows it.
struct view_task {
  std::string id;
  std::string title;
  std::string state = "pending";
  uint64_t attempt = 0;
  /// How long the current attempt has run ("1m05s"), or "".
  std::string elapsed;
  /// What its workers cost so far ("$0.0100"), or "".
  std::string cost;
  /// Why it is in its state, or "".
  std::string reason;
  /// What it waits for from a person, with the command ("awaiting
  /// approval: taskforce approve t1"), or "".
  std::string note;
};

/// One line of a frame. `state_at`/`state_len` mark the bytes of the state
/// cell, which a terminal with colours paints in `state`'s colour.
struct frame_line {
  std::string text;
  size_t state_at = 0;
  size_t state_len = 0;
  std::string state;
};

/// The table for `tasks` (in file order) in a terminal of `size`, ending
/// with `footer`. Every line is at most `size.cols - 1` cells wide (so the
/// terminal never wraps it, nor holds the cursor at the margin) and the
/// frame is at most `size.rows - 1` lines (so it never scrolls while it is
/// redrawn in place). With `all_rows`, every task gets a row whatever the
/// height (the last frame, which is never redrawn).
std::vector<frame_line> layout_table(const std::vector<view_task>& tasks,
                                     const std::string& footer,
                                     screen_size size, bool all_rows = false);

/// Whether a task in `state` stays on screen before the others: it runs, it
/// failed, or it waits for a person; 0 is the most important, 3 the least.
int screen_priority(const std::string& state);

/// Whether `state` is final for the view's counts (done, failed, ...).
bool is_final_state(const std::string& state);

/// The ninja-style status line: `[3/10] running t4 t5 +1; 1 failed;
/// 12.3s, ETA 40s`, cut to `width - 1` cells.
std::string layout_status_line(const std::vector<view_task>& tasks,
                               const std::string& timing, size_t width);

/// `12.3s`, or `12.3s, ETA 40s` when an ETA is known.
std::string timing_text(int64_t elapsed_ms, std::optional<int64_t> eta_ms);

/// One task's timing for the ETA.
struct task_timing {
  /// When its current attempt started (ms); 0 = not yet.
  int64_t started_ms = 0;
  /// When it finished (ms); 0 = still going.
  int64_t ended_ms = 0;
  /// Whether it is over (done, failed, ...) for the estimate.
  bool finished = false;
};

/// The time left, estimated from the tasks that finished: each task that
/// has not finished is taken to need the mean duration of the finished ones
/// (less what a running one has run), spread over `parallel` workers.
/// Nullopt while no task with a duration has finished, when none is left,
/// or when those left already ran past the mean.
std::optional<int64_t> estimate_eta(const std::vector<task_timing>& tasks,
                                    int64_t now_ms, size_t parallel);

/// How many terminal rows lines of these widths take once a terminal of
/// `cols` columns reflowed them (at least one each).
size_t physical_rows(const std::vector<size_t>& widths, size_t cols);

/// `text` broken at spaces into lines of at most `width - 1` cells (so a
/// terminal never wraps them), later lines indented by two; a word longer
/// than a line is cut.
std::vector<std::string> wrap_words(const std::string& text, size_t width);

/// The cells `text` takes on a terminal (UTF-8; wide characters count two,
/// combining marks none).
size_t display_width(const std::string& text);

/// `text` on one line (control characters become spaces), cut to at most
/// `width` cells with `~` marking a cut, then padded with spaces to
/// `width`.
std::string fit_cell(const std::string& text, size_t width);

} // namespace taskforce::cli
