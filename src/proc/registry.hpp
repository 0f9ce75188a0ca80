// The one registry of the processes this process runs, in three views:
//
// - children: the pids spawn() started and nobody reaped yet. Anything else
//   among our children is an orphan we adopted as subreaper, so the runner
//   may reap it without stealing another caller's exit status.
// - running groups: the process group of every command run() watches, in a
//   lock-free table with no fixed size that a signal handler can read:
//   kill_all_running() (the second Ctrl-C) kills them all at once.
// - by mark: the group of every command still running, found by its mark
//   (unique per run), so that its owner can kill it from another thread
//   with no handle shared with the runner: kill_running().
// - records: with a record folder, one file per command, written before
//   the command starts (not fsync'd: see write_record for why) and removed
//   once nothing carrying its mark (see mark.hpp) is left, so that the next
//   process finds what a crash of this one left behind: recover_leftovers().
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <unordered_set>

#include "src/proc/mark.hpp"
#include "src/proc/spawn.hpp"

namespace taskforce::proc {

// --- children ----------------------------------------------------------------

/// Guards registered_children() and every posix_spawn call.
std::mutex& registry_mutex();

/// The pids started by spawn() and not yet forgotten (hold the mutex).
std::unordered_set<pid_t>& registered_children();

/// Drops `pid` after its owner reaped it.
void forget_child(pid_t pid);

// --- running groups and records ----------------------------------------------

/// One command in the registry, from before its start until its last
/// process is gone: its mark, its record on disk, its group in memory.
class registered_group {
 public:
  /// Takes a place in the table and, when `record_folder` is not empty,
  /// writes the record there (the folder is created if needed), complete
  /// before anything starts. Throws spawn_error when the record cannot be
  /// written, or once kill_all_running() has begun.
  registered_group(const std::string& record_folder, std::string mark);
  /// Frees the place and removes the record: call it when nothing carrying
  /// the mark is left.
  ~registered_group();
  registered_group(const registered_group&) = delete;
  registered_group& operator=(const registered_group&) = delete;

  /// spawn() with the mark in the environment. The group is in the table
  /// from the instant it exists: a kill_all_running() in a signal handler
  /// waits for a start in progress rather than miss it. Throws spawn_error.
  child start(spawn_options opts);

  /// Takes the group out of the table. Call it after the group's last
  /// SIGKILL and before its leader is reaped (until then the group id
  /// cannot name anybody else's group).
  void forget_group() noexcept;

  /// The mark its processes carry.
  const std::string& mark() const {
    return mark_;
  }

 private:
  std::atomic<pid_t>* slot_;
  std::string mark_;
  std::string record_;
};

/// SIGKILL to the process group of the running command whose mark is
/// `mark`. Returns false when no such command is running (not started yet,
/// or its leader already reaped: its group id may name somebody else's
/// group by now, so it is never signalled). What left the group dies with
/// the run, which kills every process carrying the mark once its leader is
/// gone.
bool kill_running(const std::string& mark);

/// SIGKILL to every group in the table and to every process carrying a mark
/// of this process (those that left their group); no command starts in this
/// process afterwards. Async-signal-safe: for a signal handler about to
/// _exit.
void kill_all_running() noexcept;

// --- finding leftovers -------------------------------------------------------

/// Whether `pid` is a zombie (dead, waiting for its parent).
bool is_zombie(pid_t pid);

/// What a kill of marked processes did.
struct kill_report {
  /// How many processes it killed.
  size_t killed = 0;
  /// None of them was left alive (each is gone or a zombie).
  bool all_gone = true;
};

/// Kills (SIGKILL) every process matching `pattern` and, when `group` > 0,
/// that process group if a matching process is still in it (a group id is
/// never trusted alone: it may have been reused). Waits until they are gone
/// or zombies (at most 5 s); reaps those we adopted.
kill_report kill_marked(const env_pattern& pattern, pid_t group = 0);

/// Kills what the commands recorded in `record_folder` left running when
/// the process that ran them died, each found by its mark (and its group,
/// if a marked process is still in it), and removes their records. Returns
/// how many processes it killed. Only for the sole owner of the folder (in
/// taskforce: the holder of the run lock); a missing folder kills nothing.
size_t recover_leftovers(const std::string& record_folder);

/// Kills (SIGKILL) every process of this user whose mark starts with
/// `label_prefix` and waits until they are dead (at most 5 s). Returns how
/// many it killed; "" kills nothing.
size_t kill_leftovers(const std::string& label_prefix);

} // namespace taskforce::proc
