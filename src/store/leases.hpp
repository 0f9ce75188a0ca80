// The reservation table (bg_leases): the one place where task-list runs and
// managed background tasks reserve what they write, by the one rule of
// src/scope/lease.hpp. Runs reserve a task's scope in the transaction that
// records its start (ledger.cpp); managed tasks their roots and locks in
// the transaction of their prepare, start or continue (control/store.cpp).
// Both check every live lease of another holder in that same write
// transaction (BEGIN IMMEDIATE), so two processes racing on one ledger never
// both win.
//
// Whose lease is live: a managed task's until its own state machine frees it
// (done, failed, cancelled, interrupted by its child's end: see
// control/store.hpp; a dead server frees nothing). A run task's only while
// its run is being driven: the run lock (run_lock.hpp) is held by a process
// that drives that run, or has not named its run yet. A driver killed with
// SIGKILL loses the lock at once, so its leases stop counting, and are
// deleted by the next writer that reads them.
//
// All functions work inside the caller's transaction on `c`.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "src/scope/lease.hpp"

namespace taskforce::store {

namespace sqlite {
class connection;
} // namespace sqlite

/// Every live lease (see above), by holder, kind and name. With `sweep`
/// (a write transaction), the leases of run tasks whose run is not being
/// driven are deleted too; otherwise they are only left out. `run_lock` is
/// the repository's run lock file (.taskforce/run.lock).
std::vector<scope::lease> live_leases(sqlite::connection& c,
                                      const std::filesystem::path& run_lock,
                                      bool sweep);

/// The leases of `holder`, by kind and name.
std::vector<scope::lease> leases_of(sqlite::connection& c,
                                    const std::string& holder);

/// Takes `claims` for `holder` (what it holds already stays).
void take_leases(sqlite::connection& c, const std::string& holder,
                 const std::vector<scope::claim>& claims);

/// Gives up every lease of `holder`; how many there were.
int drop_leases(sqlite::connection& c, const std::string& holder);

/// Checks `claims` against the live leases of every other holder and takes
/// them when none overlaps: nullopt, or the first conflict (nothing taken).
std::optional<scope::lease_conflict>
reserve(sqlite::connection& c, const std::filesystem::path& run_lock,
        const std::string& holder, const std::vector<scope::claim>& claims);

} // namespace taskforce::store
