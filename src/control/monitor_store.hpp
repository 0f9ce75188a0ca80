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
// `taskforce monitor run` without a server). An owner holds an exclusive
// lock on its file `.taskforce/monitors/<owner>.lock` (owner_lock) for as
// long as it runs, so whether it is still there is a question any process
// can ask, and the kernel answers it for an owner that was killed. A row
// left `running` by an owner that is gone becomes `unavailable`: its
// process may still run, but nobody watches it and nobody can promise to
// control it. Paths are never stored: the log of a monitor is always
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
/// chunks, without keeping it all, in slices of `overlap` bytes each
/// searched with the `overlap` bytes before it: a match of up to `overlap`
/// bytes is found wherever it lies.
class wake_matcher {
 public:
  /// `pattern` as compile_wake_pattern checks it (throws the same).
  explicit wake_matcher(const std::string& pattern, size_t overlap = 1024);

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

/// A monitor as answers show it: its row and what is derived from it.
struct monitor_view {
  monitor_row row;
  /// Watched by an owner that is still there (see monitor_store::is_live).
  bool live = false;
  /// Its wake pattern matched.
  bool ready = false;
  /// `.taskforce/logs/monitors/<id>.log` (absolute).
  std::string log_file;
  /// Why it ended as it did, when there is something to say.
  std::string reason;
};

/// The protocol's JSON object of a monitor: id, command, cwd,
/// wake_pattern, timeout_ms, session, state, exit_code, pid (null when
/// unknown), owner, live, ready, log_file, reason, created_ms, updated_ms.
std::string to_json(const monitor_view& m);

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

/// `.taskforce/monitors/<owner>.lock` (the ':' of the name as '-'): held
/// by the owner while it runs, with its pid as the file's text.
std::filesystem::path owner_lock_file(const std::filesystem::path& repository,
                                      const std::string& owner);

/// Whether some process holds the lock file `lock` (an flock); false when
/// the file does not exist.
bool lock_held(const std::filesystem::path& lock);

/// An owner's lock, held for the life of this object (or of the processes
/// that inherit its descriptor: see release_to_child).
class owner_lock {
 public:
  /// Creates the lock file of `owner` and takes its lock, writing `pid`
  /// as its text. Throws control_error (unavailable) when it cannot.
  owner_lock(const std::filesystem::path& repository, const std::string& owner,
             int64_t pid);
  ~owner_lock();
  owner_lock(const owner_lock&) = delete;
  owner_lock& operator=(const owner_lock&) = delete;

  /// The descriptor, to be inherited by a child (made inheritable): the
  /// lock then lasts as long as any holder of it.
  int inheritable_fd();

  /// Rewrites the pid in the file (a supervisor that inherited the lock).
  static void write_pid(int fd, int64_t pid);

  /// The pid written in the lock file of `owner`; -1 when none.
  static int64_t pid_of(const std::filesystem::path& repository,
                        const std::string& owner);

 private:
  int fd_ = -1;
};

/// A piece of a monitor's log.
struct log_piece {
  /// Where it starts in the log (bytes).
  int64_t offset = 0;
  /// Where the next read continues.
  int64_t next_offset = 0;
  /// The log's size when read.
  int64_t size = 0;
  std::string data;
  /// The monitor ended (`ended`) and everything was read.
  bool eof = false;
};

/// At most `max` bytes of `log_file` from `offset` (a missing log is
/// empty). Throws control_error (bad_request) for a negative offset.
log_piece read_log(const std::filesystem::path& log_file, int64_t offset,
                   int64_t max, bool ended);

/// The monitors of one ledger; see the contract above.
class monitor_store {
 public:
  /// Works on `db`'s connection; `db` must outlive the store. `repository`
  /// is the top folder (for the owners' lock files).
  monitor_store(store::ledger& db, std::filesystem::path repository)
    : db_(db), repository_(std::move(repository)) {}

  /// Inserts the next monitor ("mon-<seq>") as running, owned by `owner`,
  /// with a `monitor.created` event, in one write transaction that first
  /// counts the live ones (running rows whose owner is `owner`, or one
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

  /// `row` with what is derived from it, as seen by owner `current`.
  monitor_view view(const monitor_row& row, const std::string& current) const;

  /// Whether a running row is watched by an owner that is still there:
  /// `current` itself, or one that holds its lock.
  bool is_live(const monitor_row& row, const std::string& current) const;

  /// Marks every running row whose owner is gone (not `current`, not
  /// holding its lock) unavailable, each with a
  /// `monitor.unavailable` event. Returns the changed rows.
  std::vector<monitor_row> reconcile(const std::string& current,
                                     int64_t now_ms);

 private:
  store::ledger& db_;
  std::filesystem::path repository_;
};

} // namespace taskforce::control
