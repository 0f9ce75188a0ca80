// Steering a run that no process drives: the person's command is decided by
// the run's scheduler, loaded from the ledger as the driver would load it,
// and its changes are written to the ledger; the next `resume` carries them
// out (a task approved in review is merged then, an answered task runs its
// answer turn, added tasks start). The caller holds the run lock.
//
// What each command does here:
//   approve    review -> merging (merged at resume); held -> pending with the
//              hold lifted for good (the file's marker no longer holds it)
//   reject     review|held -> blocked with the reason
//   answer     blocked -> ready, and the answer waits in the mailbox for the
//              task's next turn
//   send       a message waits in the mailbox for the task's next turn (or
//              `taskforce inbox`): a task that will run again, since no
//              worker runs now
//   broadcast  send to every task that will run again
//   add        the file's tasks join the run (all or none)
#pragma once

#include <string>
#include <vector>

#include "src/run/scheduler.hpp"
#include "src/run/steer_request.hpp"
#include "src/store/ledger.hpp"
#include "src/taskfile/task.hpp"

namespace taskforce::run {

/// Whether a worker of a task in state `x` will still run in this run, so
/// mail sent to it now is read: not done, skipped, merging, in review or in
/// conflict.
bool will_run_again(task_state x);

/// Decides `request` for run `run_id` with `sched` (loaded from `db`) and
/// writes what it changes to `db`. `added` are the parsed tasks of
/// `request.file` for `add`, and `added_file` that file as the ledger
/// records it (relative to the repository). Never throws for a refusal: the
/// verdict says what happened or why not, naming the task's state.
steer_verdict steer_paused(scheduler& sched, store::ledger& db,
                           const std::string& run_id,
                           const steer_request& request,
                           std::vector<task_spec> added = {},
                           const std::string& added_file = {});

} // namespace taskforce::run
