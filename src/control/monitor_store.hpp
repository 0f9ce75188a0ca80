// Monitored processes in the ledger (table `monitors`): one row per
// monitor, whose state moves only forward, each move a compare-and-swap
// (`WHERE state = 'running' AND version = ?`) that appends a row to
// bg_events in the same write transaction.
//
//            create                finish
//   (none) ──────────▶ running ─────────────▶ done | killed | timeout | failed
//                         │
//                         │ its owner is gone (reconcile)
//                         ▼
//                    unavailable
//
// Every row names its owner: the server instance ("server:<hex>", one per
// server process) or a detached supervisor ("supervisor:<hex>", started by
// `taskforce monitor run` without a server). A supervisor holds an
// exclusive lock on `.taskforce/monitors/<id>.lock` for as long as it
// runs, so whether it is still there is a question anyone can ask. A row
// left `running` by an owner that is gone (a server other than the current
// one, a supervisor whose lock is free) becomes `unavailable`: its process
// may still run, but nobody watches it and nobody can promise to control
// it. Paths are never stored: the log of a monitor is always
// `.taskforce/logs/monitors/<id>.log`, derived from its id.
//
// Works on an open ledger's connection in the ledger's thread, like the
// mailbox. Refusals throw control::control_error; failures of the
// database throw store::ledger_error.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "src/control/error.hpp"

namespace taskforce::store {
class ledger;
} // namespace taskforce::store

namespace taskforce::control {

/// Where a monitor stands.
enum class monitor_state : uint8_t {
  /// Its process runs, watched by its owner.
  running,
  /// Its process exited by itself (exit_code set unless a signal ended it).
  done,
  /// monitor.kill ended its whole process group.
  killed,
  /// Its time limit ended its whole process group.
  timeout,
  /// It could not start, or its owner lost track of it.
  failed,
  /// It was running when its owner went away uncleanly: not controllable.
  unavailable,
};

/// The lowercase name.
const char* to_string(monitor_state x);

/// Parses a state name; false when unknown.
bool from_string(std::string_view name, monitor_state& out);

/// Whether the state is an end (anything but running).
inline bool ended(monitor_state x) {
  return x != monitor_state::running;
}

/// The longest wake pattern accepted: std::regex matches recursively, and a
/// long pattern can overflow the stack (the same bound as run.holdPattern).
constexpr size_t max_wake_pattern_chars = 1000;

/// Compiles a wake pattern (ECMAScript). Throws control_error (bad_request,
/// "invalid wake_pattern: <the regex error>") when it does not compile or
/// is longer than max_wake_pattern_chars.
std::regex compile_wake_pattern(const std::string& pattern);

/// Searches a monitor's output for its wake pattern as it arrives in
/// chunks, without keeping it all: a match may span chunks as long as it
/// is no longer than `overlap` bytes.
class wake_matcher {
 public:
  /// `pattern` as compile_wake_pattern checks it (throws the same).
  explicit wake_matcher(const std::string& pattern, size_t overlap = 4096);

  /// Feeds the next chunk; true once the pattern matched (then and after).
  bool feed(std::string_view chunk);

  /// Whether it matched already.
  bool matched() const {
    return matched_;
  }

 private:
  std::regex re_;
  size_t overlap_;
  std::string carry_;
  bool matched_ = false;
};

/// One row of `monitors`.
struct monitor_row {
  std::string id;
  int64_t seq = 0;
  std::string command;
  /// Repository-relative, "." for the top folder.
  std::string cwd;
  std::optional<std::string> wake_pattern;
  int64_t timeout_ms = 0;
  std::optional<std::string> session;
  monitor_state state = monitor_state::running;
  std::optional<int64_t> exit_code;
  std::optional<int64_t> pid;
  std::string owner;
  int64_t version = 0;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
};

/// A monitor to create (validated by the caller: see check_monitor_spec).
struct new_monitor {
  std::string command;
  /// Repository-relative, "." for the top folder.
  std::string cwd = ".";
  std::optional<std::string> wake_pattern;
  int64_t timeout_ms = 0;
  std::optional<std::string> session;
};

/// Checks what `monitor.run` asks for against the repository whose top is
/// `repository`: a non-empty command, a cwd inside the repository (see
/// resolve_cwd in validation.hpp: a symlink out is refused), a wake pattern
/// that compiles, a timeout ≥ 0. Returns it with the cwd repository-
/// relative. Throws control_error (bad_request) naming what is wrong.
new_monitor check_monitor_spec(const std::filesystem::path& repository,
                               const std::string& command,
                               const std::string& cwd,
                               const std::string& wake_pattern,
                               int64_t timeout_ms, const std::string& session);

/// A fresh owner name: "server:<16 hex>" or "supervisor:<16 hex>".
std::string new_owner_id(const std::string& kind);

/// `.taskforce/logs/monitors/<id>.log` in the repository whose top is
/// `repository`.
std::filesystem::path monitor_log_file(const std::filesystem::path& repository,
                                       const std::string& id);

/// `.taskforce/monitors/<id>.lock`: held by the monitor's supervisor.
std::filesystem::path monitor_lock_file(const std::filesystem::path& repository,
                                        const std::string& id);

/// Whether some process holds the lock file `lock` (an flock); false when
/// the file does not exist.
bool lock_held(const std::filesystem::path& lock);

/// The monitors of one ledger; see the contract above.
class monitor_store {
 public:
  /// Works on `db`'s connection; `db` must outlive the store. `repository`
  /// is the top folder (for the lock files of supervisors).
  monitor_store(store::ledger& db, std::filesystem::path repository)
    : db_(db), repository_(std::move(repository)) {}

  /// Inserts the next monitor ("mon-<seq>") as running, owned by `owner`,
  /// with a `monitor.created` event, in one write transaction that first
  /// counts the live ones (running rows whose owner is `owner`, or another
  /// that is still there: see is_live). Throws control_error (limit,
  /// "Monitor limit reached: N live monitors (control.maxMonitors)") when
  /// there are `max_live` already.
  monitor_row create(const new_monitor& m, const std::string& owner,
                     uint64_t max_live, int64_t now_ms);

  /// Records the pid of a running monitor. Throws control_error
  /// (invalid_state) when it is no longer running.
  monitor_row set_pid(const std::string& id, int64_t pid, int64_t now_ms);

  /// Moves a running monitor to the end `to` (with its exit code), with a
  /// `monitor.<to>` event. Returns nullopt (and writes nothing) when it is
  /// not running any more: the first end wins.
  std::optional<monitor_row> finish(const std::string& id, monitor_state to,
                                    std::optional<int64_t> exit_code,
                                    int64_t now_ms,
                                    const std::string& reason = {});

  /// Records (once) that the wake pattern matched: a `monitor.ready`
  /// event. Returns false when it was recorded already.
  bool mark_ready(const std::string& id, int64_t now_ms);

  /// Whether the wake pattern of `id` matched (a `monitor.ready` event).
  bool is_ready(const std::string& id) const;

  /// The reason of its last end event, when it has one.
  std::string reason_of(const std::string& id) const;

  /// One monitor; nullopt when unknown.
  std::optional<monitor_row> get(const std::string& id) const;

  /// One monitor; throws control_error (not_found) when unknown.
  monitor_row require(const std::string& id) const;

  /// Every monitor, in creation order.
  std::vector<monitor_row> list() const;

  /// Whether a running row is watched by an owner that is still there:
  /// `current` itself, or a supervisor that holds its lock.
  bool is_live(const monitor_row& row, const std::string& current) const;

  /// Marks every running row whose owner is gone (not `current`, not a
  /// supervisor holding its lock) unavailable, each with a
  /// `monitor.unavailable` event. Returns the changed rows.
  std::vector<monitor_row> reconcile(const std::string& current,
                                     int64_t now_ms);

  /// Removes a monitor that never got going (its start failed before
  /// anyone saw it), with a `monitor.removed` event. Returns false when
  /// unknown.
  bool remove(const std::string& id, int64_t now_ms);

 private:
  store::ledger& db_;
  std::filesystem::path repository_;
};

} // namespace taskforce::control
