// How a worker attempt and an integration end: the words the scheduler
// takes from a worker and from the git service. Kept apart from the
// scheduler so that the message vocabulary can name them without it.
#pragma once

#include <cstdint>
#include <string_view>

namespace taskforce::run {

/// How a worker attempt ended.
enum class attempt_end : uint8_t {
  /// Work done, scope checked, gate passed.
  done,
  /// The worker needs a person (its question is the reason).
  blocked,
  /// The worker, the scope check or the gate failed.
  failed,
  /// Cut short (cancelled); does not count as an attempt.
  interrupted,
  /// The base branch moved by something else than the run's own merges
  /// while the attempt ran: it fails, and the run pauses whatever
  /// continueOnError says (the reason names the commits).
  base_moved,
};

/// How an integration ended.
enum class merge_end : uint8_t {
  /// The branch is in the base now (or already was).
  merged,
  /// Nothing to merge: the task changed nothing.
  empty,
  /// The merge conflicts, or would overwrite edits in the main checkout.
  conflict,
  /// Git failed.
  error,
  /// For check_merged: the branch is not in the base.
  not_merged,
  /// verifyMerged: the gate failed on the merge result; the base did not
  /// move (the task goes back to repair).
  gate_failed,
  /// Between the git service and the merge check only: the merge result
  /// is made and checked out for its gate; the base did not move.
  prepared,
  /// Between the git service and the merge check only: the base or the
  /// branch moved since the merge result was made; nothing was written.
  stale,
  /// The base branch moved by something else than the run's own merges,
  /// and this task has to answer for it: nothing was merged, the task
  /// waits in conflict and the run pauses (the reason names the commits).
  base_moved,
};

/// The reason a task that changed nothing is done with: its recorded merge
/// commit is then the base as the task found it, not work of its own.
inline constexpr const char* no_changes_reason = "no changes";

/// The beginning of the reason of a task a new run of its file carries over
/// as done, merged in an earlier run; the run's id follows.
inline constexpr const char* carried_over_reason = "already merged in run ";

/// The lowercase name.
const char* to_string(attempt_end x);

/// The lowercase name.
const char* to_string(merge_end x);

/// Parses an attempt end's name; false (and `out` untouched) when unknown.
bool from_string(std::string_view name, attempt_end& out);

/// Parses a merge end's name; false (and `out` untouched) when unknown.
bool from_string(std::string_view name, merge_end& out);

} // namespace taskforce::run
