#include "src/control/store.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "src/control/deps.hpp"
#include "src/control/roots.hpp"
#include "src/store/leases.hpp"
#include "src/store/ledger.hpp"
#include "src/store/sqlite.hpp"
#include "src/text/join.hpp"
#include "src/text/strings.hpp"

namespace taskforce::control {

using json = nlohmann::json;
namespace sqlite = store::sqlite;

const char* to_string(token_kind x) {
  return x == token_kind::dispatch ? "dispatch" : "continue";
}

const char* to_string(completion_status x) {
  return x == completion_status::done ? "done" : "blocked";
}

namespace {

/// The last bytes of a validation's output kept in the row.
constexpr size_t max_tail_bytes = 64 * 1024;

/// A bg_tasks row: the task as shown, plus the token it never shows.
struct stored {
  bg_task t;
  std::optional<std::string> token;
  std::optional<std::string> kind;
};

template<class F>
void columns(stored& r, F&& f) {
  f("id", r.t.id);
  f("seq", r.t.seq);
  f("title", r.t.title);
  f("agent", r.t.agent);
  f("prompt", r.t.prompt);
  f("session", r.t.session);
  f("roots", r.t.roots);
  f("locks", r.t.locks);
  f("validations", r.t.validations);
  f("state", r.t.state);
  f("reason", r.t.reason);
  f("child_session", r.t.child_session);
  f("token", r.token);
  f("token_kind", r.kind);
  f("token_expires_ms", r.t.token_expires_ms);
  f("token_consumed", r.t.token_consumed);
  f("continuation", r.t.continuation);
  f("cancel_requested", r.t.cancel_requested);
  f("attempts", r.t.attempts);
  f("result", r.t.result);
  f("files", r.t.files);
  f("output_tail", r.t.output_tail);
  f("version", r.t.version);
  f("created_ms", r.t.created_ms);
  f("updated_ms", r.t.updated_ms);
}

// The row, with the kind of its outstanding token as the task shows it.
stored read_stored(const sqlite::statement& st) {
  auto row = sqlite::read_row<stored>(st);
  if (row.kind)
    row.t.token = *row.kind == "continue" ? token_kind::continuation
                                          : token_kind::dispatch;
  return row;
}

const std::string& task_columns() {
  static const std::string s = sqlite::select_list<stored>();
  return s;
}

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

[[noreturn]] void refuse(control_errc code, const std::string& why) {
  throw control_error(code, why);
}

// 128 random bits as 32 hex digits, from the kernel's generator.
std::string new_token() {
  unsigned char bytes[16] = {};
  bool filled = false;
  int fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    filled
      = ::read(fd, bytes, sizeof(bytes)) == static_cast<ssize_t>(sizeof(bytes));
    ::close(fd);
  }
  if (!filled) {
    std::random_device rd;
    for (auto& b : bytes)
      b = static_cast<unsigned char>(rd() & 0xffu);
  }
  static const char* digits = "0123456789abcdef";
  std::string hex;
  for (auto b : bytes) {
    hex += digits[b >> 4];
    hex += digits[b & 0xf];
  }
  return hex;
}

// What the event log keeps of a token: enough to recognise it again (used,
// expired), never the token itself.
std::string token_digest(const std::string& token) {
  return store::content_hash(token);
}

std::string keep_tail(const std::string& s) {
  if (s.size() <= max_tail_bytes)
    return s;
  return s.substr(s.size() - max_tail_bytes);
}

std::vector<std::string> sorted_difference(const std::vector<std::string>& a,
                                           const std::vector<std::string>& b) {
  std::vector<std::string> result;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(),
                      std::back_inserter(result));
  return result;
}

// --- one write transaction ---------------------------------------------------

/// The work of one call: its connection, its time and the changes it made.
/// Every change of a task goes through `save`, a compare-and-swap on its
/// state and version with an event.
class bg_txn {
 public:
  bg_txn(sqlite::connection& c, int64_t now,
         const std::filesystem::path& run_lock)
    : c(c), now(now), run_lock(run_lock) {}

  sqlite::connection& c;
  int64_t now;
  /// The repository's run lock: whether a run's leases are alive.
  const std::filesystem::path& run_lock;
  std::vector<bg_change> changes;

  std::optional<stored> load(const std::string& id) {
    auto st
      = c.use("SELECT " + task_columns() + " FROM bg_tasks WHERE id = ?1");
    st.bind(1, id);
    if (!st.step())
      return std::nullopt;
    return read_stored(st);
  }

  stored must_load(const std::string& id) {
    auto row = load(id);
    if (!row)
      refuse(control_errc::not_found, "no task " + id);
    return *row;
  }

  /// Rows matching `where` (which may use ?1, bound to `param`), oldest
  /// first.
  std::vector<stored> load_where(const std::string& where,
                                 const std::optional<std::string>& param
                                 = std::nullopt) {
    auto st = c.use("SELECT " + task_columns() + " FROM bg_tasks WHERE " + where
                    + " ORDER BY seq");
    if (param)
      st.bind(1, *param);
    std::vector<stored> rows;
    while (st.step())
      rows.push_back(read_stored(st));
    return rows;
  }

  /// The task with its dependencies and leases.
  bg_task complete(bg_task t) {
    t.deps.clear();
    t.leased_roots.clear();
    t.leased_locks.clear();
    {
      auto st = c.use("SELECT d.prerequisite FROM bg_deps d "
                      "LEFT JOIN bg_tasks p ON p.id = d.prerequisite "
                      "WHERE d.task_id = ?1 ORDER BY p.seq");
      st.bind(1, t.id);
      while (st.step())
        t.deps.push_back(st.text(0));
    }
    for (auto& l : store::leases_of(c, t.id))
      (l.kind == lease_kind::lock ? t.leased_locks : t.leased_roots)
        .push_back(l.name);
    return t;
  }

  void event(const std::optional<std::string>& task_id, const std::string& kind,
             std::optional<bg_state> from, std::optional<bg_state> to,
             const json& detail) {
    auto st = c.use("INSERT INTO bg_events (task_id, kind, from_state, "
                    "to_state, detail, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    st.bind(1, task_id).bind(2, kind);
    st.bind(3, from ? to_string(*from) : nullptr);
    st.bind(4, to ? to_string(*to) : nullptr);
    st.bind(5, dump(detail)).bind(6, now);
    st.run();
  }

  /// Writes `after` over `before` if nobody changed the row meanwhile, with
  /// an event ("state" when the state moved, else "updated").
  void save(stored& before, stored& after, json detail = json::object()) {
    auto from = before.t.state;
    auto to = after.t.state;
    if (from != to && !allowed(from, to))
      refuse(control_errc::invalid_state, "task " + before.t.id
                                            + " cannot go "
                                              "from "
                                            + to_string(from) + " to "
                                            + to_string(to));
    auto st = c.use(
      "UPDATE bg_tasks SET state = ?1, reason = ?2, child_session = ?3, "
      "token = ?4, token_kind = ?5, token_expires_ms = ?6, "
      "token_consumed = ?7, continuation = ?8, cancel_requested = ?9, "
      "attempts = ?10, result = ?11, files = ?12, output_tail = ?13, "
      "version = version + 1, updated_ms = ?14 "
      "WHERE id = ?15 AND state = ?16 AND version = ?17");
    auto& t = after.t;
    t.token.reset();
    if (after.kind)
      t.token = *after.kind == "continue" ? token_kind::continuation
                                          : token_kind::dispatch;
    st.bind(1, to_string(t.state)).bind(2, t.reason).bind(3, t.child_session);
    st.bind(4, after.token).bind(5, after.kind).bind(6, t.token_expires_ms);
    st.bind(7, t.token_consumed ? 1 : 0).bind(8, t.continuation);
    st.bind(9, t.cancel_requested ? 1 : 0).bind(10, t.attempts);
    st.bind(11, t.result).bind(12, sqlite::encode_list(t.files));
    st.bind(13, t.output_tail).bind(14, now).bind(15, t.id);
    st.bind(16, to_string(from)).bind(17, before.t.version);
    st.run();
    if (c.changes() != 1)
      refuse(control_errc::invalid_state,
             "task " + t.id + " changed meanwhile; try again");
    t.version = before.t.version + 1;
    t.updated_ms = now;
    if (t.reason)
      detail["reason"] = *t.reason;
    auto kind = from != to ? "state" : "updated";
    event(t.id, kind, from, to, detail);
    changes.push_back(bg_change{t.id, kind, from, to, complete(t)});
    before = after;
  }

  /// Moves `row` to `to` (nullopt: keeps the state), changed by `edit`.
  template<class Edit>
  void change(stored& row, std::optional<bg_state> to, Edit edit,
              json detail = json::object()) {
    auto after = row;
    if (to)
      after.t.state = *to;
    edit(after);
    save(row, after, std::move(detail));
  }

  // -- leases (src/store/leases.hpp) --

  /// Every live lease; run tasks' leases whose run is not driven any more
  /// are given up on the way.
  std::vector<lease> leases() {
    return store::live_leases(c, run_lock, true);
  }

  void take(const std::string& holder, const std::vector<std::string>& roots,
            const std::vector<std::string>& locks) {
    store::take_leases(c, holder, scope::root_claims(roots, locks));
  }

  /// Gives up the holder's leases (and a task's baseline with them); how
  /// many there were.
  int drop(const std::string& holder) {
    int n = store::drop_leases(c, holder);
    auto st = c.use("DELETE FROM bg_baseline WHERE task_id = ?1");
    st.bind(1, holder);
    st.run();
    return n;
  }

  // -- slots and claims --

  size_t slots_held() {
    size_t n = 0;
    for (auto& row : load_where("state IN ('ready', 'starting', 'running', "
                                "'checking', 'blocked')"))
      if (holds_slot(row.t.state, row.t.attempts > 0))
        ++n;
    return n;
  }

  size_t free_slots(const bg_limits& limits) {
    auto held = slots_held();
    return limits.max_concurrent > held ? limits.max_concurrent - held : 0;
  }

  std::vector<std::pair<std::string, bg_state>>
  prerequisites(const std::string& id) {
    auto st = c.use("SELECT d.prerequisite, p.state FROM bg_deps d "
                    "JOIN bg_tasks p ON p.id = d.prerequisite "
                    "WHERE d.task_id = ?1 ORDER BY p.seq");
    st.bind(1, id);
    std::vector<std::pair<std::string, bg_state>> result;
    while (st.step()) {
      bg_state s = bg_state::queued;
      from_string(st.text(1), s);
      result.emplace_back(st.text(0), s);
    }
    return result;
  }

  candidate candidate_of(const stored& row) {
    auto deps = status_of(prerequisites(row.t.id));
    candidate c{row.t.id, row.t.roots, row.t.locks, deps.ready, ""};
    if (!deps.ready)
      c.deps_reason = deps.blocker ? "is blocked: " + deps.reason()
                                   : "waits for " + join(deps.pending);
    return c;
  }

  /// Takes the task's leases and hands out a token: ready.
  dispatch claim(stored& row, const std::string& why) {
    take(row.t.id, row.t.roots, row.t.locks);
    auto token = new_token();
    auto kind
      = row.t.continuation ? token_kind::continuation : token_kind::dispatch;
    auto expires = now + token_lifetime_ms;
    change(
      row, bg_state::ready,
      [&](stored& t) {
        t.token = token;
        t.kind = to_string(kind);
        t.t.token_expires_ms = expires;
        t.t.token_consumed = false;
        t.t.cancel_requested = false;
        t.t.attempts += 1;
        t.t.reason.reset();
      },
      json{{"event", why}, {"token_kind", to_string(kind)}});
    dispatch d;
    d.task_id = row.t.id;
    d.token = token;
    d.kind = kind;
    d.expires_ms = expires;
    d.prompt = row.t.prompt;
    if (kind == token_kind::continuation)
      d.prompt += "\n\nContinuation request: " + *row.t.continuation;
    d.title = row.t.title;
    d.agent = row.t.agent;
    return d;
  }

  /// Whether `row` may take a slot and its leases now; why not otherwise.
  std::string cannot_claim(const stored& row, const bg_limits& limits,
                           bool needs_slot) {
    if (needs_slot && free_slots(limits) == 0)
      return "no free slot (control.maxConcurrent is "
             + std::to_string(limits.max_concurrent) + ")";
    static const std::vector<std::string> no_roots;
    auto conflict = find_conflict(
      row.t.id, limits.enforce_write_roots ? row.t.roots : no_roots,
      row.t.locks, leases());
    if (conflict)
      return "waits: its " + conflict->describe();
    return {};
  }

  // -- the passes every writing call makes --

  /// Tokens handed out and never used, past their expiry.
  void expire() {
    auto rows = load_where("token IS NOT NULL AND token_consumed = 0 AND "
                           "token_expires_ms <= "
                           + std::to_string(now)
                           + " AND state IN ('ready', 'cancelled')");
    for (auto& row : rows) {
      json detail{{"event", "token expired"},
                  {"token_digest", token_digest(*row.token)},
                  {"token_fate", "expired"}};
      drop(row.t.id);
      auto to = row.t.state == bg_state::ready
                  ? std::optional<bg_state>{bg_state::queued}
                  : std::nullopt;
      change(
        row, to,
        [&](stored& t) {
          t.token.reset();
          t.kind.reset();
          t.t.token_expires_ms.reset();
          t.t.cancel_requested = false;
          if (to)
            t.t.reason = "its token expired before a child was linked";
        },
        detail);
    }
  }

  /// Tasks waiting for their prerequisites: blocked while one failed or was
  /// cancelled (naming it), queued again once none is.
  void settle() {
    for (auto& row : load_where("state = 'queued' OR (state = 'blocked' AND "
                                "attempts = 0)")) {
      auto deps = status_of(prerequisites(row.t.id));
      if (deps.blocker) {
        auto reason = deps.reason();
        if (row.t.state == bg_state::queued || row.t.reason != reason)
          change(
            row, bg_state::blocked,
            [&](stored& t) {
              t.t.reason = reason;
            },
            json{{"event", "dependency"}});
      } else if (row.t.state == bg_state::blocked) {
        change(
          row, bg_state::queued,
          [](stored& t) {
            t.t.reason.reset();
          },
          json{{"event", "dependency"}});
      }
    }
  }

  // -- tokens --

  /// The task holding `token`; refuses a used, expired or unknown one.
  stored by_token(const std::string& token) {
    if (!token.empty()) {
      auto st
        = c.use("SELECT " + task_columns() + " FROM bg_tasks WHERE token = ?1");
      st.bind(1, token);
      if (st.step())
        return read_stored(st);
      auto fate = c.use("SELECT json_extract(detail, '$.token_fate'), task_id "
                        "FROM bg_events WHERE json_extract(detail, "
                        "'$.token_digest') = ?1 ORDER BY id DESC LIMIT 1");
      fate.bind(1, token_digest(token));
      if (fate.step()) {
        auto what = fate.opt_text(0).value_or("");
        auto task = fate.opt_text(1).value_or("?");
        if (what == "expired")
          refuse(control_errc::token_expired,
                 "the token of task " + task + " expired");
        refuse(control_errc::token_used,
               "the token of task " + task + " was used already");
      }
    }
    refuse(control_errc::not_found, "unknown token");
  }

  void commit_baseline(const std::string& id, const snapshot& snap) {
    for (auto& [path, fingerprint] : snap) {
      auto st = c.use("INSERT OR REPLACE INTO bg_baseline (task_id, path, "
                      "fingerprint) VALUES (?1, ?2, ?3)");
      st.bind(1, id).bind(2, path).bind(3, fingerprint);
      st.run();
    }
  }
};

snapshot load_baseline(sqlite::connection& c, const std::string& id) {
  auto st = c.use("SELECT path, fingerprint FROM bg_baseline "
                  "WHERE task_id = ?1");
  st.bind(1, id);
  snapshot s;
  while (st.step())
    s[st.text(0)] = st.text(1);
  return s;
}

bool has_baseline(sqlite::connection& c, const std::string& id) {
  auto st = c.use("SELECT 1 FROM bg_baseline WHERE task_id = ?1 LIMIT 1");
  st.bind(1, id);
  return st.step();
}

} // namespace

// --- the store ---------------------------------------------------------------

bg_store::bg_store(store::ledger& db, const std::filesystem::path& repo_top)
  : db_(db), repo_(repo_top), run_lock_(db.run_lock_file()) {}

prepare_result bg_store::prepare(const bg_contract& contract,
                                 const bg_limits& limits, int64_t now_ms) {
  validate_contract(contract);
  auto roots = canonical_roots(repo_, contract.roots);
  auto locks = unique_in_order(contract.locks);
  std::sort(locks.begin(), locks.end());
  auto deps = unique_in_order(contract.deps);
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  for (auto& d : deps)
    if (!x.load(d))
      refuse(control_errc::bad_request, "unknown dependency " + d);
  x.expire();
  auto seq = c.scalar("SELECT coalesce(max(seq), 0) + 1 FROM bg_tasks");
  auto id = "bg-" + std::to_string(seq);
  {
    auto st = c.use(
      "INSERT INTO bg_tasks (id, seq, title, agent, prompt, session, roots, "
      "locks, validations, state, created_ms, updated_ms) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'queued', ?10, ?10)");
    st.bind(1, id).bind(2, seq).bind(3, contract.title);
    st.bind(4, contract.agent).bind(5, contract.prompt);
    st.bind(6, contract.session).bind(7, sqlite::encode_list(roots));
    st.bind(8, sqlite::encode_list(locks));
    st.bind(9, sqlite::encode_list(contract.validations)).bind(10, now_ms);
    st.run();
  }
  for (auto& d : deps) {
    auto st = c.use("INSERT INTO bg_deps (task_id, prerequisite) "
                    "VALUES (?1, ?2)");
    st.bind(1, id).bind(2, d);
    st.run();
  }
  auto row = x.must_load(id);
  x.event(id, "created", std::nullopt, bg_state::queued,
          json{{"title", contract.title}, {"roots", roots}, {"deps", deps}});
  x.changes.push_back(bg_change{id, "created", std::nullopt, bg_state::queued,
                                x.complete(row.t)});
  prepare_result result;
  x.settle();
  row = x.must_load(id);
  if (row.t.state == bg_state::queued) {
    // At once only when it is the oldest eligible work: it never overtakes
    // older queued tasks that could take the slot.
    std::vector<candidate> candidates;
    for (auto& q : x.load_where("state = 'queued'"))
      candidates.push_back(x.candidate_of(q));
    auto picked = choose(candidates, x.leases(), x.free_slots(limits),
                         limits.enforce_write_roots);
    if (picked.index && candidates[*picked.index].id == id) {
      result.dispatch = x.claim(row, "prepared");
    } else {
      auto own = choose(candidates, x.leases(), x.free_slots(limits),
                        limits.enforce_write_roots, id);
      auto why
        = own.index ? std::string{"older queued work goes first"} : own.reason;
      x.change(row, std::nullopt, [&](stored& t) {
        t.t.reason = why;
      });
    }
  }
  result.task = x.complete(x.must_load(id).t);
  result.changes = std::move(x.changes);
  txn.commit();
  return result;
}

start_result bg_store::start(const std::optional<std::string>& task_id,
                             const bg_limits& limits, int64_t now_ms) {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  start_result result;
  if (task_id)
    x.must_load(*task_id);
  x.expire();
  x.settle();
  if (task_id) {
    auto row = x.must_load(*task_id);
    if (row.t.state != bg_state::queued) {
      result.task = x.complete(row.t);
      result.reason = "task " + row.t.id + " is " + to_string(row.t.state)
                      + (row.t.reason ? " (" + *row.t.reason + ")" : "");
    }
  }
  if (result.reason.empty()) {
    auto queued = x.load_where("state = 'queued'");
    std::vector<candidate> candidates;
    for (auto& q : queued)
      candidates.push_back(x.candidate_of(q));
    auto picked = choose(candidates, x.leases(), x.free_slots(limits),
                         limits.enforce_write_roots, task_id);
    if (picked.index) {
      auto& row = queued[*picked.index];
      result.dispatch = x.claim(row, "started");
      result.task = x.complete(x.must_load(row.t.id).t);
    } else {
      result.reason = picked.reason;
      if (task_id)
        for (auto& q : queued)
          if (q.t.id == *task_id)
            result.task = x.complete(q.t);
    }
  }
  result.changes = std::move(x.changes);
  txn.commit();
  return result;
}

link_result bg_store::consume(const std::string& token, int64_t now_ms) {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  auto row = x.by_token(token);
  if (row.t.token_consumed)
    refuse(control_errc::token_used,
           "the token of task " + row.t.id + " was used already");
  if (row.t.token_expires_ms && *row.t.token_expires_ms <= now_ms)
    refuse(control_errc::token_expired,
           "the token of task " + row.t.id + " expired");
  if (row.t.state != bg_state::ready)
    refuse(control_errc::invalid_state, "task " + row.t.id + " is "
                                          + to_string(row.t.state)
                                          + "; its child must not start");
  x.change(
    row, bg_state::starting,
    [](stored& t) {
      t.t.token_consumed = true;
    },
    json{{"event", "token consumed"}});
  link_result result{x.complete(row.t), false, std::move(x.changes)};
  txn.commit();
  return result;
}

link_result bg_store::link(const std::string& token,
                           const std::string& child_session, int64_t now_ms) {
  if (child_session.empty())
    refuse(control_errc::bad_request, "link needs the child's session");
  auto& c = *db_.db_;
  // The baseline is taken before the write transaction: walking the roots
  // must not hold the ledger's write lock.
  std::optional<snapshot> baseline;
  {
    bg_txn peek{c, now_ms, run_lock_};
    std::optional<stored> row;
    try {
      row = peek.by_token(token);
    } catch (const control_error&) {
      // Refused again, and said why, inside the transaction.
    }
    if (row && !has_baseline(c, row->t.id))
      baseline = take_snapshot(repo_.root(), row->t.roots);
  }
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  auto row = x.by_token(token);
  auto& id = row.t.id;
  if (!row.t.token_consumed && row.t.token_expires_ms
      && *row.t.token_expires_ms <= now_ms && row.t.state == bg_state::ready)
    refuse(control_errc::token_expired, "the token of task " + id + " expired");
  {
    auto st = c.use("SELECT id FROM bg_tasks WHERE child_session = ?1 AND id "
                    "<> ?2 AND state IN ('starting', 'running', 'checking', "
                    "'blocked') LIMIT 1");
    st.bind(1, child_session).bind(2, id);
    if (st.step())
      refuse(control_errc::bad_request, "session " + in_quotes(child_session)
                                          + " is the child of task "
                                          + st.text(0) + " already");
  }
  json detail{{"event", "linked"},
              {"child_session", child_session},
              {"token_digest", token_digest(token)},
              {"token_fate", "used"}};
  auto forget_token = [&](stored& t) {
    t.token.reset();
    t.kind.reset();
    t.t.token_expires_ms.reset();
    t.t.token_consumed = false;
    t.t.child_session = child_session;
  };
  link_result result;
  switch (row.t.state) {
    case bg_state::ready:
    case bg_state::starting:
      if (!has_baseline(c, id)) {
        if (!baseline)
          baseline = take_snapshot(repo_.root(), row.t.roots);
        x.commit_baseline(id, *baseline);
      }
      x.change(
        row, bg_state::running,
        [&](stored& t) {
          forget_token(t);
          t.t.reason.reset();
        },
        detail);
      break;
    case bg_state::cancelled:
      // Cancelled before its child was linked: the child is accounted for
      // now (the harness aborts it), so the roots are free again.
      x.drop(id);
      detail["event"] = "linked late";
      x.change(
        row, std::nullopt,
        [&](stored& t) {
          forget_token(t);
          t.t.cancel_requested = false;
        },
        detail);
      result.abort_child = true;
      break;
    case bg_state::interrupted:
      // A restart came between dispatch and link: the child is aborted and
      // the task keeps its leases until it is cancelled or continued.
      detail["event"] = "linked late";
      x.change(row, std::nullopt, forget_token, detail);
      result.abort_child = true;
      break;
    default:
      refuse(control_errc::invalid_state,
             "task " + id + " is " + to_string(row.t.state));
  }
  result.task = x.complete(row.t);
  result.changes = std::move(x.changes);
  txn.commit();
  return result;
}

std::vector<bg_change> bg_store::expire(int64_t now_ms) {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  x.expire();
  x.settle();
  txn.commit();
  return std::move(x.changes);
}

std::vector<bg_task>
bg_store::status(const std::optional<std::string>& task_id) const {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, false};
  bg_txn x{c, 0, run_lock_};
  std::vector<bg_task> result;
  if (task_id) {
    result.push_back(x.complete(x.must_load(*task_id).t));
    return result;
  }
  for (auto& row : x.load_where("1"))
    result.push_back(x.complete(row.t));
  return result;
}

std::optional<bg_task> bg_store::find(const std::string& task_id) const {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, false};
  bg_txn x{c, 0, run_lock_};
  auto row = x.load(task_id);
  if (!row)
    return std::nullopt;
  return x.complete(row->t);
}

std::vector<bg_event>
bg_store::events(const std::optional<std::string>& task_id,
                 int64_t after_id) const {
  auto& c = *db_.db_;
  auto st = c.use("SELECT id, coalesce(task_id, ''), kind, from_state, "
                  "to_state, detail, at_ms FROM bg_events "
                  "WHERE id > ?1 AND (?2 IS NULL OR task_id = ?2) ORDER BY id");
  st.bind(1, after_id).bind(2, task_id);
  std::vector<bg_event> result;
  while (st.step()) {
    bg_event e;
    e.id = st.int64(0);
    e.task_id = st.text(1);
    e.kind = st.text(2);
    bg_state s = bg_state::queued;
    if (auto f = st.opt_text(3); f && from_string(*f, s))
      e.from = s;
    if (auto t = st.opt_text(4); t && from_string(*t, s))
      e.to = s;
    e.detail_json = st.text(5);
    e.at_ms = st.int64(6);
    result.push_back(std::move(e));
  }
  return result;
}

write_verdict bg_store::may_write(const std::string& child_session,
                                  const std::string& path,
                                  bool enforce_write_roots) const {
  auto& c = *db_.db_;
  std::optional<stored> row;
  {
    sqlite::transaction txn{c, false};
    bg_txn x{c, 0, run_lock_};
    // The live task of the session first, else its latest.
    auto rows = x.load_where("child_session = ?1", child_session);
    for (auto& r : rows)
      if (!row || r.t.state == bg_state::running
          || (row->t.state != bg_state::running && r.t.seq > row->t.seq))
        row = r;
  }
  write_verdict v;
  if (!row) {
    v.allowed = true;
    v.path = path;
    v.reason = "session " + in_quotes(child_session)
               + " is not the child of a managed task";
    return v;
  }
  auto& t = row->t;
  v.task_id = t.id;
  v.state = t.state;
  auto where = within_roots(repo_, path, t.roots);
  v.path = where.path;
  if (!may_write_in(t.state)) {
    v.reason = "task " + t.id + " is " + to_string(t.state)
               + "; its child may not write";
    return v;
  }
  if (enforce_write_roots && !where.inside) {
    v.reason = "task " + t.id + ": " + where.reason;
    return v;
  }
  v.allowed = true;
  return v;
}

tree_diff bg_store::recorded_changes(const std::string& task_id) const {
  auto& c = *db_.db_;
  snapshot before;
  std::vector<std::string> roots;
  {
    sqlite::transaction txn{c, false};
    bg_txn x{c, 0, run_lock_};
    auto row = x.must_load(task_id);
    if (!has_baseline(c, task_id))
      return {};
    before = load_baseline(c, task_id);
    roots = row.t.roots;
  }
  return compare(before, take_snapshot(repo_.root(), roots));
}

completion_check bg_store::begin_completion(const completion_claim& claim,
                                            const bg_limits& limits,
                                            int64_t now_ms) {
  auto& c = *db_.db_;
  // The tree now, taken before the write transaction (see link).
  std::optional<snapshot> now_tree;
  if (claim.status == completion_status::done && limits.enforce_write_roots) {
    auto task = find(claim.task_id);
    if (task)
      now_tree = take_snapshot(repo_.root(), task->roots);
  }
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  auto row = x.must_load(claim.task_id);
  auto& id = row.t.id;
  if (row.t.state == bg_state::checking)
    refuse(control_errc::invalid_state,
           "the completion of task " + id + " is already being processed");
  if (row.t.state == bg_state::cancelled)
    refuse(control_errc::invalid_state, "task " + id + " is cancelled");
  if (row.t.state != bg_state::running)
    refuse(control_errc::invalid_state,
           "task " + id + " is " + to_string(row.t.state)
             + "; only a running task can complete");
  completion_check result;
  if (claim.status == completion_status::blocked) {
    auto why = claim.result.empty() ? std::string{"its child is blocked"}
                                    : claim.result;
    x.change(
      row, bg_state::blocked,
      [&](stored& t) {
        t.t.reason = why;
        t.t.result = claim.result;
        t.t.files = claim.files;
      },
      json{{"event", "completion"}, {"status", "blocked"}});
    result.accepted = true;
  } else {
    std::vector<std::string> claimed;
    if (limits.enforce_write_roots) {
      for (auto& f : claim.files) {
        auto where = within_roots(repo_, f, row.t.roots);
        if (!where.inside)
          result.outside.push_back(where.path.empty() ? f : where.path);
        else
          claimed.push_back(where.path);
      }
      std::sort(claimed.begin(), claimed.end());
      claimed.erase(std::unique(claimed.begin(), claimed.end()), claimed.end());
      if (!now_tree)
        now_tree = take_snapshot(repo_.root(), row.t.roots);
      auto recorded = compare(load_baseline(c, id), *now_tree).all();
      result.unclaimed = sorted_difference(recorded, claimed);
      result.unchanged = sorted_difference(claimed, recorded);
    } else {
      claimed = claim.files;
    }
    if (!result.outside.empty() || !result.unclaimed.empty()
        || !result.unchanged.empty()) {
      std::vector<std::string> parts;
      if (!result.outside.empty())
        parts.push_back("outside its roots: " + join(result.outside));
      if (!result.unclaimed.empty())
        parts.push_back("changed but not claimed: " + join(result.unclaimed));
      if (!result.unchanged.empty())
        parts.push_back("claimed but not changed: " + join(result.unchanged));
      result.reason = "the claim of task " + id
                      + " does not match the changes recorded under its "
                        "roots ("
                      + join(parts, "; ") + ")";
      x.change(
        row, std::nullopt,
        [&](stored& t) {
          t.t.reason = result.reason;
          t.t.result = claim.result;
          t.t.files = claim.files;
        },
        json{{"event", "completion rejected"},
             {"outside", result.outside},
             {"unclaimed", result.unclaimed},
             {"unchanged", result.unchanged}});
    } else {
      result.accepted = true;
      auto to = row.t.validations.empty() ? bg_state::done : bg_state::checking;
      if (to == bg_state::done)
        x.drop(id);
      x.change(
        row, to,
        [&](stored& t) {
          t.t.reason.reset();
          t.t.result = claim.result;
          t.t.files = claimed;
          t.t.output_tail.reset();
        },
        json{{"event", "completion"}, {"status", "done"}});
      if (to == bg_state::checking)
        result.validations = row.t.validations;
      else
        x.settle();
    }
  }
  result.task = x.complete(x.must_load(id).t);
  result.changes = std::move(x.changes);
  txn.commit();
  return result;
}

finish_result bg_store::finish_completion(const std::string& task_id,
                                          const validation_outcome& outcome,
                                          int64_t now_ms) {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  auto row = x.must_load(task_id);
  if (row.t.state == bg_state::cancelled)
    refuse(control_errc::invalid_state, "task " + task_id + " is cancelled");
  if (row.t.state != bg_state::checking)
    refuse(control_errc::invalid_state, "task " + task_id + " is "
                                          + to_string(row.t.state)
                                          + ", not being checked");
  if (outcome.passed) {
    x.drop(task_id);
    x.change(
      row, bg_state::done,
      [](stored& t) {
        t.t.reason.reset();
        t.t.output_tail.reset();
      },
      json{{"event", "validations passed"}});
    x.settle();
  } else {
    auto why = outcome.reason.empty() ? std::string{"Validation failed"}
                                      : outcome.reason;
    x.change(
      row, bg_state::running,
      [&](stored& t) {
        t.t.reason = why;
        t.t.output_tail = keep_tail(outcome.tail);
      },
      json{{"event", "validation failed"}});
  }
  finish_result result{x.complete(row.t), std::move(x.changes)};
  txn.commit();
  return result;
}

continue_result bg_store::continue_task(const std::string& task_id,
                                        const std::string& text,
                                        const bg_limits& limits,
                                        int64_t now_ms) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    refuse(control_errc::bad_request, "a continuation needs its request text");
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  x.must_load(task_id);
  x.expire();
  auto row = x.must_load(task_id);
  auto state = row.t.state;
  bool pending = row.token.has_value()
                 || (state == bg_state::queued && row.t.continuation);
  if (pending && state != bg_state::interrupted)
    refuse(control_errc::invalid_state,
           "task " + task_id
             + " cannot continue yet: its last token was not used");
  bool dispatched = row.t.attempts > 0;
  if (state == bg_state::blocked && !dispatched)
    refuse(control_errc::invalid_state,
           "task " + task_id + " is blocked by a dependency ("
             + row.t.reason.value_or("") + "); it cannot be continued");
  if (state != bg_state::blocked && state != bg_state::interrupted
      && state != bg_state::failed)
    refuse(control_errc::invalid_state,
           "task " + task_id + " is " + to_string(state)
             + "; only a blocked, interrupted or failed task can be continued");
  // A restart's interrupted task still holds a token its late child may
  // bring: the continuation replaces it.
  if (row.token)
    x.event(task_id, "updated", state, state,
            json{{"event", "token replaced"},
                 {"token_digest", token_digest(*row.token)},
                 {"token_fate", "expired"}});
  row.t.continuation = text;
  auto why_not = x.cannot_claim(row, limits, !holds_slot(state, dispatched));
  continue_result result;
  if (why_not.empty()) {
    // The request is saved with the token, in one change of the row.
    result.dispatch = x.claim(row, "continued");
  } else {
    x.drop(task_id);
    x.change(
      row, bg_state::queued,
      [&](stored& t) {
        t.token.reset();
        t.kind.reset();
        t.t.token_expires_ms.reset();
        t.t.token_consumed = false;
        t.t.reason = why_not;
      },
      json{{"event", "continued"}});
  }
  x.settle();
  result.task = x.complete(x.must_load(task_id).t);
  result.changes = std::move(x.changes);
  txn.commit();
  return result;
}

cancel_result bg_store::cancel(const std::string& task_id, int64_t now_ms) {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  auto row = x.must_load(task_id);
  cancel_result result;
  auto state = row.t.state;
  if (state == bg_state::done)
    refuse(control_errc::invalid_state,
           "task " + task_id + " is done; it cannot be cancelled");
  if (state == bg_state::cancelled) {
    if (!row.t.cancel_requested)
      refuse(control_errc::invalid_state,
             "task " + task_id + " is already cancelled");
    // Repeated: the unlinked child is given up on.
    result.released = x.drop(task_id) > 0;
    json detail{{"event", "released"}};
    if (row.token)
      detail.update(json{{"token_digest", token_digest(*row.token)},
                         {"token_fate", "expired"}});
    x.change(
      row, std::nullopt,
      [](stored& t) {
        t.t.cancel_requested = false;
        t.token.reset();
        t.kind.reset();
        t.t.token_expires_ms.reset();
        t.t.token_consumed = false;
      },
      detail);
    result.released = true;
    result.message = "released";
  } else if (state == bg_state::ready || state == bg_state::starting) {
    // The token is out: a child may be on its way. It keeps the roots until
    // it links (and is aborted), its token expires, or the cancel is
    // repeated.
    x.change(
      row, bg_state::cancelled,
      [](stored& t) {
        t.t.cancel_requested = true;
        t.t.reason = "cancelled";
      },
      json{{"event", "cancelled"}});
    result.message = "cancelled; its roots stay reserved until its "
                     "dispatched child is linked (and must then be aborted), "
                     "its token expires, or the cancel is repeated";
  } else {
    result.released = x.drop(task_id) > 0;
    if (row.t.child_session
        && (state == bg_state::running || state == bg_state::checking
            || state == bg_state::blocked))
      result.abort_child = row.t.child_session;
    json detail{{"event", "cancelled"}};
    if (row.token)
      detail.update(json{{"token_digest", token_digest(*row.token)},
                         {"token_fate", "expired"}});
    x.change(
      row, bg_state::cancelled,
      [](stored& t) {
        t.t.reason = "cancelled";
        t.t.cancel_requested = false;
        t.token.reset();
        t.kind.reset();
        t.t.token_expires_ms.reset();
        t.t.token_consumed = false;
      },
      detail);
    result.message = "cancelled";
  }
  x.settle();
  result.task = x.complete(x.must_load(task_id).t);
  result.changes = std::move(x.changes);
  txn.commit();
  return result;
}

std::vector<bg_change> bg_store::fail(const std::string& task_id,
                                      const std::string& reason,
                                      int64_t now_ms) {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  auto row = x.must_load(task_id);
  auto state = row.t.state;
  if (!allowed(state, bg_state::failed))
    refuse(control_errc::invalid_state, "task " + task_id + " is "
                                          + to_string(state)
                                          + "; it cannot be marked failed");
  x.drop(task_id);
  json detail{{"event", "failed"}};
  if (row.token)
    detail.update(json{{"token_digest", token_digest(*row.token)},
                       {"token_fate", "expired"}});
  x.change(
    row, bg_state::failed,
    [&](stored& t) {
      t.t.reason = reason.empty() ? std::string{"failed"} : reason;
      t.token.reset();
      t.kind.reset();
      t.t.token_expires_ms.reset();
      t.t.token_consumed = false;
    },
    detail);
  x.settle();
  txn.commit();
  return std::move(x.changes);
}

std::vector<bg_change> bg_store::add_dependency(const std::string& task_id,
                                                const std::string& prerequisite,
                                                int64_t now_ms) {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  auto row = x.must_load(task_id);
  x.must_load(prerequisite);
  if (task_id == prerequisite)
    refuse(control_errc::bad_request,
           "dependency cycle: " + task_id + " -> " + task_id);
  bool waiting = row.t.state == bg_state::queued
                 || (row.t.state == bg_state::blocked && row.t.attempts == 0);
  if (!waiting)
    refuse(control_errc::invalid_state,
           "task " + task_id + " is " + to_string(row.t.state)
             + "; only queued work can gain a dependency");
  dependency_graph graph;
  {
    auto st = c.use("SELECT task_id, prerequisite FROM bg_deps");
    while (st.step())
      graph[st.text(0)].push_back(st.text(1));
  }
  graph[task_id].push_back(prerequisite);
  if (auto cycle = find_cycle(graph))
    refuse(control_errc::bad_request,
           "dependency cycle: " + join(*cycle, " -> "));
  {
    auto st = c.use("INSERT OR IGNORE INTO bg_deps (task_id, prerequisite) "
                    "VALUES (?1, ?2)");
    st.bind(1, task_id).bind(2, prerequisite);
    st.run();
  }
  x.change(
    row, std::nullopt, [](stored&) {},
    json{{"event", "dependency added"}, {"prerequisite", prerequisite}});
  x.settle();
  txn.commit();
  return std::move(x.changes);
}

namespace {

// Running tasks whose child is gone become interrupted and give up their
// leases.
void interrupt_running(bg_txn& x, std::vector<stored> rows,
                       const std::string& why) {
  for (auto& row : rows) {
    x.drop(row.t.id);
    x.change(
      row, bg_state::interrupted,
      [&](stored& t) {
        t.t.reason = why;
      },
      json{{"event", "child gone"}});
  }
}

} // namespace

std::vector<bg_change> bg_store::end_session(const std::string& child_session,
                                             int64_t now_ms) {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  interrupt_running(
    x, x.load_where("state = 'running' AND child_session = ?1", child_session),
    "its child session " + in_quotes(child_session)
      + " ended without reporting its completion");
  txn.commit();
  return std::move(x.changes);
}

std::vector<bg_change>
bg_store::reconcile(const std::vector<std::string>& alive, int64_t now_ms) {
  std::set<std::string> living(alive.begin(), alive.end());
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  std::vector<stored> gone;
  for (auto& row : x.load_where("state = 'running'"))
    if (!row.t.child_session || !living.count(*row.t.child_session))
      gone.push_back(row);
  interrupt_running(x, std::move(gone),
                    "its child session is gone (the harness no longer knows "
                    "it)");
  txn.commit();
  return std::move(x.changes);
}

std::vector<bg_change> bg_store::recover(int64_t now_ms) {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, true};
  bg_txn x{c, now_ms, run_lock_};
  // A token that expired while the server was down frees its task first.
  x.expire();
  for (auto& row : x.load_where("state IN ('ready', 'starting')"))
    x.change(
      row, bg_state::interrupted,
      [](stored& t) {
        t.t.reason = "the server restarted before its child was linked; "
                     "it keeps its roots until it is cancelled or continued";
      },
      json{{"event", "recovered"}});
  for (auto& row : x.load_where("state = 'checking'"))
    x.change(
      row, bg_state::running,
      [](stored& t) {
        t.t.reason = "the server restarted while checking its completion; "
                     "complete it again";
      },
      json{{"event", "recovered"}});
  txn.commit();
  return std::move(x.changes);
}

std::vector<lease> bg_store::leases() const {
  auto& c = *db_.db_;
  sqlite::transaction txn{c, false};
  return store::live_leases(c, run_lock_, false);
}

} // namespace taskforce::control
