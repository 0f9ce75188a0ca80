#include "src/cli/live_table.hpp"

#include <chrono>
#include <cstdlib>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "src/run/budget.hpp"

namespace taskforce::cli {

namespace {

bool final_state(const std::string& s) {
  return s == "done" || s == "failed" || s == "skipped" || s == "blocked"
         || s == "conflict" || s == "review";
}

bool has_usage(const token_usage& u) {
  return u.input_tokens > 0 || u.output_tokens > 0 || u.cost_usd > 0;
}

std::string fit(std::string text, size_t width) {
  if (text.size() > width)
    text = text.substr(0, width - 1) + "~";
  text.resize(width, ' ');
  return text;
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

live_table::live_table(std::ostream& out, bool tty, bool color)
  : out_(out), tty_(tty), color_(color && tty) {}

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
    row.ended_ms = final_state(state) ? ev.time_ms : 0;
    row.tokens += ev.spent.input_tokens + ev.spent.output_tokens;
    row.cost_usd += ev.spent.cost_usd;
  }
  if (tty_)
    return;
  // Plain mode: one line per transition, stable and greppable.
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

void live_table::redraw(int64_t now) {
  if (!tty_)
    return;
  std::string text;
  if (drawn_lines_ > 0)
    text += "\x1b[" + std::to_string(drawn_lines_) + "F";
  size_t lines = 0;
  auto line = [&](const std::string& s) {
    text += s;
    text += "\x1b[K\n";
    ++lines;
  };
  line(fit("TASK", 10) + fit("TITLE", 33) + " " + fit("STATE", 12)
       + fit("TRY", 5) + fit("ELAPSED", 9) + fit("COST", 10));
  for (auto& row : rows_) {
    std::string elapsed;
    if (row.started_ms > 0)
      elapsed = format_elapsed((row.ended_ms > 0 ? row.ended_ms : now)
                               - row.started_ms);
    auto state = fit(row.state, 12);
    std::string cost = row.tokens > 0 || row.cost_usd > 0
                         ? run::format_cost(row.cost_usd)
                         : "";
    std::string l = fit(row.id, 10) + fit(row.title, 33) + " "
                    + paint(row.state, state)
                    + fit(row.attempt > 0 ? std::to_string(row.attempt) : "", 5)
                    + fit(elapsed, 9) + fit(cost, 10);
    if (!row.reason.empty() && row.state != "done")
      l += "  " + fit(row.reason, 40);
    line(l);
    auto note = awaiting_note(row.id, row.state, ask_user_on_blocked_);
    if (!note.empty())
      line(std::string(10, ' ') + "-> " + note);
  }
  line(summary());
  drawn_lines_ = lines;
  out_ << text;
  out_.flush();
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
  redraw(now);
}

} // namespace taskforce::cli
