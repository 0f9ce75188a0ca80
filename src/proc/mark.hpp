// The mark every process of a run carries, and finding processes by it.
//
// run() puts TASKFORCE_PROC_TOKEN=<label>#<instance>-<n> into the
// environment of the command it starts. Every descendant inherits it (unless
// it clears its environment on purpose), whichever process group or session
// it moves to, so the mark finds what the process group alone misses.
// <instance> is drawn at random once per process (128 bits), so no other
// taskforce, repository or user ever hands out the same mark; <n> counts the
// runs of this process.
//
// The scan reads /proc/<pid>/environ of every process with plain system
// calls and no allocation: it is async-signal-safe (a second Ctrl-C uses it
// from its signal handler).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace taskforce::proc {

/// The environment variable holding the mark.
constexpr const char* mark_variable = "TASKFORCE_PROC_TOKEN";
/// The start of its entry in an environment.
constexpr const char* mark_entry = "TASKFORCE_PROC_TOKEN=";

/// A fresh mark: `label`, '#', this process's instance, '-', a counter.
std::string new_mark(const std::string& label);

/// "#<instance>-", the part every mark of this process contains, with no
/// other '#' in it; empty until new_mark() was first called in this process
/// (a forked child draws its own). Async-signal-safe.
const char* instance_tag() noexcept;

/// Which environment entries match: those that start with `head` (not
/// empty) and then
/// either end there (`whole`), or contain `tail` somewhere after it (when
/// `tail` is not empty; its first character must occur nowhere else in it),
/// or anything (neither).
struct env_pattern {
  /// The start of the entry, e.g. "TASKFORCE_PROC_TOKEN=run-7/".
  const char* head = "";
  /// Something the rest of the entry contains.
  const char* tail = "";
  /// The entry is exactly `head`.
  bool whole = false;
};

/// Matches a pattern against a process's environment fed in pieces.
class env_matcher {
 public:
  /// A matcher at the start of an environment.
  explicit env_matcher(const env_pattern& pattern) noexcept;
  /// Reads `size` more bytes; true once some entry matched.
  bool feed(const char* data, size_t size) noexcept;
  /// The environment ended (its last entry may lack its NUL); true when
  /// some entry matched.
  bool finish() noexcept;

 private:
  enum class phase { head, end, tail, skip, matched };
  void next_entry() noexcept;
  const char* head_;
  size_t head_size_;
  const char* tail_;
  size_t tail_size_;
  bool whole_;
  phase phase_ = phase::head;
  size_t at_ = 0;
};

/// Whether process `pid`'s environment has an entry matching `pattern`
/// (false when it is gone, a zombie, or not ours to read).
/// Async-signal-safe.
bool environment_matches(pid_t pid, const env_pattern& pattern) noexcept;

/// Called for each process found by a scan, with the caller's context.
using found_process = void (*)(pid_t pid, void* context);

/// Calls `found` for every process (but this one) whose environment has an
/// entry matching `pattern`. A zombie's environment is empty: it is never
/// found. Returns false when /proc cannot be listed. Async-signal-safe when
/// `found` is.
bool scan_processes(const env_pattern& pattern, found_process found,
                    void* context) noexcept;

} // namespace taskforce::proc
