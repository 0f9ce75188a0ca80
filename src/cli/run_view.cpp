#include "src/cli/run_view.hpp"

#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

namespace taskforce::cli {

namespace {

using ordered_json = nlohmann::ordered_json;

// Text that may hold bytes from a process's output must never make the JSON
// writer throw: invalid UTF-8 is replaced.
std::string dump(const ordered_json& j) {
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

template<class T>
ordered_json nullable(const std::optional<T>& x) {
  return x ? ordered_json(*x) : ordered_json(nullptr);
}

/// How much of a failing output a reason carries.
constexpr size_t reason_tail_lines = 20;
constexpr size_t reason_tail_bytes = 2000;

// The last lines of `text`, without a trailing newline.
std::string last_lines(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  size_t start = text.size();
  for (size_t lines = 0; start > 0 && lines < reason_tail_lines;) {
    --start;
    if (text[start] == '\n' && ++lines == reason_tail_lines) {
      ++start;
      break;
    }
  }
  if (text.size() - start > reason_tail_bytes)
    start = text.size() - reason_tail_bytes;
  return text.substr(start);
}

ordered_json task_json(const store::task_row& t);

ordered_json event_json(const store::event_row& x) {
  ordered_json j;
  j["seq"] = x.seq;
  j["run"] = x.run_id;
  j["task"] = nullable(x.task_id);
  j["at_ms"] = x.at_ms;
  j["kind"] = x.kind;
  auto data = ordered_json::parse(x.data_json, nullptr, false);
  j["data"] = data.is_discarded() ? ordered_json(x.data_json) : data;
  return j;
}

ordered_json mail_json(const store::mail_row& x) {
  ordered_json j;
  j["id"] = x.id;
  j["task"] = nullable(x.task_id);
  j["kind"] = to_string(x.kind);
  j["direction"] = to_string(x.direction);
  j["text"] = x.text;
  j["created_ms"] = x.created_ms;
  j["delivered_ms"] = nullable(x.delivered_ms);
  j["attempt"] = nullable(x.attempt);
  return j;
}

} // namespace

awaiting awaiting_of(const store::task_row& t) {
  switch (t.state) {
    case task_state::review: return awaiting::approval;
    case task_state::blocked: return awaiting::answer;
    case task_state::held: return awaiting::decision;
    default: return awaiting::nothing;
  }
}

bool asks_user_on_blocked(const store::run_row& run) {
  auto cfg = nlohmann::json::parse(run.config_json, nullptr, false);
  if (!cfg.is_object())
    return false;
  auto i = cfg.find("askUserOnBlocked");
  return i != cfg.end() && i->is_boolean() && i->get<bool>();
}

std::optional<std::string> shown_reason(const store::task_row& t) {
  if (t.state == task_state::failed && t.gate_tail) {
    auto tail = last_lines(*t.gate_tail);
    if (!tail.empty())
      return t.reason ? *t.reason + "\n" + tail : tail;
  }
  if (t.state == task_state::review && !t.reason)
    return std::string{"awaiting approval"};
  return t.reason;
}

std::string next_step(const store::task_row& t, bool ask_user_on_blocked) {
  auto& id = t.id;
  switch (awaiting_of(t)) {
    case awaiting::approval:
      return id + " awaits approval: taskforce approve " + id
             + ", or taskforce reject " + id + " REASON";
    case awaiting::answer:
      return id
             + (ask_user_on_blocked ? " awaits an answer: "
                                    : " is blocked; an answer runs it again: ")
             + "taskforce answer " + id + " TEXT";
    case awaiting::decision:
      return id + " is held: taskforce approve " + id
             + " lifts the hold, taskforce reject " + id + " REASON blocks it";
    case awaiting::nothing: break;
  }
  return {};
}

namespace {

ordered_json task_json(const store::task_row& t) {
  ordered_json j;
  j["id"] = t.id;
  j["state"] = to_string(t.state);
  j["attempts"] = t.attempts;
  j["branch"] = nullable(t.branch);
  j["merge_commit"] = nullable(t.merge_commit);
  j["reason"] = nullable(shown_reason(t));
  return j;
}

} // namespace

std::string to_status_json(const store::run_status& x) {
  ordered_json run;
  run["id"] = x.run.id;
  run["file"] = x.run.file;
  run["state"] = to_string(x.run.state);
  run["reason"] = nullable(x.run.reason);
  auto tasks = ordered_json::array();
  for (auto& t : x.tasks)
    tasks.push_back(task_json(t));
  ordered_json j;
  j["run"] = std::move(run);
  j["tasks"] = std::move(tasks);
  return dump(j);
}

std::string to_logs_json(const store::task_history& h,
                         const std::vector<store::mail_row>& mail) {
  auto& t = h.task;
  auto task = task_json(t);
  task["title"] = t.title;
  task["worktree"] = nullable(t.worktree);
  task["conflict_paths"] = t.conflict_paths;
  task["gate_tail"] = nullable(t.gate_tail);
  task["session"] = nullable(t.session);
  task["hold_lifted"] = t.hold_lifted;
  auto attempts = ordered_json::array();
  for (auto& a : h.attempts) {
    ordered_json j;
    j["number"] = a.number;
    j["state"] = to_string(a.state);
    j["started_ms"] = a.started_ms;
    j["ended_ms"] = nullable(a.ended_ms);
    j["exit_code"] = nullable(a.exit_code);
    j["repairs"] = a.repairs;
    j["model"] = nullable(a.model);
    j["worker_log"] = a.worker_log;
    j["verify_log"] = a.verify_log;
    attempts.push_back(std::move(j));
  }
  auto mails = ordered_json::array();
  for (auto& m : mail)
    mails.push_back(mail_json(m));
  auto events = ordered_json::array();
  for (auto& e : h.events)
    events.push_back(event_json(e));
  ordered_json j;
  j["task"] = std::move(task);
  j["attempts"] = std::move(attempts);
  j["mail"] = std::move(mails);
  j["events"] = std::move(events);
  return dump(j);
}

std::string to_json_line(const store::event_row& x) {
  return dump(event_json(x));
}

std::string to_json_line(const store::mail_row& x) {
  return dump(mail_json(x));
}

std::string format_time(int64_t ms) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%SZ", &tm);
  return buf;
}

} // namespace taskforce::cli
