#include "src/store/schema.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <system_error>

#include <sqlite3.h>

#include "src/store/error.hpp"
#include "src/store/sqlite.hpp"

namespace taskforce::store::schema {

namespace fs = std::filesystem;

namespace {

// Version 1, as it was first written (a ledger of version 1 has exactly
// these tables; never change this text, add a step). Each table says why it
// exists; states are checked so a bug can never write a name the readers do
// not know.
constexpr const char* step_1 = R"sql(
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

// Version 2: a person in the loop.
constexpr const char* step_2 = R"sql(
-- A person approved a held task: the hold stays lifted at every resume.
ALTER TABLE tasks ADD COLUMN hold_lifted INTEGER NOT NULL DEFAULT 0
  CHECK (hold_lifted IN (0, 1));
-- The agent session the task's worker reported, to continue it.
ALTER TABLE tasks ADD COLUMN session TEXT;

-- Task files added to a run with `taskforce add`, in the order they were
-- added (the run's own file is runs.file); parsed again at every resume.
CREATE TABLE run_files (
  run_id   TEXT NOT NULL REFERENCES runs (id),
  position INTEGER NOT NULL,
  file     TEXT NOT NULL,
  PRIMARY KEY (run_id, position)
) WITHOUT ROWID;

-- Mail down to a task's worker (a message, an answer) and up from one (a
-- report). A down mail is handed out once: delivered_ms is set in the
-- transaction that hands it out, and never again (see the triggers).
-- attempt: the attempt it was delivered to, or reported from.
CREATE TABLE mail (
  id           INTEGER PRIMARY KEY,
  run_id       TEXT NOT NULL REFERENCES runs (id),
  task_id      TEXT,
  kind         TEXT NOT NULL CHECK (kind IN ('message','answer','report')),
  direction    TEXT NOT NULL CHECK (direction IN ('down','up')),
  text         TEXT NOT NULL,
  created_ms   INTEGER NOT NULL,
  delivered_ms INTEGER,
  attempt      INTEGER,
  CHECK ((kind = 'report') = (direction = 'up')),
  CHECK (direction = 'up' OR task_id IS NOT NULL),
  FOREIGN KEY (run_id, task_id) REFERENCES tasks (run_id, task_id)
);
CREATE INDEX mail_by_task ON mail (run_id, task_id, id);
CREATE TRIGGER mail_no_delete BEFORE DELETE ON mail
BEGIN SELECT RAISE(ABORT, 'mail is never deleted'); END;
CREATE TRIGGER mail_no_rewrite
BEFORE UPDATE OF id, run_id, task_id, kind, direction, text, created_ms ON mail
BEGIN SELECT RAISE(ABORT, 'mail is never rewritten'); END;
CREATE TRIGGER mail_delivered_once BEFORE UPDATE OF delivered_ms ON mail
WHEN OLD.delivered_ms IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'mail is delivered once'); END;
)sql";

// Version 3: run policies.
constexpr const char* step_3 = R"sql(
-- The content of the task as its file said it (a hash of the parsed task):
-- a later run of the same file recognises a task it already merged.
ALTER TABLE tasks ADD COLUMN content_hash TEXT;
-- The model an attempt ran on; NULL for the agent's own default.
ALTER TABLE attempts ADD COLUMN model TEXT;

-- Usage reported by each turn of an attempt (attempts carries the sums).
-- turn: 1 for the attempt's first turn, counting its repairs, answers and
-- messages after it; kind: start, repair, answer, message or verify.
CREATE TABLE turn_usage (
  run_id        TEXT NOT NULL,
  task_id       TEXT NOT NULL,
  attempt       INTEGER NOT NULL,
  turn          INTEGER NOT NULL,
  kind          TEXT NOT NULL,
  input_tokens  INTEGER NOT NULL DEFAULT 0 CHECK (input_tokens >= 0),
  output_tokens INTEGER NOT NULL DEFAULT 0 CHECK (output_tokens >= 0),
  cost_usd      REAL NOT NULL DEFAULT 0 CHECK (cost_usd >= 0),
  at_ms         INTEGER NOT NULL,
  PRIMARY KEY (run_id, task_id, attempt, turn),
  FOREIGN KEY (run_id, task_id) REFERENCES tasks (run_id, task_id)
) WITHOUT ROWID;

-- Co-change learning: how many completed tasks changed both files of a
-- pair (file_a sorts before file_b), across every run of the repository.
CREATE TABLE co_changes (
  file_a TEXT NOT NULL,
  file_b TEXT NOT NULL,
  count  INTEGER NOT NULL CHECK (count > 0),
  PRIMARY KEY (file_a, file_b),
  CHECK (file_a < file_b)
) WITHOUT ROWID;
-- The completed tasks already counted, so a task is counted once even when
-- its completion is recorded again after a restart.
CREATE TABLE co_change_tasks (
  run_id  TEXT NOT NULL,
  task_id TEXT NOT NULL,
  PRIMARY KEY (run_id, task_id),
  FOREIGN KEY (run_id, task_id) REFERENCES tasks (run_id, task_id)
) WITHOUT ROWID;
)sql";

// Version 4: managed background work (the control plane). A task is a
// contract a harness prepared; its child session is the harness's subagent
// doing the work. Every state change is a compare-and-swap on `version`.
constexpr const char* step_4 = R"sql(
CREATE TABLE bg_tasks (
  id               TEXT PRIMARY KEY,
  -- Creation order: queued work is handed out oldest first.
  seq              INTEGER NOT NULL UNIQUE,
  title            TEXT NOT NULL,
  agent            TEXT NOT NULL,
  prompt           TEXT NOT NULL,
  -- The orchestrating session that prepared it.
  session          TEXT,
  -- JSON lists: canonical write roots, named locks, validation commands.
  roots            TEXT NOT NULL DEFAULT '[]',
  locks            TEXT NOT NULL DEFAULT '[]',
  validations      TEXT NOT NULL DEFAULT '[]',
  state            TEXT NOT NULL
                   CHECK (state IN ('queued','ready','starting','running',
                                    'blocked','checking','done','failed',
                                    'cancelled','interrupted')),
  reason           TEXT,
  child_session    TEXT,
  -- The one-use token of the current dispatch or continuation (NULL once
  -- used or expired) and when it expires.
  token            TEXT UNIQUE,
  token_kind       TEXT CHECK (token_kind IN ('dispatch','continue')),
  token_expires_ms INTEGER,
  -- A token handed out and consumed, whose child is not linked yet: a
  -- cancel landing then keeps the leases until the child is accounted for.
  token_consumed   INTEGER NOT NULL DEFAULT 0,
  continuation     TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  attempts         INTEGER NOT NULL DEFAULT 0,
  result           TEXT,
  files            TEXT NOT NULL DEFAULT '[]',
  -- The tail of the last failed validation.
  output_tail      TEXT,
  version          INTEGER NOT NULL DEFAULT 0,
  created_ms       INTEGER NOT NULL,
  updated_ms       INTEGER NOT NULL
);
CREATE INDEX bg_tasks_by_child ON bg_tasks (child_session);

-- task depends on prerequisite.
CREATE TABLE bg_deps (
  task_id      TEXT NOT NULL REFERENCES bg_tasks (id),
  prerequisite TEXT NOT NULL REFERENCES bg_tasks (id),
  PRIMARY KEY (task_id, prerequisite),
  CHECK (task_id <> prerequisite)
) WITHOUT ROWID;

-- What a live holder writes: a write root (kind 'root', canonical,
-- repository-relative, a folder or a file) or a named lock (kind 'lock').
-- Holders are managed tasks (their id) and the running tasks of task-list
-- runs ("run/<run>/<task>"), so the two never write the same root at once.
-- (Version 5 adds the kind 'glob'.)
CREATE TABLE bg_leases (
  holder TEXT NOT NULL,
  kind   TEXT NOT NULL CHECK (kind IN ('root','lock')),
  name   TEXT NOT NULL,
  PRIMARY KEY (holder, kind, name)
) WITHOUT ROWID;
CREATE INDEX bg_leases_by_name ON bg_leases (kind, name);

-- The working tree under a task's roots when its child was linked: the
-- runtime's own record, compared with the claimed files at completion.
-- fingerprint: size, mtime and content hash, or '-' for a path that did
-- not exist.
CREATE TABLE bg_baseline (
  task_id     TEXT NOT NULL REFERENCES bg_tasks (id),
  path        TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  PRIMARY KEY (task_id, path)
) WITHOUT ROWID;

-- Append-only history of the control plane (tasks and monitors).
CREATE TABLE bg_events (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  task_id    TEXT,
  monitor_id TEXT,
  kind       TEXT NOT NULL,
  from_state TEXT,
  to_state   TEXT,
  detail     TEXT NOT NULL DEFAULT '{}',
  at_ms      INTEGER NOT NULL
);
CREATE TRIGGER bg_events_no_delete BEFORE DELETE ON bg_events
BEGIN SELECT RAISE(ABORT, 'events are never deleted'); END;
CREATE TRIGGER bg_events_no_update BEFORE UPDATE ON bg_events
BEGIN SELECT RAISE(ABORT, 'events are never rewritten'); END;

-- Monitored processes. A monitor 'running' in the ledger whose server is
-- gone (owner: the server instance that started it) is 'unavailable'.
CREATE TABLE monitors (
  id           TEXT PRIMARY KEY,
  seq          INTEGER NOT NULL UNIQUE,
  command      TEXT NOT NULL,
  cwd          TEXT NOT NULL,
  wake_pattern TEXT,
  timeout_ms   INTEGER NOT NULL DEFAULT 0,
  session      TEXT,
  state        TEXT NOT NULL
               CHECK (state IN ('running','done','killed','timeout',
                                'failed','unavailable')),
  exit_code    INTEGER,
  pid          INTEGER,
  owner        TEXT NOT NULL,
  version      INTEGER NOT NULL DEFAULT 0,
  created_ms   INTEGER NOT NULL,
  updated_ms   INTEGER NOT NULL
);
)sql";

// Version 5: the reservation table holds globs too, so a task-list run's
// task reserves its scope as written (`src/*.ts`, or `**` for a task
// without files) beside managed tasks' roots and locks.
constexpr const char* step_5 = R"sql(
CREATE TABLE bg_leases_v5 (
  holder TEXT NOT NULL,
  kind   TEXT NOT NULL CHECK (kind IN ('root','glob','lock')),
  name   TEXT NOT NULL,
  PRIMARY KEY (holder, kind, name)
) WITHOUT ROWID;
INSERT INTO bg_leases_v5 (holder, kind, name)
  SELECT holder, kind, name FROM bg_leases;
DROP TABLE bg_leases;
ALTER TABLE bg_leases_v5 RENAME TO bg_leases;
CREATE INDEX bg_leases_by_name ON bg_leases (kind, name);
)sql";

/// The tables a ledger of each version has (a database without them is
/// another program's).
constexpr const char* tables_v1[] = {"runs", "tasks", "attempts", "events"};
constexpr const char* tables_v2[]
  = {"runs", "tasks", "attempts", "events", "run_files", "mail"};
constexpr const char* tables_v3[]
  = {"runs", "tasks",      "attempts",   "events",         "run_files",
     "mail", "turn_usage", "co_changes", "co_change_tasks"};
constexpr const char* tables_v4[]
  = {"runs",    "tasks",      "attempts",    "events",          "run_files",
     "mail",    "turn_usage", "co_changes",  "co_change_tasks", "bg_tasks",
     "bg_deps", "bg_leases",  "bg_baseline", "bg_events",       "monitors"};

template<size_t N>
std::string count_tables_sql(const char* const (&names)[N]) {
  std::string sql = "SELECT count(*) FROM sqlite_master WHERE type = "
                    "'table' AND name IN (";
  for (size_t i = 0; i < N; ++i)
    sql += std::string{i == 0 ? "'" : ", '"} + names[i] + "'";
  return sql + ")";
}

[[noreturn]] void not_a_ledger(const fs::path& path, const std::string& why) {
  throw ledger_error(ledger_errc::schema,
                     "the ledger " + path.string() + " " + why
                       + "; it was left as it is: restore it, or move it "
                         "away to start afresh (its runs are then forgotten)");
}

void set_version(sqlite::connection& db, int version) {
  db.exec("PRAGMA user_version = " + std::to_string(version),
          "setting the schema version");
}

// Steps `from + 1` .. `to`, inside the caller's write transaction.
void run_steps(sqlite::connection& db, int from, int to) {
  for (int v = from + 1; v <= to; ++v)
    db.exec(step(v), "the ledger schema, step " + std::to_string(v));
  set_version(db, to);
}

void sync_folder(const fs::path& folder) {
  int fd = ::open(folder.empty() ? "." : folder.c_str(),
                  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

} // namespace

const char* step(int version) {
  switch (version) {
    case 1: return step_1;
    case 2: return step_2;
    case 3: return step_3;
    case 4: return step_4;
    case 5: return step_5;
    default: return nullptr;
  }
}

void check_file(const fs::path& path) {
  // Only the size, never by opening the file: closing any descriptor of a
  // database file drops every POSIX lock this process holds on it, those
  // of its other open ledger connections included (a driver's ledger
  // service while its mailbox opens a second connection). Another process
  // would then take itself for the last user and delete the write-ahead
  // log under them. A file without SQLite's header is refused by
  // read_version, before anything is written.
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec)
    return; // not a regular file: SQLite says what is wrong with it
  if (size == 0)
    not_a_ledger(path, "is empty, not a taskforce ledger");
}

int read_version(sqlite::connection& db, const fs::path& path, int known) {
  int64_t version = 0;
  int64_t v1 = 0;
  int64_t v2 = 0;
  int64_t v3 = 0;
  int64_t v4 = 0;
  try {
    version = db.scalar("PRAGMA user_version");
    v1 = db.scalar(count_tables_sql(tables_v1));
    v2 = db.scalar(count_tables_sql(tables_v2));
    v3 = db.scalar(count_tables_sql(tables_v3));
    v4 = db.scalar(count_tables_sql(tables_v4));
  } catch (const ledger_error&) {
    auto rc = db.error_code();
    if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT)
      not_a_ledger(path,
                   "is not a taskforce ledger (" + db.error_message() + ")");
    throw;
  }
  if (version > known)
    throw ledger_error(ledger_errc::schema,
                       "the ledger " + path.string() + " has schema version "
                         + std::to_string(version)
                         + ", newer than this taskforce knows ("
                         + std::to_string(known) + ")");
  auto has_all = [](int64_t found, const auto& names) {
    return found == static_cast<int64_t>(std::size(names));
  };
  bool whole = version == 1   ? has_all(v1, tables_v1)
               : version == 2 ? has_all(v2, tables_v2)
               : version == 3 ? has_all(v3, tables_v3)
               : version >= 4 ? has_all(v4, tables_v4)
                              : false;
  if (!whole)
    not_a_ledger(path, "is not a taskforce ledger (another program's "
                       "database)");
  return static_cast<int>(version);
}

void create(const fs::path& path, int version) {
  std::error_code ec;
  if (path.has_parent_path())
    fs::create_directories(path.parent_path(), ec);
  auto temp = path;
  temp += ".new-" + std::to_string(::getpid());
  for (auto* suffix : {"", "-journal", "-wal", "-shm"})
    fs::remove(temp.string() + suffix, ec);
  try {
    {
      sqlite::connection db{temp, sqlite::open_mode::create};
      // Born in WAL mode: the switch would otherwise happen on the ledger
      // itself, through a rollback journal that a kill can leave hot.
      db.exec("PRAGMA journal_mode = WAL", "switching to WAL");
      db.exec("PRAGMA synchronous = FULL", "setting synchronous");
      sqlite::transaction txn{db, true};
      run_steps(db, 0, version);
      txn.commit();
    }
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

void present_as_current(sqlite::connection& db, int version) {
  // Unqualified names find the TEMP schema first, so these stand in for
  // what an older version lacks.
  if (version >= 4)
    return;
  // Version 4's tables, empty.
  db.exec(R"sql(
CREATE TEMP TABLE bg_tasks (
  id TEXT PRIMARY KEY, seq INTEGER, title TEXT, agent TEXT, prompt TEXT,
  session TEXT, roots TEXT, locks TEXT, validations TEXT, state TEXT,
  reason TEXT, child_session TEXT, token TEXT, token_kind TEXT,
  token_expires_ms INTEGER, token_consumed INTEGER, continuation TEXT,
  cancel_requested INTEGER, attempts INTEGER, result TEXT, files TEXT,
  output_tail TEXT, version INTEGER, created_ms INTEGER, updated_ms INTEGER);
CREATE TEMP TABLE bg_deps (task_id TEXT, prerequisite TEXT);
CREATE TEMP TABLE bg_leases (holder TEXT, kind TEXT, name TEXT);
CREATE TEMP TABLE bg_baseline (task_id TEXT, path TEXT, fingerprint TEXT);
CREATE TEMP TABLE bg_events (
  id INTEGER PRIMARY KEY, task_id TEXT, monitor_id TEXT, kind TEXT,
  from_state TEXT, to_state TEXT, detail TEXT, at_ms INTEGER);
CREATE TEMP TABLE monitors (
  id TEXT PRIMARY KEY, seq INTEGER, command TEXT, cwd TEXT,
  wake_pattern TEXT, timeout_ms INTEGER, session TEXT, state TEXT,
  exit_code INTEGER, pid INTEGER, owner TEXT, version INTEGER,
  created_ms INTEGER, updated_ms INTEGER);
)sql",
          "reading an older ledger");
  if (version >= 3)
    return;
  if (version < 2)
    db.exec(R"sql(
CREATE TEMP VIEW tasks AS
  SELECT *, 0 AS hold_lifted, NULL AS session, NULL AS content_hash
  FROM main.tasks;
CREATE TEMP TABLE run_files (run_id TEXT, position INTEGER, file TEXT);
CREATE TEMP TABLE mail (
  id INTEGER PRIMARY KEY, run_id TEXT, task_id TEXT, kind TEXT,
  direction TEXT, text TEXT, created_ms INTEGER, delivered_ms INTEGER,
  attempt INTEGER);
)sql",
            "reading a version 1 ledger");
  else
    db.exec("CREATE TEMP VIEW tasks AS SELECT *, NULL AS content_hash FROM "
            "main.tasks;",
            "reading a version 2 ledger");
  db.exec(R"sql(
CREATE TEMP VIEW attempts AS SELECT *, NULL AS model FROM main.attempts;
CREATE TEMP TABLE turn_usage (
  run_id TEXT, task_id TEXT, attempt INTEGER, turn INTEGER, kind TEXT,
  input_tokens INTEGER, output_tokens INTEGER, cost_usd REAL, at_ms INTEGER);
CREATE TEMP TABLE co_changes (file_a TEXT, file_b TEXT, count INTEGER);
CREATE TEMP TABLE co_change_tasks (run_id TEXT, task_id TEXT);
)sql",
          "reading an older ledger");
}

void migrate(sqlite::connection& db, const fs::path& path, int version) {
  if (version >= current)
    return;
  sqlite::transaction txn{db, true};
  // Another process may have migrated it while this one waited for the
  // write lock.
  version = read_version(db, path);
  if (version >= current)
    return;
  run_steps(db, version, current);
  txn.commit();
}

} // namespace taskforce::store::schema
