#include "src/store/ledger.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <iterator>
#include <random>
#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

namespace taskforce::store {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

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
  for (auto x :
       {attempt_state::running, attempt_state::passed, attempt_state::failed,
        attempt_state::blocked, attempt_state::interrupted})
    if (name == to_string(x)) {
      out = x;
      return true;
    }
  return false;
}

namespace {

// Text that may hold bytes from a process's output must never make the JSON
// writer throw: invalid UTF-8 is replaced.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string dump(const ordered_json& j) {
  return j.dump(-1, ' ', false, ordered_json::error_handler_t::replace);
}

json parse_object(const std::string& text, const char* what) {
  auto j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw ledger_error(ledger_errc::bad_json,
                       std::string{what} + " is not a JSON object: " + text);
  return j;
}

template<class Json>
Json nullable(const std::optional<std::string>& x) {
  return x ? Json(*x) : Json(nullptr);
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

} // namespace

// --- statements --------------------------------------------------------------

namespace {

[[noreturn]] void fail(sqlite3* db, const std::string& what) {
  throw ledger_error(ledger_errc::sqlite,
                     what + ": " + sqlite3_errmsg(db) + " (SQLite error "
                       + std::to_string(sqlite3_extended_errcode(db)) + ")");
}

// One use of a cached prepared statement: bound, stepped, then reset and
// unbound on destruction so the next use starts clean.
class statement {
 public:
  statement(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}

  ~statement() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }

  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  statement& bind(int i, int64_t x) {
    return check(sqlite3_bind_int64(s_, i, x));
  }

  statement& bind(int i, int x) {
    return bind(i, static_cast<int64_t>(x));
  }

  statement& bind(int i, double x) {
    return check(sqlite3_bind_double(s_, i, x));
  }

  statement& bind(int i, const std::string& x) {
    return check(sqlite3_bind_text(s_, i, x.data(), static_cast<int>(x.size()),
                                   SQLITE_TRANSIENT));
  }

  statement& bind(int i, const char* x) {
    return check(sqlite3_bind_text(s_, i, x, -1, SQLITE_TRANSIENT));
  }

  statement& bind(int i, std::nullptr_t) {
    return check(sqlite3_bind_null(s_, i));
  }

  template<class T>
  statement& bind(int i, const std::optional<T>& x) {
    if (x)
      return bind(i, *x);
    return bind(i, nullptr);
  }

  /// True when a row is available.
  bool step() {
    auto rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW)
      return true;
    if (rc == SQLITE_DONE)
      return false;
    fail(db_, std::string{"ledger statement failed: "} + sqlite3_sql(s_));
  }

  /// Steps to completion (for writes).
  void run() {
    while (step()) {
      // A write returns no rows; drain anything it does return.
    }
  }

  bool is_null(int col) const {
    return sqlite3_column_type(s_, col) == SQLITE_NULL;
  }

  int64_t int64(int col) const {
    return sqlite3_column_int64(s_, col);
  }

  int integer(int col) const {
    return sqlite3_column_int(s_, col);
  }

  double real(int col) const {
    return sqlite3_column_double(s_, col);
  }

  std::string text(int col) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
    auto n = sqlite3_column_bytes(s_, col);
    return p ? std::string(p, static_cast<size_t>(n)) : std::string{};
  }

  std::optional<std::string> opt_text(int col) const {
    if (is_null(col))
      return std::nullopt;
    return text(col);
  }

  std::optional<int64_t> opt_int64(int col) const {
    if (is_null(col))
      return std::nullopt;
    return int64(col);
  }

 private:
  statement& check(int rc) {
    if (rc != SQLITE_OK)
      fail(db_, "binding a ledger statement");
    return *this;
  }

  sqlite3* db_;
  sqlite3_stmt* s_;
};

// A transaction that rolls back unless committed. Writers take the write
// lock at BEGIN (IMMEDIATE) so they wait in busy_timeout up front instead of
// failing halfway; readers use a deferred one for a consistent snapshot.
class transaction {
 public:
  transaction(sqlite3* db, bool write) : db_(db) {
    exec(write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED");
  }

  ~transaction() {
    if (!done_)
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }

  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;

  void commit() {
    exec("COMMIT");
    done_ = true;
  }

 private:
  void exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
      fail(db_, std::string{"ledger "} + sql);
  }

  sqlite3* db_;
  bool done_ = false;
};

} // namespace

// Prepared once per connection: a transition runs half a dozen statements,
// and preparing them anew would cost more than the writes themselves.
struct detail::statement_cache {
  sqlite3* db = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> map;

  ~statement_cache() {
    for (auto& kv : map)
      sqlite3_finalize(kv.second);
  }

  statement use(const std::string& sql) {
    auto i = map.find(sql);
    if (i == map.end()) {
      sqlite3_stmt* s = nullptr;
      if (sqlite3_prepare_v3(db, sql.c_str(), static_cast<int>(sql.size()),
                             SQLITE_PREPARE_PERSISTENT, &s, nullptr)
          != SQLITE_OK)
        fail(db, "preparing a ledger statement: " + sql);
      i = map.emplace(sql, s).first;
    }
    return statement{db, i->second};
  }
};

namespace {

void exec_script(sqlite3* db, const char* sql, const char* what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw ledger_error(ledger_errc::sqlite, std::string{what} + ": " + msg);
  }
}

int64_t pragma_int(sqlite3* db, const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK)
    fail(db, sql);
  int64_t result = 0;
  auto rc = sqlite3_step(s);
  if (rc == SQLITE_ROW)
    result = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    fail(db, sql);
  return result;
}

// Version 1. Each table says why it exists; states are checked so a bug can
// never write a name the readers do not know.
constexpr const char* schema_v1 = R"sql(
-- One row per `taskforce run`.
CREATE TABLE IF NOT EXISTS runs (
  id              TEXT PRIMARY KEY,
  file            TEXT NOT NULL,
  file_hash       TEXT NOT NULL,
  base_branch     TEXT NOT NULL,
  state           TEXT NOT NULL
                  CHECK (state IN ('running','paused','completed','aborted')),
  reason          TEXT,
  created_ms      INTEGER NOT NULL,
  updated_ms      INTEGER NOT NULL,
  max_concurrency INTEGER NOT NULL,
  config_json     TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_created ON runs (created_ms);

-- The tasks of a run, in file order (idx).
CREATE TABLE IF NOT EXISTS tasks (
  run_id         TEXT NOT NULL REFERENCES runs (id),
  task_id        TEXT NOT NULL,
  idx            INTEGER NOT NULL,
  title          TEXT NOT NULL,
  state          TEXT NOT NULL
                 CHECK (state IN ('pending','ready','running','verifying',
                                  'merging','done','failed','blocked',
                                  'skipped','held','review','conflict',
                                  'interrupted')),
  attempts       INTEGER NOT NULL DEFAULT 0,
  branch         TEXT,
  worktree       TEXT,
  merge_commit   TEXT,
  reason         TEXT,
  conflict_paths TEXT NOT NULL DEFAULT '[]',
  gate_tail      TEXT,
  started_ms     INTEGER,
  finished_ms    INTEGER,
  updated_ms     INTEGER NOT NULL,
  PRIMARY KEY (run_id, task_id)
) WITHOUT ROWID;

-- One row per worker attempt; interrupted ones stay, uncounted.
CREATE TABLE IF NOT EXISTS attempts (
  run_id        TEXT NOT NULL,
  task_id       TEXT NOT NULL,
  number        INTEGER NOT NULL,
  state         TEXT NOT NULL
                CHECK (state IN ('running','passed','failed','blocked',
                                 'interrupted')),
  started_ms    INTEGER NOT NULL,
  ended_ms      INTEGER,
  exit_code     INTEGER,
  interrupted   INTEGER NOT NULL DEFAULT 0,
  repairs       INTEGER NOT NULL DEFAULT 0,
  worker_log    TEXT NOT NULL,
  verify_log    TEXT NOT NULL,
  input_tokens  INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  cost_usd      REAL NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, task_id, number),
  FOREIGN KEY (run_id, task_id) REFERENCES tasks (run_id, task_id)
) WITHOUT ROWID;

-- The append-only history; seq orders everything that ever happened. No
-- AUTOINCREMENT: rows are never deleted (see the triggers), so rowids are
-- never reused, and a commit writes one page less.
CREATE TABLE IF NOT EXISTS events (
  seq     INTEGER PRIMARY KEY,
  run_id  TEXT NOT NULL REFERENCES runs (id),
  task_id TEXT,
  at_ms   INTEGER NOT NULL,
  kind    TEXT NOT NULL,
  data    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_task ON events (run_id, task_id, seq);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'the event log is append-only'); END;
)sql";

constexpr const char* run_columns
  = "id, file, file_hash, base_branch, state, reason, created_ms, "
    "updated_ms, max_concurrency, config_json";

run_row read_run(const statement& st) {
  run_row r;
  r.id = st.text(0);
  r.file = st.text(1);
  r.file_hash = st.text(2);
  r.base_branch = st.text(3);
  from_string(st.text(4), r.state);
  r.reason = st.opt_text(5);
  r.created_ms = st.int64(6);
  r.updated_ms = st.int64(7);
  r.max_concurrency = static_cast<uint64_t>(st.int64(8));
  r.config_json = st.text(9);
  return r;
}

// Tasks with the usage of their attempts summed; ?1 is the run.
constexpr const char* task_select
  = "SELECT t.run_id, t.task_id, t.idx, t.title, t.state, t.attempts, "
    "t.branch, t.worktree, t.merge_commit, t.reason, t.conflict_paths, "
    "t.gate_tail, t.started_ms, t.finished_ms, "
    "coalesce(u.i, 0), coalesce(u.o, 0), coalesce(u.c, 0) "
    "FROM tasks t LEFT JOIN (SELECT task_id, sum(input_tokens) AS i, "
    "sum(output_tokens) AS o, sum(cost_usd) AS c FROM attempts "
    "WHERE run_id = ?1 GROUP BY task_id) u ON u.task_id = t.task_id "
    "WHERE t.run_id = ?1";

task_row read_task(const statement& st) {
  task_row t;
  t.run_id = st.text(0);
  t.id = st.text(1);
  t.index = st.integer(2);
  t.title = st.text(3);
  from_string(st.text(4), t.state);
  t.attempts = st.integer(5);
  t.branch = st.opt_text(6);
  t.worktree = st.opt_text(7);
  t.merge_commit = st.opt_text(8);
  t.reason = st.opt_text(9);
  auto paths = json::parse(st.text(10), nullptr, false);
  if (paths.is_array())
    for (auto& p : paths)
      if (p.is_string())
        t.conflict_paths.push_back(p.get<std::string>());
  t.gate_tail = st.opt_text(11);
  t.started_ms = st.opt_int64(12);
  t.finished_ms = st.opt_int64(13);
  t.usage.input_tokens = st.int64(14);
  t.usage.output_tokens = st.int64(15);
  t.usage.cost_usd = st.real(16);
  return t;
}

constexpr const char* attempt_columns
  = "run_id, task_id, number, state, started_ms, ended_ms, exit_code, "
    "interrupted, repairs, worker_log, verify_log, input_tokens, "
    "output_tokens, cost_usd";

attempt_row read_attempt(const statement& st) {
  attempt_row a;
  a.run_id = st.text(0);
  a.task_id = st.text(1);
  a.number = st.integer(2);
  from_string(st.text(3), a.state);
  a.started_ms = st.int64(4);
  a.ended_ms = st.opt_int64(5);
  if (!st.is_null(6))
    a.exit_code = st.integer(6);
  a.interrupted = st.integer(7) != 0;
  a.repairs = st.integer(8);
  a.worker_log = st.text(9);
  a.verify_log = st.text(10);
  a.usage.input_tokens = st.int64(11);
  a.usage.output_tokens = st.int64(12);
  a.usage.cost_usd = st.real(13);
  return a;
}

constexpr const char* event_columns = "seq, run_id, task_id, at_ms, kind, data";

event_row read_event(const statement& st) {
  event_row e;
  e.seq = st.int64(0);
  e.run_id = st.text(1);
  e.task_id = st.opt_text(2);
  e.at_ms = st.int64(3);
  e.kind = st.text(4);
  e.data_json = st.text(5);
  return e;
}

std::string task_name(const std::string& run_id, const std::string& task_id) {
  return "task " + task_id + " of run " + run_id;
}

} // namespace

std::string to_json_line(const event_row& x) {
  ordered_json j;
  j["seq"] = x.seq;
  j["run"] = x.run_id;
  j["task"] = nullable<ordered_json>(x.task_id);
  j["at_ms"] = x.at_ms;
  j["kind"] = x.kind;
  auto data = ordered_json::parse(x.data_json, nullptr, false);
  j["data"] = data.is_discarded() ? ordered_json(x.data_json) : data;
  return dump(j);
}

std::string to_status_json(const run_status& x) {
  ordered_json run;
  run["id"] = x.run.id;
  run["file"] = x.run.file;
  run["state"] = to_string(x.run.state);
  run["reason"] = nullable<ordered_json>(x.run.reason);
  auto tasks = ordered_json::array();
  for (auto& t : x.tasks) {
    ordered_json j;
    j["id"] = t.id;
    j["state"] = to_string(t.state);
    j["attempts"] = t.attempts;
    j["branch"] = nullable<ordered_json>(t.branch);
    j["merge_commit"] = nullable<ordered_json>(t.merge_commit);
    j["reason"] = nullable<ordered_json>(t.reason);
    tasks.push_back(std::move(j));
  }
  ordered_json j;
  j["run"] = std::move(run);
  j["tasks"] = std::move(tasks);
  return dump(j);
}

// --- opening -----------------------------------------------------------------

ledger::ledger(sqlite3* db, std::filesystem::path path)
  : db_(db), path_(std::move(path)), cache_(new detail::statement_cache) {
  cache_->db = db;
}

ledger::ledger(ledger&& other) noexcept
  : db_(std::exchange(other.db_, nullptr)), path_(std::move(other.path_)),
    cache_(std::move(other.cache_)) {}

ledger& ledger::operator=(ledger&& other) noexcept {
  if (this != &other) {
    cache_.reset();
    if (db_)
      sqlite3_close_v2(db_);
    db_ = std::exchange(other.db_, nullptr);
    path_ = std::move(other.path_);
    cache_ = std::move(other.cache_);
  }
  return *this;
}

ledger::~ledger() {
  // Statements first: a connection with live statements does not close.
  cache_.reset();
  if (db_)
    sqlite3_close_v2(db_);
}

namespace {

namespace fs = std::filesystem;

/// The tables every ledger has (a database without them is another
/// program's).
constexpr const char* ledger_tables[] = {"runs", "tasks", "attempts", "events"};

[[noreturn]] void not_a_ledger(const fs::path& path, const std::string& why) {
  throw ledger_error(ledger_errc::schema,
                     "the ledger " + path.string() + " " + why
                       + "; it was left as it is: restore it, or move it "
                         "away to start afresh (its runs are then forgotten)");
}

/// Refuses, before SQLite reads it, a file that cannot be a ledger: an
/// empty one, or one without SQLite's header.
void check_file(const fs::path& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec)
    return; // not a regular file: SQLite says what is wrong with it
  if (size == 0)
    not_a_ledger(path, "is empty, not a taskforce ledger");
  char magic[16] = {};
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr)
    return; // unreadable: SQLite says so
  auto got = std::fread(magic, 1, sizeof magic, f);
  std::fclose(f);
  if (got != sizeof magic || std::memcmp(magic, "SQLite format 3", 16) != 0)
    not_a_ledger(path, "is not a taskforce ledger (not an SQLite database)");
}

/// The schema version of an existing database, refusing (before anything
/// is written) one that is not a ledger or is newer than this taskforce.
int64_t existing_version(sqlite3* db, const fs::path& path) {
  int64_t version = 0;
  int64_t tables = 0;
  try {
    version = pragma_int(db, "PRAGMA user_version");
    std::string sql = "SELECT count(*) FROM sqlite_master WHERE type = "
                      "'table' AND name IN (";
    for (auto* t : ledger_tables)
      sql += std::string{sql.back() == '(' ? "" : ", "} + "'" + t + "'";
    sql += ")";
    tables = pragma_int(db, sql.c_str());
  } catch (const ledger_error& e) {
    if (sqlite3_errcode(db) == SQLITE_NOTADB
        || sqlite3_errcode(db) == SQLITE_CORRUPT)
      not_a_ledger(path, std::string{"is not a taskforce ledger ("}
                           + sqlite3_errmsg(db) + ")");
    throw;
  }
  if (version > ledger_schema_version)
    throw ledger_error(ledger_errc::schema,
                       "the ledger " + path.string() + " has schema version "
                         + std::to_string(version)
                         + ", newer than this taskforce knows ("
                         + std::to_string(ledger_schema_version) + ")");
  if (version < 1 || tables != static_cast<int64_t>(std::size(ledger_tables)))
    not_a_ledger(path, "is not a taskforce ledger (another program's "
                       "database)");
  return version;
}

void sync_folder(const fs::path& folder) {
  int fd = ::open(folder.empty() ? "." : folder.c_str(),
                  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// Creates a ledger at `path`, complete or not at all: the schema is
/// written under another name, then linked into place (never over a file
/// that appeared there meanwhile). So an existing file at `path` is always
/// a whole ledger, and anything else there is damage, never a start.
void create_ledger(const fs::path& path) {
  std::error_code ec;
  if (path.has_parent_path())
    fs::create_directories(path.parent_path(), ec);
  auto temp = path;
  temp += ".new-" + std::to_string(::getpid());
  for (auto* suffix : {"", "-journal", "-wal", "-shm"})
    fs::remove(temp.string() + suffix, ec);
  sqlite3* db = nullptr;
  auto rc = sqlite3_open_v2(
    temp.c_str(), &db,
    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  struct closer {
    sqlite3*& db;
    ~closer() {
      if (db)
        sqlite3_close_v2(db);
    }
  } close_db{db};
  try {
    if (rc != SQLITE_OK)
      throw ledger_error(ledger_errc::sqlite,
                         std::string{"cannot create it: "}
                           + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
    // Born in WAL mode: the switch would otherwise happen on the ledger
    // itself, through a rollback journal that a kill can leave hot.
    exec_script(db, "PRAGMA journal_mode = WAL", "switching to WAL");
    exec_script(db, "PRAGMA synchronous = FULL", "setting synchronous");
    transaction txn{db, true};
    exec_script(db, schema_v1, "creating the ledger schema");
    exec_script(
      db,
      ("PRAGMA user_version = " + std::to_string(ledger_schema_version))
        .c_str(),
      "setting the schema version");
    txn.commit();
    sqlite3_close_v2(db);
    db = nullptr;
    if (::link(temp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
      // A file system without hard links: a rename, unless the ledger
      // appeared meanwhile.
      int code = errno;
      if (fs::exists(path, ec) || ::rename(temp.c_str(), path.c_str()) != 0)
        throw ledger_error(ledger_errc::sqlite,
                           std::string{"cannot create it: "}
                             + std::strerror(code));
    }
  } catch (const ledger_error& e) {
    fs::remove(temp, ec);
    throw ledger_error(e.code(),
                       "the ledger " + path.string() + ": " + e.what());
  }
  // The last connection's close checkpointed and removed the WAL.
  fs::remove(temp, ec);
  sync_folder(path.parent_path());
}

} // namespace

ledger ledger::open(const std::filesystem::path& path,
                    const ledger_options& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (!options.read_only)
      create_ledger(path);
  } else {
    check_file(path);
  }
  int flags
    = SQLITE_OPEN_NOMUTEX
      | (options.read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE);
  sqlite3* db = nullptr;
  auto rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    throw ledger_error(rc == SQLITE_CANTOPEN ? ledger_errc::not_found
                                             : ledger_errc::sqlite,
                       "cannot open the ledger " + path.string() + ": " + msg);
  }
  // From here on the ledger object owns the handle, also when we throw.
  ledger result{db, path};
  sqlite3_busy_timeout(db, options.busy_timeout_ms);
  // Read before anything is written: a file that is not a ledger stays as
  // it is.
  auto version = existing_version(db, path);
  exec_script(db, "PRAGMA foreign_keys = ON", "enabling foreign keys");
  if (options.read_only)
    return result;
  // WAL persists in the file; readers in other processes never wait for
  // the writer, and a writer never waits for readers.
  exec_script(db, "PRAGMA journal_mode = WAL", "switching to WAL");
  exec_script(db,
              options.synchronous_full ? "PRAGMA synchronous = FULL"
                                       : "PRAGMA synchronous = NORMAL",
              "setting synchronous");
  // The common case, an up-to-date ledger, takes no write lock: opening
  // must not wait for a run that is writing.
  if (version == ledger_schema_version)
    return result;
  // An older ledger (there is none yet: version 1 is the first) would be
  // migrated here, in one transaction.
  transaction txn{db, true};
  exec_script(db, schema_v1, "creating the ledger schema");
  exec_script(
    db,
    ("PRAGMA user_version = " + std::to_string(ledger_schema_version)).c_str(),
    "setting the schema version");
  txn.commit();
  return result;
}

// --- internals shared by the operations --------------------------------------

namespace {

using cache = detail::statement_cache;

void run_cached(cache& c, const std::string& sql) {
  auto st = c.use(sql);
  st.run();
}

event_row insert_event(cache& c, const std::string& run_id,
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
  return event_row{
    sqlite3_last_insert_rowid(c.db), run_id, task_id, now_ms, kind, data};
}

std::optional<run_row> load_run(cache& c, const std::string& run_id) {
  auto st
    = c.use(std::string{"SELECT "} + run_columns + " FROM runs WHERE id = ?1");
  st.bind(1, run_id);
  if (!st.step())
    return std::nullopt;
  return read_run(st);
}

std::optional<task_row> load_task(cache& c, const std::string& run_id,
                                  const std::string& task_id) {
  auto st = c.use(std::string{task_select} + " AND t.task_id = ?2");
  st.bind(1, run_id).bind(2, task_id);
  if (!st.step())
    return std::nullopt;
  return read_task(st);
}

std::vector<task_row> load_tasks(cache& c, const std::string& run_id) {
  auto st = c.use(std::string{task_select} + " ORDER BY t.idx, t.task_id");
  st.bind(1, run_id);
  std::vector<task_row> result;
  while (st.step())
    result.push_back(read_task(st));
  return result;
}

std::vector<attempt_row> load_attempts(cache& c, const std::string& run_id,
                                       const std::string& task_id) {
  auto st = c.use(std::string{"SELECT "} + attempt_columns
                  + " FROM attempts WHERE run_id = ?1 AND task_id = ?2 "
                    "ORDER BY number");
  st.bind(1, run_id).bind(2, task_id);
  std::vector<attempt_row> result;
  while (st.step())
    result.push_back(read_attempt(st));
  return result;
}

// The task's latest attempt number (0: none) and whether it is still open.
std::pair<int, bool> latest_attempt(cache& c, const std::string& run_id,
                                    const std::string& task_id) {
  auto st = c.use("SELECT number, state FROM attempts "
                  "WHERE run_id = ?1 AND task_id = ?2 "
                  "ORDER BY number DESC LIMIT 1");
  st.bind(1, run_id).bind(2, task_id);
  if (!st.step())
    return {0, false};
  return {st.integer(0), st.text(1) == "running"};
}

void add_attempt_usage(cache& c, const std::string& run_id,
                       const std::string& task_id, int number, const usage& u) {
  auto st = c.use("UPDATE attempts SET input_tokens = input_tokens + ?4, "
                  "output_tokens = output_tokens + ?5, "
                  "cost_usd = cost_usd + ?6 "
                  "WHERE run_id = ?1 AND task_id = ?2 AND number = ?3");
  st.bind(1, run_id).bind(2, task_id).bind(3, number);
  st.bind(4, u.input_tokens).bind(5, u.output_tokens).bind(6, u.cost_usd);
  st.run();
}

std::string paths_json(const std::vector<std::string>& paths) {
  return dump(json(paths));
}

// Writes the columns `f` sets and notes them in `data` for the event.
void write_fields(cache& c, const std::string& run_id,
                  const std::string& task_id, const task_fields& f,
                  json& data) {
  std::string sql = "UPDATE tasks SET ";
  std::vector<std::pair<std::string, std::string>> sets;
  if (f.branch) {
    sets.emplace_back("branch", *f.branch);
    data["branch"] = *f.branch;
  }
  if (f.worktree) {
    sets.emplace_back("worktree", *f.worktree);
    data["worktree"] = *f.worktree;
  }
  if (f.merge_commit) {
    sets.emplace_back("merge_commit", *f.merge_commit);
    data["merge_commit"] = *f.merge_commit;
  }
  if (f.conflict_paths) {
    sets.emplace_back("conflict_paths", paths_json(*f.conflict_paths));
    data["conflict_paths"] = *f.conflict_paths;
  }
  if (f.gate_tail)
    sets.emplace_back("gate_tail", keep_tail(*f.gate_tail));
  if (f.clear_branch_and_worktree) {
    sets.erase(std::remove_if(sets.begin(), sets.end(),
                              [](auto& x) {
                                return x.first == "branch"
                                       || x.first == "worktree";
                              }),
               sets.end());
    data.erase("branch");
    data.erase("worktree");
    data["cleared"] = json::array({"branch", "worktree"});
  }
  if (sets.empty() && !f.clear_branch_and_worktree)
    return;
  for (size_t i = 0; i < sets.size(); ++i) {
    if (i > 0)
      sql += ", ";
    sql += sets[i].first + " = ?" + std::to_string(i + 3);
  }
  if (f.clear_branch_and_worktree)
    sql += std::string{sets.empty() ? "" : ", "}
           + "branch = NULL, worktree = NULL";
  sql += " WHERE run_id = ?1 AND task_id = ?2";
  auto st = c.use(sql);
  st.bind(1, run_id).bind(2, task_id);
  for (size_t i = 0; i < sets.size(); ++i)
    st.bind(static_cast<int>(i + 3), sets[i].second);
  st.run();
}

// One task transition inside an open write transaction: the lifecycle
// check, the attempt bookkeeping, the task row and the event.
transition_result apply_transition(cache& c, const std::string& run_id,
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
                    "started_ms, worker_log, verify_log) "
                    "VALUES (?1, ?2, ?3, 'running', ?4, ?5, ?6)");
    st.bind(1, run_id).bind(2, task_id).bind(3, number).bind(4, now_ms);
    st.bind(5, dir + "/worker.log").bind(6, dir + "/verify.log");
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
  data["reason"] = nullable<json>(change.reason);
  if (change.exit_code)
    data["exit_code"] = *change.exit_code;
  result.event
    = insert_event(c, run_id, task_id, "task.state", dump(data), now_ms);
  return result;
}

event_row apply_run_state(cache& c, const std::string& run_id, run_state to,
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
            {"reason", nullable<json>(reason)}};
  return insert_event(c, run_id, std::nullopt, "run.state", dump(data), now_ms);
}

} // namespace

// --- runs --------------------------------------------------------------------

void ledger::create_run(const new_run& run, int64_t now_ms) {
  parse_object(run.config_json, "the run's config");
  auto& c = *cache_;
  transaction txn{db_, true};
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
  for (auto& t : run.tasks) {
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
    if (load_task(c, run.id, t.id))
      throw ledger_error(ledger_errc::duplicate,
                         "task " + t.id + " appears twice in run " + run.id);
    auto st = c.use("INSERT INTO tasks (run_id, task_id, idx, title, state, "
                    "reason, finished_ms, updated_ms) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    st.bind(1, run.id).bind(2, t.id).bind(3, t.index).bind(4, t.title);
    st.bind(5, to_string(t.state)).bind(6, t.reason);
    st.bind(7, sets_finished(t.state) ? std::optional<int64_t>{now_ms}
                                      : std::nullopt);
    st.bind(8, now_ms);
    st.run();
  }
  json data{{"file", run.file},
            {"file_hash", run.file_hash},
            {"base_branch", run.base_branch},
            {"max_concurrency", run.max_concurrency},
            {"tasks", run.tasks.size()}};
  insert_event(c, run.id, std::nullopt, "run.created", dump(data), now_ms);
  txn.commit();
}

event_row ledger::set_run_state(const std::string& run_id, run_state to,
                                const std::optional<std::string>& reason,
                                int64_t now_ms) {
  transaction txn{db_, true};
  auto ev = apply_run_state(*cache_, run_id, to, reason, now_ms);
  txn.commit();
  return ev;
}

std::optional<run_row> ledger::find_run(const std::string& run_id) const {
  return load_run(*cache_, run_id);
}

std::optional<run_row> ledger::latest_run() const {
  auto st = cache_->use(std::string{"SELECT "} + run_columns
                        + " FROM runs ORDER BY created_ms DESC, rowid DESC "
                          "LIMIT 1");
  if (!st.step())
    return std::nullopt;
  return read_run(st);
}

std::optional<run_row>
ledger::latest_unfinished_run(const std::optional<std::string>& file) const {
  auto st = cache_->use(std::string{"SELECT "} + run_columns
                        + " FROM runs WHERE state IN ('running', 'paused') "
                          "AND (?1 IS NULL OR file = ?1) "
                          "ORDER BY created_ms DESC, rowid DESC LIMIT 1");
  st.bind(1, file);
  if (!st.step())
    return std::nullopt;
  return read_run(st);
}

std::vector<run_summary> ledger::list_runs() const {
  auto& c = *cache_;
  transaction txn{db_, false};
  std::vector<run_summary> result;
  std::map<std::string, size_t> where;
  {
    auto st = c.use(std::string{"SELECT "} + run_columns
                    + " FROM runs ORDER BY created_ms DESC, rowid DESC");
    while (st.step()) {
      run_summary s;
      s.run = read_run(st);
      where[s.run.id] = result.size();
      result.push_back(std::move(s));
    }
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
  auto data = parse_object(change.data_json, "the event data");
  transaction txn{db_, true};
  auto result
    = apply_transition(*cache_, run_id, task_id, change, data, now_ms);
  txn.commit();
  return result;
}

std::vector<batch_outcome>
ledger::transition_batch(const std::vector<task_change_request>& changes,
                         int64_t now_ms) {
  auto& c = *cache_;
  std::vector<batch_outcome> result;
  result.reserve(changes.size());
  transaction txn{db_, true};
  for (auto& req : changes) {
    // A savepoint per change: a refused one is rolled back alone.
    run_cached(c, "SAVEPOINT batch_item");
    try {
      auto data = parse_object(req.change.data_json, "the event data");
      result.emplace_back(
        apply_transition(c, req.run_id, req.task_id, req.change, data, now_ms));
      run_cached(c, "RELEASE batch_item");
    } catch (const ledger_error& e) {
      if (e.code() == ledger_errc::sqlite)
        throw; // the transaction itself is in doubt: all or nothing
      run_cached(c, "ROLLBACK TO batch_item");
      run_cached(c, "RELEASE batch_item");
      result.emplace_back(e);
    }
  }
  txn.commit();
  return result;
}

event_row ledger::update_task(const std::string& run_id,
                              const std::string& task_id,
                              const task_fields& fields, int64_t now_ms,
                              const std::string& data_json) {
  auto data = parse_object(data_json, "the event data");
  auto& c = *cache_;
  transaction txn{db_, true};
  if (!load_task(c, run_id, task_id))
    throw ledger_error(ledger_errc::not_found,
                       "no " + task_name(run_id, task_id));
  write_fields(c, run_id, task_id, fields, data);
  {
    auto st = c.use("UPDATE tasks SET updated_ms = ?3 "
                    "WHERE run_id = ?1 AND task_id = ?2");
    st.bind(1, run_id).bind(2, task_id).bind(3, now_ms);
    st.run();
  }
  auto kind = fields.merge_commit && !fields.branch && !fields.worktree
                  && !fields.conflict_paths && !fields.gate_tail
                  && !fields.clear_branch_and_worktree
                ? "task.merge_commit"
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
  auto& c = *cache_;
  transaction txn{db_, true};
  auto [number, open] = latest_attempt(c, run_id, task_id);
  if (!open)
    throw ledger_error(ledger_errc::invalid_transition,
                       task_name(run_id, task_id) + " has no open attempt");
  add_attempt_usage(c, run_id, task_id, number, u);
  txn.commit();
}

std::optional<task_row> ledger::find_task(const std::string& run_id,
                                          const std::string& task_id) const {
  return load_task(*cache_, run_id, task_id);
}

std::vector<task_row> ledger::tasks(const std::string& run_id) const {
  return load_tasks(*cache_, run_id);
}

std::vector<attempt_row> ledger::attempts(const std::string& run_id,
                                          const std::string& task_id) const {
  return load_attempts(*cache_, run_id, task_id);
}

// --- events ------------------------------------------------------------------

event_row ledger::append_event(const std::string& run_id,
                               const std::optional<std::string>& task_id,
                               const std::string& kind,
                               const std::string& data_json, int64_t now_ms) {
  parse_object(data_json, "the event data");
  transaction txn{db_, true};
  auto ev = insert_event(*cache_, run_id, task_id, kind, data_json, now_ms);
  txn.commit();
  return ev;
}

std::vector<event_row> ledger::events(const std::string& run_id,
                                      int64_t after_seq, size_t limit) const {
  auto st = cache_->use(std::string{"SELECT "} + event_columns
                        + " FROM events WHERE run_id = ?1 AND seq > ?2 "
                          "ORDER BY seq LIMIT ?3");
  st.bind(1, run_id).bind(2, after_seq);
  st.bind(3, limit == 0 ? int64_t{-1} : static_cast<int64_t>(limit));
  std::vector<event_row> result;
  while (st.step())
    result.push_back(read_event(st));
  return result;
}

// --- what the commands show --------------------------------------------------

std::optional<run_status> ledger::status(const std::string& run_id) const {
  auto& c = *cache_;
  // One snapshot: the run and its tasks as of the same commit.
  transaction txn{db_, false};
  auto run = load_run(c, run_id);
  if (!run)
    return std::nullopt;
  run_status result{std::move(*run), load_tasks(c, run_id)};
  txn.commit();
  return result;
}

std::optional<task_history> ledger::history(const std::string& run_id,
                                            const std::string& task_id) const {
  auto& c = *cache_;
  transaction txn{db_, false};
  auto task = load_task(c, run_id, task_id);
  if (!task)
    return std::nullopt;
  task_history result;
  result.task = std::move(*task);
  result.attempts = load_attempts(c, run_id, task_id);
  auto st = c.use(std::string{"SELECT "} + event_columns
                  + " FROM events WHERE run_id = ?1 AND task_id = ?2 "
                    "ORDER BY seq");
  st.bind(1, run_id).bind(2, task_id);
  while (st.step())
    result.events.push_back(read_event(st));
  txn.commit();
  return result;
}

// --- recovery ----------------------------------------------------------------

recovery ledger::mark_interrupted(const std::string& run_id,
                                  const std::string& reason, int64_t now_ms) {
  auto& c = *cache_;
  transaction txn{db_, true};
  auto run = load_run(c, run_id);
  if (!run)
    throw ledger_error(ledger_errc::not_found, "no run " + run_id);
  recovery result;
  for (auto& t : load_tasks(c, run_id)) {
    if (in_attempt(t.state)) {
      task_change change;
      change.to = task_state::interrupted;
      change.reason = reason;
      apply_transition(c, run_id, t.id, change, json::object(), now_ms);
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

} // namespace taskforce::store
