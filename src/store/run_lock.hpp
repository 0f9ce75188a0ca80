// The run lock: two processes never drive a repository's run at once.
//
// An open-file-description lock (fcntl F_OFD_SETLK) on `.taskforce/run.lock`,
// held for as long as the `run_lock` object lives. The kernel drops it when
// the process dies, SIGKILL included, so a crashed driver never blocks the
// next one; the descriptor is close-on-exec, so worker processes spawned by
// the driver never inherit it. The holder writes its pid and run id into the
// file so that the refused process can say who drives the run.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <variant>

namespace taskforce::store {

/// The lock's file name inside `.taskforce/`.
constexpr const char* run_lock_file_name = "run.lock";

/// Who holds the lock, as the holder wrote it (pid 0 and an empty run id
/// when the holder has not written them yet).
struct run_lock_holder {
  int pid = 0;
  std::string run_id;
};

/// "run <id> is being driven by process <pid>" (or a vaguer wording when the
/// holder's details are unknown), for the refusal message.
std::string describe(const run_lock_holder& x);

/// The held lock; released on destruction or by `release`.
class run_lock {
 public:
  /// Takes the lock without waiting, creating the file (and its folder) if
  /// needed, and writes this process's pid and `run_id` (may be empty when
  /// the run is not created yet: see `set_run`). Returns the lock, or who
  /// holds it. Throws std::system_error when the file cannot be opened.
  static std::variant<run_lock, run_lock_holder>
  try_acquire(const std::filesystem::path& file,
              const std::string& run_id = "");

  /// Who holds the lock right now, without taking it (nullopt: nobody).
  /// Never disturbs a holder or a process about to acquire it.
  static std::optional<run_lock_holder>
  holder(const std::filesystem::path& file);

  run_lock(run_lock&& other) noexcept;
  run_lock& operator=(run_lock&& other) noexcept;
  run_lock(const run_lock&) = delete;
  run_lock& operator=(const run_lock&) = delete;
  ~run_lock();

  /// Rewrites the run id in the file (once the run is created).
  void set_run(const std::string& run_id);

  /// Lets go of the lock (idempotent).
  void release();

  /// Whether this object still holds the lock.
  bool held() const {
    return fd_ >= 0;
  }

 private:
  explicit run_lock(int fd) : fd_(fd) {}

  int fd_ = -1;
};

} // namespace taskforce::store
