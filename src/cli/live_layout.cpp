#include "src/cli/live_layout.hpp"

#include <algorithm>
#include <map>
#include <sstream>

#include "src/cli/live_table.hpp"
#include "src/text/join.hpp"

namespace taskforce::cli {

namespace {

// -- text cells ---------------------------------------------------------------

/// Decodes the code point at `i` (advancing `i`); a byte that is not valid
/// UTF-8 counts as one cell of its own.
uint32_t next_code_point(const std::string& s, size_t& i) {
  auto b = static_cast<unsigned char>(s[i]);
  size_t len = b < 0x80         ? 1
               : (b >> 5) == 6  ? 2
               : (b >> 4) == 14 ? 3
               : (b >> 3) == 30 ? 4
                                : 0;
  if (len == 0 || i + len > s.size()) {
    ++i;
    return 0xFFFD;
  }
  uint32_t cp = len == 1 ? b : b & (0x7F >> len);
  for (size_t k = 1; k < len; ++k) {
    auto c = static_cast<unsigned char>(s[i + k]);
    if ((c >> 6) != 2) {
      ++i;
      return 0xFFFD;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  i += len;
  return cp;
}

/// The cells a code point takes: combining marks none, East Asian wide
/// characters and emoji two.
size_t cells_of(uint32_t cp) {
  if ((cp >= 0x300 && cp <= 0x36F) || cp == 0x200B || cp == 0x200D
      || (cp >= 0xFE00 && cp <= 0xFE0F))
    return 0;
  if ((cp >= 0x1100 && cp <= 0x115F) || (cp >= 0x2E80 && cp <= 0xA4CF)
      || (cp >= 0xAC00 && cp <= 0xD7A3) || (cp >= 0xF900 && cp <= 0xFAFF)
      || (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0xFF00 && cp <= 0xFF60)
      || (cp >= 0xFFE0 && cp <= 0xFFE6) || (cp >= 0x1F300 && cp <= 0x1FAFF)
      || (cp >= 0x20000 && cp <= 0x3FFFD))
    return 2;
  return 1;
}

/// `text` on one line: control characters (a reason's newlines, a tab)
/// become spaces, so no cell moves the cursor.
std::string one_line(const std::string& text) {
  std::string out = text;
  for (auto& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F)
      c = ' ';
  return out;
}

/// `text` without trailing spaces.
std::string trimmed(std::string text) {
  while (!text.empty() && text.back() == ' ')
    text.pop_back();
  return text;
}

// -- states -------------------------------------------------------------------

bool is_active(const std::string& s) {
  return s == "running" || s == "verifying" || s == "merging"
         || s == "repairing";
}

/// The order counts are listed in: what needs attention first.
const std::vector<std::string>& count_order() {
  static const std::vector<std::string> order{
    "running", "verifying", "merging", "repairing", "review",
    "blocked", "held",      "failed",  "conflict",  "interrupted",
    "ready",   "pending",   "done",    "skipped",
  };
  return order;
}

/// "3 done, 2 pending": tasks counted by state.
std::string counts_text(const std::vector<const view_task*>& tasks) {
  std::map<std::string, size_t> counts;
  for (auto* t : tasks)
    ++counts[t->state];
  std::vector<std::string> parts;
  for (auto& s : count_order()) {
    auto i = counts.find(s);
    if (i != counts.end()) {
      parts.push_back(std::to_string(i->second) + " " + s);
      counts.erase(i);
    }
  }
  for (auto& [s, n] : counts)
    parts.push_back(std::to_string(n) + " " + s);
  return join(parts, ", ");
}

// -- the table's columns ------------------------------------------------------

/// The widths of the table's columns (each with its trailing gap); 0 =
/// left out.
struct columns {
  size_t id = 0;
  size_t title = 0;
  size_t state = 0;
  size_t attempt = 0;
  size_t elapsed = 0;
  size_t cost = 0;
  size_t reason = 0;
};

columns fit_columns(const std::vector<view_task>& tasks, size_t usable) {
  size_t id = 4, title = 5, state = 5, reason = 0;
  bool any_cost = false;
  for (auto& t : tasks) {
    id = std::max(id, display_width(t.id));
    title = std::max(title, display_width(one_line(t.title)));
    state = std::max(state, t.state.size());
    if (!t.cost.empty())
      any_cost = true;
    if (!t.reason.empty() && t.state != "done")
      reason = std::max(reason, display_width(one_line(t.reason)));
  }
  columns c;
  c.id = std::min<size_t>(id, 16) + 1;
  c.state = state + 1;
  c.attempt = 4;
  c.elapsed = 8;
  c.cost = any_cost ? 8 : 0;
  // The title gets the room; when it would get too little, the columns that
  // matter least go first.
  auto fixed = [&] {
    return c.id + c.state + c.attempt + c.elapsed + c.cost;
  };
  constexpr size_t min_title = 12;
  for (auto* drop : {&c.cost, &c.attempt, &c.elapsed})
    if (fixed() + min_title > usable)
      *drop = 0;
  if (fixed() >= usable) {
    // Narrower than any table: the id and the state, cut.
    c.id = std::min(c.id, usable / 2);
    c.state = usable - c.id;
    return c;
  }
  auto room = usable - fixed();
  c.title = std::min(room, title + 2);
  // What the titles leave goes to the reasons, when it is enough to read;
  // else the table stays as narrow as its cells.
  room -= c.title;
  if (reason > 0 && room >= 12)
    c.reason = room;
  return c;
}

/// A cell of width `w` (with its gap), or nothing for a column left out.
std::string cell(const std::string& text, size_t w) {
  return w == 0 ? std::string{} : fit_cell(text, w - 1) + ' ';
}

frame_line header_line(const columns& c) {
  std::string text = cell("TASK", c.id) + cell("TITLE", c.title)
                     + cell("STATE", c.state) + cell("TRY", c.attempt)
                     + cell("ELAPSED", c.elapsed) + cell("COST", c.cost)
                     + cell("REASON", c.reason);
  return {trimmed(text), 0, 0, {}};
}

frame_line task_line(const view_task& t, const columns& c) {
  frame_line line;
  line.text = cell(t.id, c.id) + cell(t.title, c.title);
  line.state_at = line.text.size();
  auto state = cell(t.state, c.state);
  line.state_len = std::min(t.state.size(), trimmed(state).size());
  line.state = t.state;
  line.text += state;
  line.text += cell(t.attempt > 0 ? std::to_string(t.attempt) : "", c.attempt)
               + cell(t.elapsed, c.elapsed) + cell(t.cost, c.cost)
               + cell(t.state == "done" ? "" : t.reason, c.reason);
  line.text = trimmed(line.text);
  if (line.state_at + line.state_len > line.text.size())
    line.state_len = 0;
  return line;
}

frame_line note_line(const view_task& t, const columns& c, size_t usable) {
  auto indent = std::min(c.id, usable);
  return {trimmed(std::string(indent, ' ')
                  + fit_cell("-> " + t.note, usable - indent)),
          0,
          0,
          {}};
}

} // namespace

// -- modes --------------------------------------------------------------------

view_mode choose_mode(bool tty, bool smart, bool plain, screen_size size) {
  if (plain || !tty)
    return view_mode::plain;
  if (!smart)
    return view_mode::status_lines;
  if (size.cols < table_min_cols || size.rows < table_min_rows)
    return view_mode::status_line;
  return view_mode::table;
}

int screen_priority(const std::string& state) {
  if (state == "review" || state == "blocked" || state == "held")
    return 0;
  if (is_active(state))
    return 1;
  if (state == "failed" || state == "conflict" || state == "interrupted")
    return 2;
  return 3;
}

bool is_final_state(const std::string& s) {
  return s == "done" || s == "failed" || s == "skipped" || s == "blocked"
         || s == "conflict" || s == "review";
}

// -- the table ----------------------------------------------------------------

std::vector<frame_line> layout_table(const std::vector<view_task>& tasks,
                                     const std::string& footer,
                                     screen_size size, bool all_rows) {
  auto usable = size.cols > 1 ? size.cols - 1 : size_t{1};
  auto max_lines = size.rows > 1 ? size.rows - 1 : size_t{1};
  std::vector<frame_line> out;
  frame_line last{trimmed(fit_cell(footer, usable)), 0, 0, {}};
  if (!all_rows && max_lines < 2) {
    out.push_back(last);
    return out;
  }
  auto c = fit_columns(tasks, usable);
  out.push_back(header_line(c));
  // Which tasks get a row, and which of their notes a line of its own.
  size_t budget = all_rows ? tasks.size() * 2 + 1 : max_lines - 2;
  std::vector<bool> shown(tasks.size(), false), noted(tasks.size(), false);
  if (tasks.size() <= budget) {
    std::fill(shown.begin(), shown.end(), true);
    budget -= tasks.size();
  } else {
    // Rows run out: the most important tasks keep theirs (in file order
    // within a rank), one line counts the rest.
    budget = budget > 0 ? budget - 1 : 0;
    std::vector<size_t> order(tasks.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return screen_priority(tasks[a].state) < screen_priority(tasks[b].state);
    });
    for (size_t k = 0; k < order.size() && budget > 0; ++k, --budget)
      shown[order[k]] = true;
  }
  for (size_t i = 0; i < tasks.size() && budget > 0; ++i)
    if (shown[i] && !tasks[i].note.empty()) {
      noted[i] = true;
      --budget;
    }
  std::vector<const view_task*> hidden;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!shown[i]) {
      hidden.push_back(&tasks[i]);
      continue;
    }
    out.push_back(task_line(tasks[i], c));
    if (noted[i])
      out.push_back(note_line(tasks[i], c, usable));
  }
  if (!hidden.empty())
    out.push_back({trimmed(fit_cell("+" + std::to_string(hidden.size())
                                      + " more: " + counts_text(hidden),
                                    usable)),
                   0,
                   0,
                   {}});
  out.push_back(last);
  return out;
}

// -- the status line ----------------------------------------------------------

std::string layout_status_line(const std::vector<view_task>& tasks,
                               const std::string& timing, size_t width) {
  auto usable = width > 1 ? width - 1 : size_t{1};
  size_t finished = 0;
  std::vector<std::string> running;
  std::vector<const view_task*> waiting;
  for (auto& t : tasks) {
    if (is_final_state(t.state))
      ++finished;
    if (is_active(t.state))
      running.push_back(t.id);
    else if (screen_priority(t.state) < 3)
      waiting.push_back(&t);
  }
  auto prefix = "[" + std::to_string(finished) + "/"
                + std::to_string(tasks.size()) + "] ";
  std::vector<std::string> tail;
  if (!waiting.empty())
    tail.push_back(counts_text(waiting));
  if (!timing.empty())
    tail.push_back(timing);
  // The running tasks get what the counts and the times leave: their names
  // first (as many as fit, with how many more), then the times go, then
  // only their number is left.
  auto with_timing = join(tail, "; ");
  if (!timing.empty())
    tail.pop_back();
  auto without_timing = join(tail, "; ");
  auto line = [&](const std::string& part, const std::string& rest) {
    return prefix + part + (part.empty() || rest.empty() ? "" : "; ") + rest;
  };
  auto named = [&](size_t k) {
    std::vector<std::string> names(running.begin(), running.begin() + k);
    return "running " + join(names, " ")
           + (k < running.size() ? " +" + std::to_string(running.size() - k)
                                 : "");
  };
  auto counted = running.empty() ? std::string{}
                                 : std::to_string(running.size()) + " running";
  for (auto* rest : {&with_timing, &without_timing})
    for (size_t k = running.size(); k > 0; --k)
      if (auto l = line(named(k), *rest); display_width(l) <= usable)
        return l;
  for (auto* rest : {&with_timing, &without_timing})
    if (auto l = line(counted, *rest); display_width(l) <= usable)
      return l;
  return trimmed(fit_cell(line(counted, without_timing), usable));
}

// -- times --------------------------------------------------------------------

std::string timing_text(int64_t elapsed_ms, std::optional<int64_t> eta_ms) {
  auto text = live_table::format_elapsed(elapsed_ms);
  if (eta_ms)
    text += ", ETA " + live_table::format_elapsed(*eta_ms);
  return text;
}

std::optional<int64_t> estimate_eta(const std::vector<task_timing>& tasks,
                                    int64_t now_ms, size_t parallel) {
  int64_t sum = 0;
  int64_t measured = 0;
  size_t left = 0;
  for (auto& t : tasks) {
    if (t.finished && t.started_ms > 0 && t.ended_ms >= t.started_ms) {
      sum += t.ended_ms - t.started_ms;
      ++measured;
    } else if (!t.finished) {
      ++left;
    }
  }
  if (measured == 0 || left == 0)
    return std::nullopt;
  auto mean = sum / measured;
  int64_t work = 0;
  for (auto& t : tasks) {
    if (t.finished)
      continue;
    auto ran
      = t.started_ms > 0 ? std::max<int64_t>(0, now_ms - t.started_ms) : 0;
    work += std::max<int64_t>(0, mean - ran);
  }
  auto lanes
    = static_cast<int64_t>(std::max<size_t>(1, std::min(parallel, left)));
  // Tasks that ran past the mean leave nothing to estimate by.
  if (work <= 0)
    return std::nullopt;
  return work / lanes;
}

// -- terminal geometry --------------------------------------------------------

size_t physical_rows(const std::vector<size_t>& widths, size_t cols) {
  size_t rows = 0;
  for (auto w : widths)
    rows += cols == 0 || w <= cols ? 1 : (w + cols - 1) / cols;
  return rows;
}

std::vector<std::string> wrap_words(const std::string& text, size_t width) {
  auto usable = width > 3 ? width - 1 : size_t{2};
  std::vector<std::string> out;
  std::string line;
  std::istringstream words(one_line(text));
  for (std::string word; words >> word;) {
    auto room = usable - (out.empty() ? 0 : 2);
    if (!line.empty() && display_width(line) + 1 + display_width(word) > room) {
      out.push_back(std::string(out.empty() ? 0 : 2, ' ') + line);
      line.clear();
      room = usable - 2;
    }
    if (display_width(word) > room)
      word = trimmed(fit_cell(word, room));
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty() || out.empty())
    out.push_back(std::string(out.empty() ? 0 : 2, ' ') + line);
  return out;
}

size_t display_width(const std::string& text) {
  size_t cells = 0;
  for (size_t i = 0; i < text.size();)
    cells += cells_of(next_code_point(text, i));
  return cells;
}

std::string fit_cell(const std::string& text, size_t width) {
  if (width == 0)
    return {};
  auto line = one_line(text);
  auto cells = display_width(line);
  if (cells > width) {
    // Cut at a character boundary, leaving one cell for the mark.
    std::string cut;
    size_t used = 0;
    for (size_t i = 0; i < line.size();) {
      auto start = i;
      auto w = cells_of(next_code_point(line, i));
      if (used + w > width - 1)
        break;
      cut.append(line, start, i - start);
      used += w;
    }
    cut += '~';
    cells = used + 1;
    line = std::move(cut);
  }
  line.append(width - cells, ' ');
  return line;
}

} // namespace taskforce::cli
