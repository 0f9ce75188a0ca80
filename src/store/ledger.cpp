#include "src/store/ledger.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <random>
#include <utility>

#include <nlohmann/json.hpp>

#include "src/store/leases.hpp"
#include "src/store/run_lock.hpp"
#include "src/store/sqlite.hpp"
#include "src/text/enum_name.hpp"

namespace taskforce::store {

namespace fs = std::filesystem;
using json = nlohmann::json;

// --- free functions ----------------------------------------------------------

int64_t wall_clock_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch())
    .count();
}

std::string new_run_id(int64_t now_ms) {
  std::time_t secs = static_cast<std::time_t>(now_ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  std::random_device rd;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d%02d%02d-%02d%02d%02d-%04x",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec, static_cast<unsigned>(rd() & 0xffffu));
  return buf;
}

std::string content_hash(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "fnv1a64:%016llx",
                static_cast<unsigned long long>(h));
  return buf;
}

std::string attempt_log_dir(const std::string& run_id,
                            const std::string& task_id, int number) {
  return "logs/" + run_id + "/" + task_id + "/attempt-"
         + std::to_string(number);
}

const char* to_string(attempt_state x) {
  switch (x) {
    case attempt_state::running: return "running";
    case attempt_state::passed: return "passed";
    case attempt_state::failed: return "failed";
    case attempt_state::blocked: return "blocked";
    case attempt_state::interrupted: return "interrupted";
  }
  return "unknown";
}

bool from_string(std::string_view name, attempt_state& out) {
  return from_name(name,
                   {attempt_state::running, attempt_state::passed,
                    attempt_state::failed, attempt_state::blocked,
                    attempt_state::interrupted},
                   out);
}

// --- the columns of each row -------------------------------------------------

template<class F>
void columns(run_row& r, F&& f) {
  f("id", r.id);
  f("file", r.file);
  f("file_hash", r.file_hash);
  f("base_branch", r.base_branch);
  f("state", r.state);
  f("reason", r.reason);
  f("created_ms", r.created_ms);
  f("updated_ms", r.updated_ms);
  f("max_concurrency", r.max_concurrency);
  f("config_json", r.config_json);
}

// Tasks are read from `tasks t` joined with their attempts' usage `u`.
template<class F>
void columns(task_row& t, F&& f) {
  f("t.run_id", t.run_id);
  f("t.task_id", t.id);
  f("t.idx", t.index);
  f("t.title", t.title);
  f("t.state", t.state);
  f("t.attempts", t.attempts);
  f("t.branch", t.branch);
  f("t.worktree", t.worktree);
  f("t.merge_commit", t.merge_commit);
  f("t.reason", t.reason);
  f("t.conflict_paths", t.conflict_paths);
  f("t.gate_tail", t.gate_tail);
  f("t.started_ms", t.started_ms);
  f("t.finished_ms", t.finished_ms);
  f("coalesce(u.i, 0)", t.usage.input_tokens);
  f("coalesce(u.o, 0)", t.usage.output_tokens);
  f("coalesce(u.c, 0)", t.usage.cost_usd);
  f("t.hold_lifted", t.hold_lifted);
  f("t.session", t.session);
  f("t.content_hash", t.content_hash);
}

template<class F>
void columns(attempt_row& a, F&& f) {
  f("run_id", a.run_id);
  f("task_id", a.task_id);
  f("number", a.number);
  f("state", a.state);
  f("started_ms", a.started_ms);
  f("ended_ms", a.ended_ms);
  f("exit_code", a.exit_code);
  f("interrupted", a.interrupted);
  f("repairs", a.repairs);
  f("worker_log", a.worker_log);
  f("verify_log", a.verify_log);
  f("input_tokens", a.usage.input_tokens);
  f("output_tokens", a.usage.output_tokens);
  f("cost_usd", a.usage.cost_usd);
  f("model", a.model);
}

template<class F>
void columns(event_row& e, F&& f) {
  f("seq", e.seq);
  f("run_id", e.run_id);
  f("task_id", e.task_id);
  f("at_ms", e.at_ms);
  f("kind", e.kind);
  f("data", e.data_json);
}

namespace {

// Every query that reads whole rows, built once from the column lists.
struct queries {
  std::string run_by_id;
  std::string latest_run;
  std::string latest_unfinished_run;
  std::string latest_run_of_file;
  std::string all_runs;
  std::string task_by_id;
  std::string tasks_of_run;
  std::string attempts_of_task;
  std::string events_after;
  std::string events_of_task;
};

const queries& sql() {
  static const queries q = [] {
    queries q;
    auto runs = "SELECT " + sqlite::select_list<run_row>() + " FROM runs ";
    q.run_by_id = runs + "WHERE id = ?1";
    q.latest_run = runs + "ORDER BY created_ms DESC, rowid DESC LIMIT 1";
    q.latest_unfinished_run = runs
                              + "WHERE state IN ('running', 'paused') "
                                "AND (?1 IS NULL OR file = ?1) "
                                "ORDER BY created_ms DESC, rowid DESC LIMIT 1";
    q.latest_run_of_file = runs
                           + "WHERE file = ?1 "
                             "ORDER BY created_ms DESC, rowid DESC LIMIT 1";
    q.all_runs = runs + "ORDER BY created_ms DESC, rowid DESC";
    // ?1 is the run (?2 the task); the usage of each task's attempts is
    // summed, over the one task's attempts only when one is asked for.
    auto tasks = [](bool one) {
      return "SELECT " + sqlite::select_list<task_row>()
             + " FROM tasks t LEFT JOIN (SELECT task_id, "
               "sum(input_tokens) AS i, sum(output_tokens) AS o, "
               "sum(cost_usd) AS c FROM attempts WHERE run_id = ?1"
             + (one ? " AND task_id = ?2" : "")
             + " GROUP BY task_id) u ON u.task_id = t.task_id "
               "WHERE t.run_id = ?1"
             + (one ? " AND t.task_id = ?2" : "");
    };
    q.task_by_id = tasks(true);
    q.tasks_of_run = tasks(false) + " ORDER BY t.idx, t.task_id";
    q.attempts_of_task = "SELECT " + sqlite::select_list<attempt_row>()
                         + " FROM attempts WHERE run_id = ?1 AND "
                           "task_id = ?2 ORDER BY number";
    auto events = "SELECT " + sqlite::select_list<event_row>()
                  + " FROM events WHERE run_id = ?1 ";
    q.events_after = events + "AND seq > ?2 ORDER BY seq LIMIT ?3";
    q.events_of_task = events + "AND task_id = ?2 ORDER BY seq";
    return q;
  }();
  return q;
}

// The rows `query` returns once `bind` bound its parameters.
template<class Row, class Bind>
std::vector<Row> select(sqlite::connection& c, const std::string& query,
                        Bind&& bind) {
  auto st = c.use(query);
  bind(st);
  std::vector<Row> result;
  while (st.step())
    result.push_back(sqlite::read_row<Row>(st));
  return result;
}

// The first row `query` returns, or nullopt.
template<class Row, class Bind>
std::optional<Row> select_one(sqlite::connection& c, const std::string& query,
                              Bind&& bind) {
  auto st = c.use(query);
  bind(st);
  if (!st.step())
    return std::nullopt;
  return sqlite::read_row<Row>(st);
}

// Text that may hold bytes from a process's output must never make the JSON
// writer throw: invalid UTF-8 is replaced.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json parse_object(const std::string& text, const char* what) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw ledger_error(ledger_errc::bad_json,
                       std::string{what} + " is not a JSON object: " + text);
  return j;
}

json nullable(const std::optional<std::string>& x) {
  return x ? json(*x) : json(nullptr);
}

constexpr size_t gate_tail_limit = 64 * 1024;

std::string keep_tail(const std::string& text) {
  if (text.size() <= gate_tail_limit)
    return text;
  return text.substr(text.size() - gate_tail_limit);
}

// The outcome of an attempt, from the state its task moves to.
attempt_state outcome_of(task_state to) {
  switch (to) {
    case task_state::merging:
    case task_state::review:
    case task_state::done: return attempt_state::passed;
    case task_state::blocked: return attempt_state::blocked;
    case task_state::interrupted: return attempt_state::interrupted;
    default: return attempt_state::failed;
  }
}

bool sets_finished(task_state x) {
  return x == task_state::done || x == task_state::failed
         || x == task_state::skipped;
}

std::string task_name(const std::string& run_id, const std::string& task_id) {
  return "task " + task_id + " of run " + run_id;
}

// --- internals shared by the operations --------------------------------------

event_row insert_event(sqlite::connection& c, const std::string& run_id,
                       const std::optional<std::string>& task_id,
                       const std::string& kind, const std::string& data,
                       int64_t now_ms) {
  auto st = c.use("INSERT INTO events (run_id, task_id, at_ms, kind, data) "
                  "VALUES (?1, ?2, ?3, ?4, ?5)");
  st.bind(1, run_id)
    .bind(2, task_id)
    .bind(3, now_ms)
    .bind(4, kind)
    .bind(5, data);
  st.run();
  return event_row{c.last_insert_rowid(), run_id, task_id, now_ms, kind, data};
}

std::optional<run_row> load_run(sqlite::connection& c,
                                const std::string& run_id) {
  return select_one<run_row>(c, sql().run_by_id, [&](auto& st) {
    st.bind(1, run_id);
  });
}

std::optional<task_row> load_task(sqlite::connection& c,
                                  const std::string& run_id,
                                  const std::string& task_id) {
  return select_one<task_row>(c, sql().task_by_id, [&](auto& st) {
    st.bind(1, run_id).bind(2, task_id);
  });
}

std::vector<task_row> load_tasks(sqlite::connection& c,
                                 const std::string& run_id) {
  return select<task_row>(c, sql().tasks_of_run, [&](auto& st) {
    st.bind(1, run_id);
  });
}

std::vector<attempt_row> load_attempts(sqlite::connection& c,
                                       const std::string& run_id,
                                       const std::string& task_id) {
  return select<attempt_row>(c, sql().attempts_of_task, [&](auto& st) {
    st.bind(1, run_id).bind(2, task_id);
  });
}

std::vector<std::string> load_added_files(sqlite::connection& c,
                                          const std::string& run_id) {
  auto st = c.use("SELECT file FROM run_files WHERE run_id = ?1 "
                  "ORDER BY position");
  st.bind(1, run_id);
  std::vector<std::string> result;
  while (st.step())
    result.push_back(st.text(0));
  return result;
}

// The task's latest attempt number (0: none) and whether it is still open.
std::pair<int, bool> latest_attempt(sqlite::connection& c,
                                    const std::string& run_id,
                                    const std::string& task_id) {
  auto st = c.use("SELECT number, state FROM attempts "
                  "WHERE run_id = ?1 AND task_id = ?2 "
                  "ORDER BY number DESC LIMIT 1");
  st.bind(1, run_id).bind(2, task_id);
  if (!st.step())
    return {0, false};
  return {st.integer(0), st.text(1) == "running"};
}

void add_attempt_usage(sqlite::connection& c, const std::string& run_id,
                       const std::string& task_id, int number, const usage& u) {
  auto st = c.use("UPDATE attempts SET input_tokens = input_tokens + ?4, "
                  "output_tokens = output_tokens + ?5, "
                  "cost_usd = cost_usd + ?6 "
                  "WHERE run_id = ?1 AND task_id = ?2 AND number = ?3");
  st.bind(1, run_id).bind(2, task_id).bind(3, number);
  st.bind(4, u.input_tokens).bind(5, u.output_tokens).bind(6, u.cost_usd);
  st.run();
}

// Records each turn's usage once (a turn already recorded is skipped, so a
// change sent again never counts twice) and adds it to attempt `number`.
void record_turns(sqlite::connection& c, const std::string& run_id,
                  const std::string& task_id, int number,
                  const std::vector<turn_spend>& turns, int64_t now_ms) {
  if (number <= 0)
    return;
  for (auto& t : turns) {
    usage u{std::max<int64_t>(0, t.usage.input_tokens),
            std::max<int64_t>(0, t.usage.output_tokens),
            std::isfinite(t.usage.cost_usd) && t.usage.cost_usd > 0
              ? t.usage.cost_usd
              : 0.0};
    auto st = c.use("INSERT INTO turn_usage (run_id, task_id, attempt, turn, "
                    "kind, input_tokens, output_tokens, cost_usd, at_ms) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
                    "ON CONFLICT DO NOTHING");
    st.bind(1, run_id).bind(2, task_id).bind(3, number).bind(4, t.turn);
    st.bind(5, t.kind).bind(6, u.input_tokens).bind(7, u.output_tokens);
    st.bind(8, u.cost_usd).bind(9, now_ms);
    st.run();
    if (c.changes() > 0)
      add_attempt_usage(c, run_id, task_id, number, u);
  }
}

// Inserts one task of a new run or of an added file.
void insert_task(sqlite::connection& c, const std::string& run_id,
                 const new_task& t, int index, int64_t now_ms) {
  switch (t.state) {
    case task_state::pending:
    case task_state::ready:
    case task_state::done:
    case task_state::held:
    case task_state::skipped: break;
    default:
      throw ledger_error(ledger_errc::invalid_transition,
                         "task " + t.id + " cannot start its life "
                           + to_string(t.state));
  }
  {
    auto st = c.use("SELECT 1 FROM tasks WHERE run_id = ?1 AND task_id = ?2");
    st.bind(1, run_id).bind(2, t.id);
    if (st.step())
      throw ledger_error(ledger_errc::duplicate,
                         "task " + t.id + " appears twice in run " + run_id);
  }
  auto st = c.use("INSERT INTO tasks (run_id, task_id, idx, title, state, "
                  "reason, finished_ms, updated_ms, content_hash, "
                  "merge_commit) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)");
  st.bind(1, run_id).bind(2, t.id).bind(3, index).bind(4, t.title);
  st.bind(5, to_string(t.state)).bind(6, t.reason);
  st.bind(7, sets_finished(t.state) ? std::optional<int64_t>{now_ms}
                                    : std::nullopt);
  st.bind(8, now_ms).bind(9, t.content_hash).bind(10, t.merge_commit);
  st.run();
}

// Writes the columns `f` sets and notes them in `data` for the event.
void write_fields(sqlite::connection& c, const std::string& run_id,
                  const std::string& task_id, const task_fields& f,
                  json& data) {
  if (f.empty())
    return;
  // Column = ?n, in the order below; text or integer values.
  std::vector<std::pair<const char*, std::string>> texts;
  std::vector<std::string> sets;
  auto text = [&](const char* column, const std::string& value) {
    texts.emplace_back(column, value);
  };
  if (f.branch && !f.clear_branch_and_worktree) {
    text("branch", *f.branch);
    data["branch"] = *f.branch;
  }
  if (f.worktree && !f.clear_branch_and_worktree) {
    text("worktree", *f.worktree);
    data["worktree"] = *f.worktree;
  }
  if (f.merge_commit) {
    text("merge_commit", *f.merge_commit);
    data["merge_commit"] = *f.merge_commit;
  }
  if (f.conflict_paths) {
    text("conflict_paths", sqlite::encode_list(*f.conflict_paths));
    data["conflict_paths"] = *f.conflict_paths;
  }
  if (f.gate_tail)
    text("gate_tail", keep_tail(*f.gate_tail));
  if (f.session) {
    text("session", *f.session);
    data["session"] = *f.session;
  }
  for (size_t i = 0; i < texts.size(); ++i)
    sets.push_back(std::string{texts[i].first} + " = ?"
                   + std::to_string(i + 3));
  if (f.clear_branch_and_worktree) {
    sets.emplace_back("branch = NULL, worktree = NULL");
    data["cleared"] = json::array({"branch", "worktree"});
  }
  if (f.hold_lifted) {
    sets.emplace_back(*f.hold_lifted ? "hold_lifted = 1" : "hold_lifted = 0");
    data["hold_lifted"] = *f.hold_lifted;
  }
  std::string query = "UPDATE tasks SET ";
  for (size_t i = 0; i < sets.size(); ++i)
    query += (i > 0 ? ", " : "") + sets[i];
  query += " WHERE run_id = ?1 AND task_id = ?2";
  auto st = c.use(query);
  st.bind(1, run_id).bind(2, task_id);
  for (size_t i = 0; i < texts.size(); ++i)
    st.bind(static_cast<int>(i + 3), texts[i].second);
  st.run();
}

/// Whether a task in `x` occupies what it writes: its leases are held.
bool working(task_state x) {
  return x == task_state::running || x == task_state::verifying
         || x == task_state::merging;
}

/// A run task's leases (holder "run/<run>/<task>"), in the transition's
/// own transaction, so they cost no write of their own: a start (into
/// running from outside the working states) checks its claims against the
/// live leases of every other holder and is refused (`reserved`, naming
/// what it waits for) on an overlap; they are held while it works and
/// given up when it stops.
void reserve_scope(sqlite::connection& c, const fs::path& run_lock,
                   const std::string& run_id, const std::string& task_id,
                   task_state from, const task_change& change) {
  auto holder = scope::run_task_holder(run_id, task_id);
  if (!working(change.to)) {
    drop_leases(c, holder);
    return;
  }
  if (!change.reserves)
    return;
  bool start = change.to == task_state::running && !working(from);
  if (!start) {
    take_leases(c, holder, *change.reserves);
    return;
  }
  if (auto conflict = reserve(c, run_lock, holder, *change.reserves))
    throw ledger_error(ledger_errc::reserved, conflict->waits_for());
}

/// The reason of a task whose start was refused as `reserved`: what it
/// waits for, with a `task.waits` event when that is news.
void note_waiting(sqlite::connection& c, const std::string& run_id,
                  const std::string& task_id, const std::string& why,
                  int64_t now_ms) {
  auto st = c.use("UPDATE tasks SET reason = ?3, updated_ms = ?4 "
                  "WHERE run_id = ?1 AND task_id = ?2 "
                  "AND reason IS NOT ?3");
  st.bind(1, run_id).bind(2, task_id).bind(3, why).bind(4, now_ms);
  st.run();
  if (c.changes() > 0)
    insert_event(c, run_id, task_id, "task.waits", dump(json{{"reason", why}}),
                 now_ms);
}

// One task transition inside an open write transaction: the lifecycle
// check, the attempt bookkeeping, the task row, its leases and the event.
transition_result apply_transition(sqlite::connection& c,
                                   const fs::path& run_lock,
                                   const std::string& run_id,
                                   const std::string& task_id,
                                   const task_change& change,
                                   const json& caller_data, int64_t now_ms) {
  task_state from;
  int counted;
  {
    auto st = c.use("SELECT state, attempts FROM tasks "
                    "WHERE run_id = ?1 AND task_id = ?2");
    st.bind(1, run_id).bind(2, task_id);
    if (!st.step())
      throw ledger_error(ledger_errc::not_found,
                         "no " + task_name(run_id, task_id));
    from_string(st.text(0), from);
    counted = st.integer(1);
  }
  auto to = change.to;
  if (change.expect && *change.expect != from)
    throw ledger_error(ledger_errc::invalid_transition,
                       task_name(run_id, task_id) + " is " + to_string(from)
                         + ", not " + to_string(*change.expect));
  auto event = event_between(from, to);
  if (!event)
    throw ledger_error(ledger_errc::invalid_transition,
                       task_name(run_id, task_id) + " cannot go from "
                         + to_string(from) + " to " + to_string(to));
  transition_result result;
  result.from = from;
  auto [number, open] = latest_attempt(c, run_id, task_id);
  // Entering the attempt states from outside opens a new attempt.
  if (in_attempt(to) && !in_attempt(from)) {
    ++number;
    ++counted;
    open = true;
    result.attempt_opened = true;
    auto dir = attempt_log_dir(run_id, task_id, number);
    auto st = c.use("INSERT INTO attempts (run_id, task_id, number, state, "
                    "started_ms, worker_log, verify_log, model) "
                    "VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6, ?7)");
    st.bind(1, run_id).bind(2, task_id).bind(3, number).bind(4, now_ms);
    st.bind(5, dir + "/worker.log").bind(6, dir + "/verify.log");
    std::optional<std::string> model;
    if (change.attempt_model && !change.attempt_model->empty())
      model = change.attempt_model;
    st.bind(7, model);
    st.run();
  } else if (from == task_state::verifying && to == task_state::running
             && open) {
    auto st = c.use("UPDATE attempts SET repairs = repairs + 1 "
                    "WHERE run_id = ?1 AND task_id = ?2 AND number = ?3");
    st.bind(1, run_id).bind(2, task_id).bind(3, number);
    st.run();
  }
  if (change.usage && number > 0)
    add_attempt_usage(c, run_id, task_id, number, *change.usage);
  record_turns(c, run_id, task_id, number, change.turns, now_ms);
  // Leaving the attempt states closes the open attempt with an outcome.
  if (open && !in_attempt(to)) {
    auto outcome = outcome_of(to);
    bool interrupted = outcome == attempt_state::interrupted;
    if (interrupted)
      --counted;
    result.attempt_closed = true;
    auto st = c.use("UPDATE attempts SET state = ?4, ended_ms = ?5, "
                    "exit_code = ?6, interrupted = ?7 "
                    "WHERE run_id = ?1 AND task_id = ?2 AND number = ?3");
    st.bind(1, run_id).bind(2, task_id).bind(3, number);
    st.bind(4, to_string(outcome)).bind(5, now_ms).bind(6, change.exit_code);
    st.bind(7, interrupted ? 1 : 0);
    st.run();
  }
  result.attempt = number;
  {
    auto st = c.use(
      "UPDATE tasks SET state = ?3, reason = ?4, attempts = ?5, "
      "started_ms = CASE WHEN ?6 THEN coalesce(started_ms, ?8) "
      "ELSE started_ms END, "
      "finished_ms = CASE WHEN ?7 THEN ?8 ELSE NULL END, updated_ms = ?8 "
      "WHERE run_id = ?1 AND task_id = ?2");
    st.bind(1, run_id).bind(2, task_id).bind(3, to_string(to));
    st.bind(4, change.reason).bind(5, counted);
    st.bind(6, to == task_state::running ? 1 : 0);
    st.bind(7, sets_finished(to) ? 1 : 0).bind(8, now_ms);
    st.run();
  }
  json data = caller_data;
  write_fields(c, run_id, task_id, change.fields, data);
  data["from"] = to_string(from);
  data["to"] = to_string(to);
  data["event"] = to_string(*event);
  data["attempt"] = number > 0 ? json(number) : json(nullptr);
  data["reason"] = nullable(change.reason);
  if (change.exit_code)
    data["exit_code"] = *change.exit_code;
  reserve_scope(c, run_lock, run_id, task_id, from, change);
  result.event
    = insert_event(c, run_id, task_id, "task.state", dump(data), now_ms);
  return result;
}

event_row apply_run_state(sqlite::connection& c, const std::string& run_id,
                          run_state to,
                          const std::optional<std::string>& reason,
                          int64_t now_ms) {
  auto run = load_run(c, run_id);
  if (!run)
    throw ledger_error(ledger_errc::not_found, "no run " + run_id);
  if (run->state != to && !allowed(run->state, to))
    throw ledger_error(ledger_errc::invalid_transition,
                       "run " + run_id + " cannot go from "
                         + to_string(run->state) + " to " + to_string(to));
  auto st = c.use("UPDATE runs SET state = ?2, reason = ?3, updated_ms = ?4 "
                  "WHERE id = ?1");
  st.bind(1, run_id).bind(2, to_string(to)).bind(3, reason).bind(4, now_ms);
  st.run();
  json data{{"from", to_string(run->state)},
            {"to", to_string(to)},
            {"reason", nullable(reason)}};
  return insert_event(c, run_id, std::nullopt, "run.state", dump(data), now_ms);
}

} // namespace

// --- opening -----------------------------------------------------------------

ledger::ledger(std::unique_ptr<sqlite::connection> db,
               std::filesystem::path path, int version)
  : db_(std::move(db)), path_(std::move(path)), version_(version) {}

ledger::ledger(ledger&&) noexcept = default;
ledger& ledger::operator=(ledger&&) noexcept = default;
ledger::~ledger() = default;

fs::path ledger::run_lock_file() const {
  return path_.parent_path() / run_lock_file_name;
}

ledger ledger::open(const std::filesystem::path& path,
                    const ledger_options& options) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    if (!options.read_only)
      schema::create(path);
  } else {
    schema::check_file(path);
  }
  auto db = std::make_unique<sqlite::connection>(
    path, options.read_only ? sqlite::open_mode::read_only
                            : sqlite::open_mode::read_write);
  db->busy_timeout(options.busy_timeout_ms);
  // Read before anything is written: a file that is not a ledger stays as
  // it is.
  auto version = schema::read_version(*db, path);
  db->exec("PRAGMA foreign_keys = ON", "enabling foreign keys");
  if (options.read_only) {
    if (version < schema::current)
      schema::present_as_current(*db, version);
    return ledger{std::move(db), path, version};
  }
  // WAL persists in the file; readers in other processes never wait for
  // the writer, and a writer never waits for readers.
  db->exec("PRAGMA journal_mode = WAL", "switching to WAL");
  db->exec(options.synchronous_full ? "PRAGMA synchronous = FULL"
                                    : "PRAGMA synchronous = NORMAL",
           "setting synchronous");
  // The common case, an up-to-date ledger, takes no write lock: opening
  // must not wait for a run that is writing.
  schema::migrate(*db, path, version);
  return ledger{std::move(db), path, schema::current};
}

// --- runs --------------------------------------------------------------------

void ledger::create_run(const new_run& run, int64_t now_ms) {
  parse_object(run.config_json, "the run's config");
  auto& c = *db_;
  sqlite::transaction txn{c, true};
  if (load_run(c, run.id))
    throw ledger_error(ledger_errc::duplicate,
                       "run " + run.id + " already exists");
  {
    auto st = c.use("INSERT INTO runs (id, file, file_hash, base_branch, "
                    "state, reason, created_ms, updated_ms, max_concurrency, "
                    "config_json) VALUES (?1, ?2, ?3, ?4, 'running', NULL, "
                    "?5, ?5, ?6, ?7)");
    st.bind(1, run.id).bind(2, run.file).bind(3, run.file_hash);
    st.bind(4, run.base_branch).bind(5, now_ms);
    st.bind(6, static_cast<int64_t>(run.max_concurrency));
    st.bind(7, run.config_json);
    st.run();
  }
  for (auto& t : run.tasks)
    insert_task(c, run.id, t, t.index, now_ms);
  json data{{"file", run.file},
            {"file_hash", run.file_hash},
            {"base_branch", run.base_branch},
            {"max_concurrency", run.max_concurrency},
            {"tasks", run.tasks.size()}};
  insert_event(c, run.id, std::nullopt, "run.created", dump(data), now_ms);
  txn.commit();
}

int ledger::add_tasks(const added_tasks& added, int64_t now_ms) {
  auto& c = *db_;
  sqlite::transaction txn{c, true};
  auto run = load_run(c, added.run_id);
  if (!run)
    throw ledger_error(ledger_errc::not_found, "no run " + added.run_id);
  if (run->state != run_state::running && run->state != run_state::paused)
    throw ledger_error(ledger_errc::invalid_transition,
                       "run " + added.run_id + " is " + to_string(run->state)
                         + "; tasks join only an unfinished run");
  int last = 0;
  {
    auto st = c.use("SELECT coalesce(max(idx), 0) FROM tasks "
                    "WHERE run_id = ?1");
    st.bind(1, added.run_id);
    if (st.step())
      last = st.integer(0);
  }
  auto ids = json::array();
  for (auto& t : added.tasks) {
    insert_task(c, added.run_id, t, last + t.index, now_ms);
    ids.push_back(t.id);
  }
  int position = 1;
  {
    auto st = c.use("SELECT coalesce(max(position), 0) + 1 FROM run_files "
                    "WHERE run_id = ?1");
    st.bind(1, added.run_id);
    if (st.step())
      position = st.integer(0);
  }
  {
    auto st = c.use("INSERT INTO run_files (run_id, position, file) "
                    "VALUES (?1, ?2, ?3)");
    st.bind(1, added.run_id).bind(2, position).bind(3, added.file);
    st.run();
  }
  json data{{"file", added.file}, {"position", position}, {"tasks", ids}};
  insert_event(c, added.run_id, std::nullopt, "run.tasks_added", dump(data),
               now_ms);
  txn.commit();
  return position;
}

std::vector<std::string> ledger::added_files(const std::string& run_id) const {
  return load_added_files(*db_, run_id);
}

event_row ledger::set_run_state(const std::string& run_id, run_state to,
                                const std::optional<std::string>& reason,
                                int64_t now_ms) {
  sqlite::transaction txn{*db_, true};
  auto ev = apply_run_state(*db_, run_id, to, reason, now_ms);
  txn.commit();
  return ev;
}

std::optional<run_row> ledger::find_run(const std::string& run_id) const {
  return load_run(*db_, run_id);
}

std::optional<run_row> ledger::latest_run_of(const std::string& file) const {
  return select_one<run_row>(*db_, sql().latest_run_of_file, [&](auto& st) {
    st.bind(1, file);
  });
}

std::optional<run_row> ledger::latest_run() const {
  return select_one<run_row>(*db_, sql().latest_run, [](auto&) {});
}

std::optional<run_row>
ledger::latest_unfinished_run(const std::optional<std::string>& file) const {
  return select_one<run_row>(*db_, sql().latest_unfinished_run, [&](auto& st) {
    st.bind(1, file);
  });
}

std::vector<run_summary> ledger::list_runs() const {
  auto& c = *db_;
  sqlite::transaction txn{c, false};
  std::vector<run_summary> result;
  std::map<std::string, size_t> where;
  for (auto& run : select<run_row>(c, sql().all_runs, [](auto&) {})) {
    where[run.id] = result.size();
    result.push_back(run_summary{std::move(run), {}, 0, {}});
  }
  {
    auto st = c.use("SELECT run_id, state, count(*) FROM tasks "
                    "GROUP BY run_id, state");
    while (st.step()) {
      auto i = where.find(st.text(0));
      task_state state;
      if (i == where.end() || !from_string(st.text(1), state))
        continue;
      auto& s = result[i->second];
      s.counts[state] = st.integer(2);
      s.total += st.integer(2);
    }
  }
  {
    auto st = c.use("SELECT run_id, sum(input_tokens), sum(output_tokens), "
                    "sum(cost_usd) FROM attempts GROUP BY run_id");
    while (st.step()) {
      auto i = where.find(st.text(0));
      if (i == where.end())
        continue;
      auto& u = result[i->second].usage;
      u.input_tokens = st.int64(1);
      u.output_tokens = st.int64(2);
      u.cost_usd = st.real(3);
    }
  }
  txn.commit();
  return result;
}

// --- tasks -------------------------------------------------------------------

transition_result ledger::transition(const std::string& run_id,
                                     const std::string& task_id,
                                     const task_change& change,
                                     int64_t now_ms) {
  auto outcome = transition_batch({{run_id, task_id, change}}, now_ms);
  if (auto* e = std::get_if<ledger_error>(&outcome.front()))
    throw *e;
  return std::get<transition_result>(outcome.front());
}

std::vector<batch_outcome>
ledger::transition_batch(const std::vector<task_change_request>& changes,
                         int64_t now_ms) {
  auto& c = *db_;
  auto run_lock = run_lock_file();
  std::vector<batch_outcome> result;
  result.reserve(changes.size());
  sqlite::transaction txn{c, true};
  for (auto& req : changes) {
    std::optional<ledger_error> refused;
    {
      // A savepoint per change: a refused one is rolled back alone.
      sqlite::savepoint item{c};
      try {
        auto data = parse_object(req.change.data_json, "the event data");
        result.emplace_back(apply_transition(
          c, run_lock, req.run_id, req.task_id, req.change, data, now_ms));
        item.release();
      } catch (const ledger_error& e) {
        if (e.code() == ledger_errc::sqlite)
          throw; // the transaction itself is in doubt: all or nothing
        refused = e;
      }
    }
    if (!refused)
      continue;
    // A start that waits for another holder says so in the task's reason.
    if (refused->code() == ledger_errc::reserved)
      note_waiting(c, req.run_id, req.task_id, refused->what(), now_ms);
    result.emplace_back(std::move(*refused));
  }
  txn.commit();
  return result;
}

event_row ledger::update_task(const std::string& run_id,
                              const std::string& task_id,
                              const task_fields& fields, int64_t now_ms,
                              const std::string& data_json) {
  auto data = parse_object(data_json, "the event data");
  auto& c = *db_;
  sqlite::transaction txn{c, true};
  {
    auto st = c.use("UPDATE tasks SET updated_ms = ?3 "
                    "WHERE run_id = ?1 AND task_id = ?2");
    st.bind(1, run_id).bind(2, task_id).bind(3, now_ms);
    st.run();
    if (c.changes() == 0)
      throw ledger_error(ledger_errc::not_found,
                         "no " + task_name(run_id, task_id));
  }
  write_fields(c, run_id, task_id, fields, data);
  auto others = fields;
  others.merge_commit.reset();
  auto kind = fields.merge_commit && others.empty() ? "task.merge_commit"
                                                    : "task.update";
  auto ev = insert_event(c, run_id, task_id, kind, dump(data), now_ms);
  txn.commit();
  return ev;
}

event_row ledger::record_merge_commit(const std::string& run_id,
                                      const std::string& task_id,
                                      const std::string& commit,
                                      int64_t now_ms) {
  task_fields f;
  f.merge_commit = commit;
  return update_task(run_id, task_id, f, now_ms);
}

void ledger::add_usage(const std::string& run_id, const std::string& task_id,
                       const store::usage& u) {
  auto& c = *db_;
  sqlite::transaction txn{c, true};
  auto [number, open] = latest_attempt(c, run_id, task_id);
  if (!open)
    throw ledger_error(ledger_errc::invalid_transition,
                       task_name(run_id, task_id) + " has no open attempt");
  add_attempt_usage(c, run_id, task_id, number, u);
  txn.commit();
}

std::optional<task_row> ledger::find_task(const std::string& run_id,
                                          const std::string& task_id) const {
  return load_task(*db_, run_id, task_id);
}

std::optional<task_state> ledger::state_of(const std::string& run_id,
                                           const std::string& task_id) const {
  auto st = db_->use("SELECT state FROM tasks WHERE run_id = ?1 "
                     "AND task_id = ?2");
  st.bind(1, run_id).bind(2, task_id);
  if (!st.step())
    return std::nullopt;
  task_state x;
  from_string(st.text(0), x);
  return x;
}

std::vector<task_row> ledger::tasks(const std::string& run_id) const {
  return load_tasks(*db_, run_id);
}

std::vector<attempt_row> ledger::attempts(const std::string& run_id,
                                          const std::string& task_id) const {
  return load_attempts(*db_, run_id, task_id);
}

// --- events ------------------------------------------------------------------

event_row ledger::append_event(const std::string& run_id,
                               const std::optional<std::string>& task_id,
                               const std::string& kind,
                               const std::string& data_json, int64_t now_ms) {
  parse_object(data_json, "the event data");
  sqlite::transaction txn{*db_, true};
  auto ev = insert_event(*db_, run_id, task_id, kind, data_json, now_ms);
  txn.commit();
  return ev;
}

std::vector<event_row> ledger::events(const std::string& run_id,
                                      int64_t after_seq, size_t limit) const {
  return select<event_row>(*db_, sql().events_after, [&](auto& st) {
    st.bind(1, run_id).bind(2, after_seq);
    st.bind(3, limit == 0 ? int64_t{-1} : static_cast<int64_t>(limit));
  });
}

// --- what the commands show --------------------------------------------------

std::optional<run_status> ledger::status(const std::string& run_id) const {
  auto& c = *db_;
  // One snapshot: the run and its tasks as of the same commit.
  sqlite::transaction txn{c, false};
  auto run = load_run(c, run_id);
  if (!run)
    return std::nullopt;
  run_status result{std::move(*run), load_tasks(c, run_id),
                    load_added_files(c, run_id)};
  txn.commit();
  return result;
}

std::optional<task_history> ledger::history(const std::string& run_id,
                                            const std::string& task_id) const {
  auto& c = *db_;
  sqlite::transaction txn{c, false};
  auto task = load_task(c, run_id, task_id);
  if (!task)
    return std::nullopt;
  task_history result;
  result.task = std::move(*task);
  result.attempts = load_attempts(c, run_id, task_id);
  result.events = select<event_row>(c, sql().events_of_task, [&](auto& st) {
    st.bind(1, run_id).bind(2, task_id);
  });
  txn.commit();
  return result;
}

// --- co-change learning ----------------------------------------------------

bool ledger::record_co_change(const std::string& run_id,
                              const std::string& task_id,
                              const std::vector<std::string>& files) {
  auto& c = *db_;
  sqlite::transaction txn{c, true};
  if (!load_task(c, run_id, task_id))
    throw ledger_error(ledger_errc::not_found,
                       "no " + task_name(run_id, task_id));
  {
    auto st = c.use("INSERT OR IGNORE INTO co_change_tasks (run_id, task_id) "
                    "VALUES (?1, ?2)");
    st.bind(1, run_id).bind(2, task_id);
    st.run();
    if (c.changes() == 0)
      return false; // counted before
  }
  std::vector<std::string> sorted = files;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  bool counted = sorted.size() <= co_change_max_files;
  if (counted) {
    for (size_t i = 0; i < sorted.size(); ++i)
      for (size_t j = i + 1; j < sorted.size(); ++j) {
        auto st = c.use("INSERT INTO co_changes (file_a, file_b, count) "
                        "VALUES (?1, ?2, 1) ON CONFLICT (file_a, file_b) "
                        "DO UPDATE SET count = count + 1");
        st.bind(1, sorted[i]).bind(2, sorted[j]);
        st.run();
      }
  }
  txn.commit();
  return counted;
}

std::vector<merged_task> ledger::co_change_uncounted() const {
  std::vector<merged_task> out;
  auto st = db_->use(
    "SELECT t.run_id, t.task_id, t.merge_commit, COALESCE(t.reason, '') "
    "FROM tasks t "
    "JOIN runs r ON r.id = t.run_id "
    "WHERE t.state = 'done' AND t.merge_commit IS NOT NULL "
    "AND t.attempts > 0 AND NOT EXISTS (SELECT 1 FROM co_change_tasks c "
    "WHERE c.run_id = t.run_id AND c.task_id = t.task_id) "
    "ORDER BY r.created_ms, t.run_id, t.finished_ms, t.idx");
  while (st.step())
    out.push_back({st.text(0), st.text(1), st.text(2), st.text(3)});
  return out;
}

bool ledger::co_change_counted(const std::string& run_id,
                               const std::string& task_id) const {
  auto st = db_->use("SELECT 1 FROM co_change_tasks "
                     "WHERE run_id = ?1 AND task_id = ?2");
  st.bind(1, run_id).bind(2, task_id);
  return st.step();
}

std::vector<std::pair<std::string, std::string>>
ledger::co_change_pairs(uint64_t min_count) const {
  std::vector<std::pair<std::string, std::string>> pairs;
  auto st = db_->use("SELECT file_a, file_b FROM co_changes WHERE count >= ?1 "
                     "ORDER BY file_a, file_b");
  st.bind(
    1, static_cast<int64_t>(std::min<uint64_t>(min_count, uint64_t{1} << 62)));
  while (st.step())
    pairs.emplace_back(st.text(0), st.text(1));
  return pairs;
}

// --- recovery ----------------------------------------------------------------

recovery ledger::mark_interrupted(const std::string& run_id,
                                  const std::string& reason, int64_t now_ms) {
  auto& c = *db_;
  sqlite::transaction txn{c, true};
  auto run = load_run(c, run_id);
  if (!run)
    throw ledger_error(ledger_errc::not_found, "no run " + run_id);
  recovery result;
  for (auto& t : load_tasks(c, run_id)) {
    if (in_attempt(t.state)) {
      task_change change;
      change.to = task_state::interrupted;
      change.reason = reason;
      apply_transition(c, run_lock_file(), run_id, t.id, change, json::object(),
                       now_ms);
      result.interrupted.push_back(t.id);
    } else if (t.state == task_state::merging) {
      result.merging.push_back(t.id);
    }
  }
  if (run->state == run_state::running) {
    apply_run_state(c, run_id, run_state::paused, reason, now_ms);
    result.paused = true;
  }
  txn.commit();
  return result;
}

// --- usage -------------------------------------------------------------------

std::vector<std::pair<int, turn_spend>>
ledger::turn_usage(const std::string& run_id,
                   const std::string& task_id) const {
  auto st = db_->use("SELECT attempt, turn, kind, input_tokens, "
                     "output_tokens, cost_usd FROM turn_usage "
                     "WHERE run_id = ?1 AND task_id = ?2 "
                     "ORDER BY attempt, turn");
  st.bind(1, run_id).bind(2, task_id);
  std::vector<std::pair<int, turn_spend>> result;
  while (st.step()) {
    turn_spend t;
    t.turn = st.integer(1);
    t.kind = st.text(2);
    t.usage = usage{st.int64(3), st.int64(4), st.real(5)};
    result.emplace_back(st.integer(0), std::move(t));
  }
  return result;
}

store::usage ledger::run_usage(const std::string& run_id) const {
  auto st = db_->use("SELECT coalesce(sum(input_tokens), 0), "
                     "coalesce(sum(output_tokens), 0), "
                     "coalesce(sum(cost_usd), 0) FROM attempts "
                     "WHERE run_id = ?1");
  st.bind(1, run_id);
  if (!st.step())
    return {};
  return usage{st.int64(0), st.int64(1), st.real(2)};
}

std::vector<job_row> ledger::job_log(const std::string& run_id) const {
  auto& c = *db_;
  sqlite::transaction txn{c, false};
  std::vector<job_row> result;
  for (auto& t : load_tasks(c, run_id)) {
    job_row j;
    j.task_id = t.id;
    j.title = t.title;
    j.state = t.state;
    j.started_ms = t.started_ms;
    j.attempts = t.attempts;
    j.usage = t.usage;
    auto attempts = load_attempts(c, run_id, t.id);
    for (auto& a : attempts) {
      j.repairs += a.repairs;
      if (a.exit_code)
        j.exit_code = a.exit_code;
    }
    if (t.finished_ms)
      j.ended_ms = t.finished_ms;
    else if (!attempts.empty()
             && attempts.back().state != attempt_state::running)
      j.ended_ms = attempts.back().ended_ms;
    result.push_back(std::move(j));
  }
  txn.commit();
  return result;
}

} // namespace taskforce::store
