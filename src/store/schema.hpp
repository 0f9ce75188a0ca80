// The ledger's schema: the tables of each version, how a new ledger is
// created, how an older one is brought up to date, and which files are
// refused before anything is written to them.
//
// Versions (`PRAGMA user_version`):
//   1  runs, tasks, attempts, the append-only events.
//   2  tasks.hold_lifted and tasks.session; run_files (task files added to a
//      run); mail (messages down to workers, answers, reports up).
//   3  tasks.content_hash and attempts.model; turn_usage (usage per turn);
//      co_changes and co_change_tasks (files that change together).
//   4  managed background work: bg_tasks, bg_deps, bg_leases, bg_baseline,
//      bg_events; monitors.
//   5  bg_leases also holds globs (kind 'glob'): the one reservation table
//      of runs and managed tasks.
//
// A ledger is created by the same steps that migrate one (1, then 2, …), so
// a new ledger and a migrated one have the same tables. A migration runs all
// its steps in one write transaction that first reads the version again, so
// two processes opening an old ledger at once migrate it once, and a crash
// leaves it at the old version, whole.
#pragma once

#include <filesystem>

namespace taskforce::store {

namespace sqlite {
class connection;
} // namespace sqlite

namespace schema {

/// The schema version this code writes.
constexpr int current = 5;

/// The SQL of step `version`: for 1 it creates the first tables, for each
/// later one it changes the previous version's tables into its own.
/// Nullptr for a version that does not exist.
const char* step(int version);

/// Refuses, before SQLite reads it, an empty file (SQLite would take it for
/// a new database). Throws `ledger_errc::schema` naming the file and leaves
/// it as it is. It never opens the file (see schema.cpp); a file without
/// SQLite's header is refused by read_version.
void check_file(const std::filesystem::path& path);

/// The version of the open ledger at `path`, refusing (before anything is
/// written) a database that is not a ledger, or one newer than `known`:
/// the newest version the caller's code understands. Throws
/// `ledger_errc::schema`.
int read_version(sqlite::connection& db, const std::filesystem::path& path,
                 int known = current);

/// Creates a ledger of schema `version` at `path`, complete or not at all:
/// it is written under another name, then linked into place (never over a
/// file that appeared there meanwhile). So an existing file at `path` is
/// always a whole ledger, and anything else there is damage, never a start.
/// Throws ledger_error.
void create(const std::filesystem::path& path, int version = current);

/// On a read-only connection to a ledger of an older `version` (nobody
/// with write access opened it since this taskforce came): temporary views
/// and empty tables in the connection's own TEMP schema make it read like
/// the current one (new columns have their defaults, new tables are
/// empty). The file is not touched.
void present_as_current(sqlite::connection& db, int version);

/// Brings the open ledger from `version` (as read_version said) up to
/// `current` in one write transaction. Does nothing (and takes no write
/// lock) when it is up to date. Throws ledger_error.
void migrate(sqlite::connection& db, const std::filesystem::path& path,
             int version);

} // namespace schema

} // namespace taskforce::store
