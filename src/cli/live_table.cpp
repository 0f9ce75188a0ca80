#include "src/cli/live_table.hpp"

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "src/run/budget.hpp"

namespace taskforce::cli {

namespace {

bool has_usage(const token_usage& u) {
  return u.input_tokens > 0 || u.output_tokens > 0 || u.cost_usd > 0;
}

} // namespace

bool color_wanted() {
  auto* v = std::getenv("NO_COLOR");
  return v == nullptr || *v == '\0';
}

int64_t now_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch())
    .count();
}

live_table::live_table(std::ostream& out, view_mode mode, bool color)
  : out_(out), mode_(mode), color_(color && mode != view_mode::plain) {}

void live_table::write_events_to(const std::string& path) {
  events_.open(path, std::ios::out | std::ios::trunc);
  if (!events_)
    throw std::runtime_error("--events " + path + ": cannot open for writing");
}

void live_table::set_rows(std::vector<table_row> rows) {
  rows_ = std::move(rows);
  index_.clear();
  for (size_t i = 0; i < rows_.size(); ++i)
    index_[rows_[i].id] = i;
}

std::string live_table::event_json(const run_event& ev) {
  nlohmann::json j{{"time_ms", ev.time_ms}, {"run", ev.run_id}};
  if (ev.task_id.empty()) {
    j["task"] = nullptr;
  } else {
    j["task"] = ev.task_id;
    j["attempt"] = ev.attempt;
  }
  j["state"] = state_name(ev);
  j["reason"]
    = ev.reason.empty() ? nlohmann::json() : nlohmann::json(ev.reason);
  if (has_usage(ev.spent))
    j["usage"] = {{"input_tokens", ev.spent.input_tokens},
                  {"output_tokens", ev.spent.output_tokens},
                  {"cost_usd", ev.spent.cost_usd}};
  return j.dump();
}

std::string live_table::format_elapsed(int64_t ms) {
  if (ms < 0)
    ms = 0;
  auto s = ms / 1000;
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%lld.%llds", static_cast<long long>(s),
                  static_cast<long long>((ms % 1000) / 100));
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds",
                  static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm",
                  static_cast<long long>(s / 3600),
                  static_cast<long long>((s % 3600) / 60));
  return buf;
}

std::string live_table::paint(const std::string& state,
                              const std::string& text) const {
  if (!color_)
    return text;
  const char* code = "";
  if (state == "done")
    code = "32";
  else if (state == "running" || state == "verifying" || state == "merging"
           || state == "repairing")
    code = "36";
  else if (state == "failed" || state == "conflict" || state == "blocked")
    code = "31";
  else if (state == "skipped" || state == "interrupted" || state == "held"
           || state == "review")
    code = "33";
  else
    return text;
  return std::string{"\x1b["} + code + "m" + text + "\x1b[0m";
}

std::string live_table::awaiting_note(const std::string& id,
                                      const std::string& state,
                                      bool ask_user_on_blocked) {
  if (state == "review")
    return "awaiting approval: taskforce approve " + id;
  if (state == "blocked")
    return (ask_user_on_blocked ? "awaiting answer: taskforce answer "
                                : "blocked; an answer runs it again: "
                                  "taskforce answer ")
           + id + " TEXT";
  if (state == "held")
    return "held: taskforce approve " + id + " lifts the hold";
  return {};
}

void live_table::apply(const run_event& ev) {
  if (events_.is_open()) {
    events_ << event_json(ev) << '\n';
    events_.flush();
  }
  std::string state = state_name(ev);
  if (!ev.task_id.empty()) {
    auto i = index_.find(ev.task_id);
    if (i == index_.end()) {
      table_row row;
      row.id = ev.task_id;
      row.title = ev.title;
      rows_.push_back(row);
      i = index_.emplace(ev.task_id, rows_.size() - 1).first;
    }
    auto& row = rows_[i->second];
    if (state == "running" && row.state != "running"
        && row.state != "verifying")
      row.started_ms = ev.time_ms;
    row.state = state;
    row.attempt = ev.attempt > 0 ? ev.attempt : row.attempt;
    row.reason = ev.reason;
    row.ended_ms = is_final_state(state) ? ev.time_ms : 0;
    row.tokens += ev.spent.input_tokens + ev.spent.output_tokens;
    row.cost_usd += ev.spent.cost_usd;
  }
  if (mode_ != view_mode::plain)
    return;
  // Plain mode: one line per transition, stable and greppable. How the run
  // ended is the driver's last line, said once.
  if (ev.task_id.empty() && ev.run != run_state::running)
    return;
  if (ev.task_id.empty()) {
    out_ << "run " << ev.run_id << ": " << state;
  } else {
    out_ << ev.task_id << ": " << state;
    if (ev.attempt > 0)
      out_ << " (attempt " << ev.attempt << ")";
  }
  if (!ev.reason.empty())
    out_ << " - " << ev.reason;
  if (has_usage(ev.spent))
    out_ << " (+" << ev.spent.input_tokens + ev.spent.output_tokens
         << " tokens, " << run::format_cost(ev.spent.cost_usd) << ')';
  if (!ev.task_id.empty()) {
    auto note = awaiting_note(ev.task_id, state, ask_user_on_blocked_);
    if (!note.empty())
      out_ << " [" << note << ']';
  }
  out_ << '\n';
  out_.flush();
}

std::vector<view_task> live_table::view(int64_t now) const {
  std::vector<view_task> out;
  out.reserve(rows_.size());
  for (auto& row : rows_) {
    view_task t;
    t.id = row.id;
    t.title = row.title;
    t.state = row.state;
    t.attempt = row.attempt;
    if (row.started_ms > 0)
      t.elapsed = format_elapsed((row.ended_ms > 0 ? row.ended_ms : now)
                                 - row.started_ms);
    if (row.tokens > 0 || row.cost_usd > 0)
      t.cost = run::format_cost(row.cost_usd);
    t.reason = row.reason;
    t.note = awaiting_note(row.id, row.state, ask_user_on_blocked_);
    out.push_back(std::move(t));
  }
  return out;
}

std::string live_table::timing(int64_t now) const {
  std::vector<task_timing> times;
  times.reserve(rows_.size());
  for (auto& row : rows_)
    times.push_back({row.started_ms, row.ended_ms, is_final_state(row.state)});
  return timing_text(now - start_ms_, estimate_eta(times, now, parallel_));
}

std::string live_table::to_drawn_start() const {
  if (drawn_widths_.empty())
    return {};
  // Counted in the terminal's rows now: a terminal that narrowed since
  // reflowed the longer lines onto more rows.
  auto up = physical_rows(drawn_widths_, screen_.cols);
  if (!cursor_below_)
    --up;
  std::string text = "\r";
  if (up > 0)
    text += "\x1b[" + std::to_string(up) + "F";
  return text;
}

void live_table::draw(const std::vector<frame_line>& lines, bool newline) {
  // Each line overwrites one drawn before and clears the rest of its row;
  // what is left below is cleared after the new lines. Never a clear from
  // the screen's first cell: tmux would scroll the whole screen into the
  // scrollback, a stale copy.
  std::string text = to_drawn_start();
  auto old_rows = physical_rows(drawn_widths_, screen_.cols);
  drawn_widths_.clear();
  for (size_t i = 0; i < lines.size(); ++i) {
    auto& l = lines[i];
    if (l.state_len > 0)
      text += l.text.substr(0, l.state_at)
              + paint(l.state, l.text.substr(l.state_at, l.state_len))
              + l.text.substr(l.state_at + l.state_len);
    else
      text += l.text;
    text += "\x1b[K";
    if (newline || i + 1 < lines.size())
      text += '\n';
    drawn_widths_.push_back(display_width(l.text));
  }
  if (!lines.empty())
    text += "\x1b[J";
  else if (old_rows > 0)
    text += old_rows > 1 ? "\x1b[K\x1b[E\x1b[J\x1b[F" : "\x1b[K";
  cursor_below_ = newline;
  out_ << text;
  out_.flush();
}

void live_table::redraw(int64_t now) {
  switch (mode_) {
    case view_mode::plain: return;
    case view_mode::table:
      draw(layout_table(view(now), summary() + "; " + timing(now), screen_),
           true);
      return;
    case view_mode::status_line:
      draw(
        {frame_line{
          layout_status_line(view(now), timing(now), screen_.cols), 0, 0, {}}},
        false);
      return;
    case view_mode::status_lines: {
      // No cursor to move: a new line when a task changed, never for the
      // clock alone.
      auto tasks = view(now);
      auto what = layout_status_line(tasks, "", screen_.cols);
      if (what == printed_status_)
        return;
      printed_status_ = what;
      out_ << layout_status_line(tasks, timing(now), screen_.cols) << '\n';
      out_.flush();
      return;
    }
  }
}

std::string live_table::summary() const {
  std::map<std::string, size_t> counts;
  uint64_t tokens = 0;
  double cost = 0;
  for (auto& row : rows_) {
    ++counts[row.state];
    tokens += row.tokens;
    cost += row.cost_usd;
  }
  std::string text;
  for (auto& [state, n] : counts) {
    if (!text.empty())
      text += ", ";
    text += std::to_string(n) + " " + state;
  }
  text = std::to_string(rows_.size()) + " tasks: " + text;
  if (tokens > 0 || cost > 0)
    text
      += "; " + std::to_string(tokens) + " tokens, " + run::format_cost(cost);
  return text;
}

void live_table::finish(int64_t now) {
  switch (mode_) {
    case view_mode::plain:
    case view_mode::status_lines: return;
    case view_mode::status_line:
      // Ninja's way: the status line goes; the summary line says it all.
      draw({}, true);
      drawn_widths_.clear();
      return;
    case view_mode::table: {
      // Every task's row, once: nothing redraws it, so it can be longer
      // than the screen. The summary line follows it.
      auto lines = layout_table(view(now), "", screen_, true);
      lines.pop_back();
      draw(lines, true);
      drawn_widths_.clear();
      return;
    }
  }
}

std::string live_table::final_line(int64_t now) const {
  return summary() + "; " + format_elapsed(now - start_ms_);
}

} // namespace taskforce::cli
