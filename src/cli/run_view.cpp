#include "src/cli/run_view.hpp"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "src/cli/live_table.hpp"
#include "src/git/git.hpp"
#include "src/run/budget.hpp"
#include "src/time/calendar.hpp"

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

ordered_json task_json(const store::task_row& t,
                       const std::map<std::string, bool>& on_base = {});

ordered_json usage_json(const store::usage& u) {
  ordered_json j;
  j["input_tokens"] = u.input_tokens;
  j["output_tokens"] = u.output_tokens;
  j["cost_usd"] = u.cost_usd;
  return j;
}

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

ordered_json task_json(const store::task_row& t,
                       const std::map<std::string, bool>& on_base) {
  ordered_json j;
  j["id"] = t.id;
  j["state"] = to_string(t.state);
  j["attempts"] = t.attempts;
  j["branch"] = nullable(t.branch);
  j["merge_commit"] = nullable(t.merge_commit);
  if (auto found = on_base.find(t.id); found != on_base.end())
    j["merge_on_base"] = found->second;
  else
    j["merge_on_base"] = nullptr;
  j["reason"] = nullable(shown_reason(t));
  j["usage"] = usage_json(t.usage);
  return j;
}

} // namespace

std::map<std::string, bool> merges_on_base(const std::filesystem::path& root,
                                           const store::run_status& x) {
  std::map<std::string, bool> out;
  try {
    git::library lib;
    auto repo = git::open(root);
    auto tip = git::branch_tip(repo, x.run.base_branch);
    for (auto& t : x.tasks) {
      if (!t.merge_commit)
        continue;
      bool on = false;
      try {
        on = tip && git::is_ancestor(repo, *t.merge_commit, *tip);
      } catch (const std::exception&) {
        on = false; // the commit is gone
      }
      out[t.id] = on;
    }
  } catch (const std::exception&) {
    out.clear();
  }
  return out;
}

std::string to_status_json(const store::run_status& x,
                           const std::map<std::string, bool>& on_base) {
  ordered_json run;
  run["id"] = x.run.id;
  run["file"] = x.run.file;
  run["state"] = to_string(x.run.state);
  run["reason"] = nullable(x.run.reason);
  auto tasks = ordered_json::array();
  store::usage total;
  for (auto& t : x.tasks) {
    tasks.push_back(task_json(t, on_base));
    total.input_tokens += t.usage.input_tokens;
    total.output_tokens += t.usage.output_tokens;
    total.cost_usd += t.usage.cost_usd;
  }
  run["usage"] = usage_json(total);
  ordered_json j;
  j["run"] = std::move(run);
  j["tasks"] = std::move(tasks);
  return dump(j);
}

std::string to_logs_json(const store::task_history& h,
                         const std::vector<store::mail_row>& mail,
                         const std::map<std::string, bool>& on_base) {
  auto& t = h.task;
  auto task = task_json(t, on_base);
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
    j["usage"] = usage_json(a.usage);
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
  return utc_text(ms, "%Y-%m-%d %H:%M:%SZ");
}

std::string to_usage_json(const store::usage& u) {
  return dump(usage_json(u));
}

std::string usage_line(const store::usage& u) {
  return "usage: " + std::to_string(u.input_tokens + u.output_tokens)
         + " tokens (" + std::to_string(u.input_tokens) + " in, "
         + std::to_string(u.output_tokens) + " out), "
         + run::format_cost(u.cost_usd);
}

std::string format_job_log(const store::run_row& the_run,
                           const std::vector<store::job_row>& jobs,
                           int64_t now_ms) {
  auto cell = [](std::string text, size_t width) {
    if (text.size() + 1 > width)
      width = text.size() + 1;
    text.resize(width, ' ');
    return text;
  };
  size_t id_width = 6;
  for (auto& j : jobs)
    id_width = std::max(id_width, j.task_id.size() + 2);
  auto line = [&](const std::string& id, const std::string& start,
                  const std::string& duration, const std::string& attempts,
                  const std::string& repairs, const std::string& exit,
                  const std::string& tokens, const std::string& cost) {
    auto l = cell(id, id_width) + cell(start, 22) + cell(duration, 10)
             + cell(attempts, 10) + cell(repairs, 9) + cell(exit, 6)
             + cell(tokens, 12) + cost;
    while (!l.empty() && l.back() == ' ')
      l.pop_back();
    return l + '\n';
  };
  std::string out = line("TASK", "START", "DURATION", "ATTEMPTS", "REPAIRS",
                         "EXIT", "TOKENS", "COST");
  store::usage total;
  int attempts = 0, repairs = 0;
  for (auto& j : jobs) {
    auto tokens = j.usage.input_tokens + j.usage.output_tokens;
    std::string duration = "-";
    if (j.started_ms)
      duration = live_table::format_elapsed(j.ended_ms.value_or(now_ms)
                                            - *j.started_ms);
    out += line(j.task_id, j.started_ms ? format_time(*j.started_ms) : "-",
                duration, std::to_string(j.attempts), std::to_string(j.repairs),
                j.exit_code ? std::to_string(*j.exit_code) : "-",
                std::to_string(tokens), run::format_cost(j.usage.cost_usd));
    total.input_tokens += j.usage.input_tokens;
    total.output_tokens += j.usage.output_tokens;
    total.cost_usd += j.usage.cost_usd;
    attempts += j.attempts;
    repairs += j.repairs;
  }
  out
    += line("total", "", "", std::to_string(attempts), std::to_string(repairs),
            "", std::to_string(total.input_tokens + total.output_tokens),
            run::format_cost(total.cost_usd));
  bool going = the_run.state == run_state::running;
  out += "wall time "
         + live_table::format_elapsed((going ? now_ms : the_run.updated_ms)
                                      - the_run.created_ms)
         + " (" + format_time(the_run.created_ms) + " to "
         + (going ? std::string{"now"} : format_time(the_run.updated_ms))
         + ")\n";
  return out;
}

std::string budget_note(const store::run_row& the_run,
                        const store::usage& total) {
  if (!the_run.reason || *the_run.reason != run::budget_reason)
    return {};
  // The limits as the run recorded them; a resume may have raised them.
  auto limits = run::budget_of(run_config{}, the_run.config_json);
  run::spend spent;
  spent.input_tokens
    = static_cast<uint64_t>(std::max<int64_t>(0, total.input_tokens));
  spent.output_tokens
    = static_cast<uint64_t>(std::max<int64_t>(0, total.output_tokens));
  spent.cost_usd = total.cost_usd;
  auto what = run::describe_reached(limits, spent);
  return "the run reached its budget" + (what.empty() ? "" : " (" + what + ")")
         + ": raise run.maxCostUsd or run.maxTokens in a config file, then "
           "taskforce resume --config FILE";
}

} // namespace taskforce::cli
