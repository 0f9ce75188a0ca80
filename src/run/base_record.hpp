// What a run writes down about its base branch, in the ledger's event log:
// each landing of one of its merges (before the base moves) and its end,
// each tip the run vouches for, each move of the base it refused. Recovery
// reads them back: the one checkout update a kill cut short, and the tip a
// moved base is judged against (src/git/base_guard.hpp).
//
// The events (task_id set when a task is concerned):
//   base.landing  {"commit", "base", "paths"}   before the base moves
//   base.landed   {"commit", "moved"}           the checkout followed, or
//                                               the base never moved
//   base.tip      {"tip", "why", "attempt"}     the tip the run vouches for
//   base.refused  {"from", "to", "what", "tasks"}
//
// Blocks (SQLite, libgit2); one thread. Failures throw store::ledger_error
// or git::error.
#pragma once

#include <string>
#include <vector>

#include "src/git/repository.hpp"
#include "src/git/workspace.hpp"
#include "src/store/ledger.hpp"

namespace taskforce::run {

/// The git service's journal: writes the events above into `db` (a
/// connection of the git service's own) for run `run_id`.
class base_record : public git::base_journal {
 public:
  base_record(store::ledger& db, std::string run_id);

  void landing(const git::checkout_update& u) override;
  void landed(const git::checkout_update& u, bool moved) override;
  void vouch(const std::string& tip, const std::string& why,
             const std::string& task, uint64_t attempt) override;
  void refused(const git::base_move& m, const std::string& what) override;

 private:
  store::ledger& db_;
  std::string run_id_;
};

/// What the ledger holds about a run's base branch.
struct base_state {
  /// The tip the run vouched for last: the last `base.tip`, or the commit
  /// of a later landing that moved the base; "" when none is recorded (a
  /// run of an older taskforce).
  std::string vouched;
  /// Landings whose end is not recorded, oldest first (the task in
  /// `task`).
  std::vector<git::checkout_update> unfinished;
};

/// Reads what the ledger holds about run `run_id`'s base.
base_state read_base_state(const store::ledger& db, const std::string& run_id);

/// Recovery, for run `run_id` on `base_branch`: each landing whose end the
/// ledger lacks is finished. Where the base is at its merge, the checkout
/// update is completed (git::complete_checkout: its paths only, never over
/// an index entry or file that holds anything but the base's or the
/// merge's version); where the base never moved, nothing is. Either way
/// its end is recorded. Returns what a person should hear (a landing it
/// could not complete, paths it left alone), one line each.
std::vector<std::string> finish_landings(git::repository& repo,
                                         store::ledger& db,
                                         const std::string& run_id,
                                         const std::string& base_branch);

} // namespace taskforce::run
