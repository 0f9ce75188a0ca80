// Every typed actor interface of taskforce, one signature per line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/timespan.hpp>
#include <caf/typed_actor.hpp>

#include "messages/background.hpp"
#include "messages/control.hpp"
#include "messages/errors.hpp"
#include "messages/pool.hpp"
#include "messages/process.hpp"
#include "messages/run.hpp"
#include "messages/type_ids.hpp"

namespace taskforce {

/// Timers for any owner, as delayed messages with generation numbers.
using watchdog_actor = caf::typed_actor<
  /// From an owner: after `delay`, send the owner (expired_atom, id,
  /// generation) unless it re-arms or disarms `id` meanwhile.
  caf::reacts_to<arm_atom, uint64_t, uint64_t, caf::timespan>,
  /// From an owner: forget its timer `id`; a pending expiry is dropped.
  caf::reacts_to<disarm_atom, uint64_t>,
  /// Internal: the delayed message of armed timer number `serial`.
  caf::reacts_to<expired_atom, uint64_t>>;

/// The admission pool of one server: every keyed pool (one per session in
/// `session` mode, one in `global` mode), its permits, FIFO queue and holders.
using pool_actor = caf::typed_actor<
  /// From a bridge or the embedding API: answers when granted, or with
  /// errc::queue_timeout / cancelled / duplicate_holder / shutting_down.
  caf::replies_to<acquire_atom, acquire_request>::with<grant>,
  /// A child without a reservation: granted at once, or errc::pool_full.
  caf::replies_to<adopt_atom, adopt_request>::with<grant>,
  /// Releases a holder (or cancels its wait); false if unknown or released.
  caf::replies_to<release_atom, std::string, release_reason>::with<bool>,
  /// Ties a background holder to its child session; true if released at once
  /// because that child was idle within `idleMemoryMs`.
  caf::replies_to<bind_atom, std::string, std::string>::with<bool>,
  /// A child session (second) started for an unnamed foreground call of a
  /// session (first): answers the holder it was tied to, "" when none.
  caf::replies_to<start_atom, std::string, std::string>::with<std::string>,
  /// A session went idle: releases the background holders it runs.
  caf::replies_to<caf::idle_atom, std::string>::with<std::vector<std::string>>,
  /// A session ended: releases its holders and cancels its waits.
  caf::replies_to<end_atom, std::string>::with<std::vector<std::string>>,
  /// A snapshot of every pool.
  caf::replies_to<status_atom>::with<pool_status>,
  /// A connection opens: events for its holders go to the listener as
  /// (event_atom, pool_event). Answers the connection's id.
  caf::replies_to<attach_atom, caf::actor>::with<uint64_t>,
  /// The connection wants every holder's events from now on.
  caf::replies_to<subscribe_atom, uint64_t>::with<bool>,
  /// The connection closed: releases its holders, cancels its waits.
  caf::replies_to<detach_atom, uint64_t>::with<std::vector<std::string>>,
  /// From the watchdog: the timer (id, generation) is due.
  caf::reacts_to<expired_atom, uint64_t, uint64_t>>;

/// What `serve --publish` offers other processes: the pool, for the token.
/// CAF's middleman itself checks no credential, so the pool is published
/// only behind this gate.
using gate_actor = caf::typed_actor<
  /// From a joining process: the token -> the pool (a pool_actor), or
  /// errc::unauthorized.
  caf::replies_to<join_atom, std::string>::with<caf::actor>>;

/// The ledger service: the one SQLite connection of a repository's
/// `.taskforce/ledger.sqlite`. Every answer comes after the commit; errors
/// are run_errc (ledger_io, unknown_run, refused_transition).
using ledger_actor = caf::typed_actor<
  /// From the orchestrator: task changes in one transaction (group
  /// commit); answers one ack per change once durable. A change is refused
  /// (and its ack says where the ledger has the task) when the ledger does
  /// not have the task in its `from`; the others still apply.
  caf::replies_to<record_atom, transition_batch>::with<batch_acks>,
  /// From the orchestrator: task columns without a state change; true once
  /// durable.
  caf::replies_to<record_atom, task_update>::with<bool>,
  /// From the orchestrator: the run changed state; true once durable.
  caf::replies_to<record_atom, run_transition>::with<bool>,
  /// From the orchestrator: tasks join the run (run id, the tasks), pending
  /// (done when the file checks them); true once durable.
  caf::replies_to<add_atom, std::string, task_additions>::with<bool>,
  /// The run's state and reason as the ledger has them now (another process
  /// may have asked for a pause or an abort).
  caf::replies_to<caf::get_atom, std::string>::with<run_transition>>;

/// The git service: the one writer of the main repository (libgit2).
using git_actor = caf::typed_actor<
  /// From a worker: a worktree on `taskforce/<run>/<task>` from the base tip
  /// (or the kept one of an interrupted attempt).
  caf::replies_to<lease_atom, worktree_request>::with<worktree_lease>,
  /// From a worker running in place: remember the checkout as it is before
  /// the attempt, with the task's scope; answers HEAD's commit.
  caf::replies_to<snapshot_atom, scope_request>::with<std::string>,
  /// From a worker that ran in place, as it ends: the attempt is over.
  caf::reacts_to<release_atom, scope_request>,
  /// From a worker: what its attempt brings, or how HEAD moved (the moved
  /// work is then pinned under refs/taskforce/kept/ and the task branch put
  /// back where the attempt began).
  caf::replies_to<changed_atom, scope_request>::with<scope_report>,
  /// From a worker whose attempt passed its checks, with the paths it
  /// changed: a scratch checkout with the task's work for the verifier;
  /// answers its folder and the task's diff.
  caf::replies_to<review_atom, scope_request,
                  std::vector<std::string>>::with<std::string, std::string>,
  /// From the worker when the verifier is done (with its log file): what
  /// the verifier changed in the scratch (noted in the log); the scratch
  /// is removed.
  caf::replies_to<reviewed_atom, scope_request,
                  std::string>::with<std::vector<std::string>>,
  /// From the orchestrator: commit, merge into the base, clean up.
  caf::replies_to<merge_atom, merge_request>::with<merge_outcome>,
  /// From the orchestrator: whether the task's branch is in the base
  /// already (merged by hand while it waited in review): merged (with the
  /// commit) or not_merged; nothing is changed.
  caf::replies_to<check_atom, merge_request>::with<merge_outcome>,
  /// Removes a task's worktree and branch (run, task); true if removed.
  caf::replies_to<discard_atom, std::string, std::string>::with<bool>,
  /// The run is over: removes the clean, merged worktrees kept for reuse.
  caf::replies_to<finished_atom>::with<bool>>;

/// The orchestrator of one run.
using orchestrator_actor = caf::typed_actor<
  /// From the command: start (or continue) scheduling.
  caf::reacts_to<start_atom>,
  /// Pause with a reason: running attempts are interrupted (Ctrl-C), or
  /// left to finish when the second argument is false.
  caf::reacts_to<pause_atom, std::string, bool>,
  /// Stop the run for good: attempts interrupted, the run aborted.
  caf::reacts_to<abort_atom, std::string>,
  /// From a worker: its attempt ended.
  caf::reacts_to<outcome_atom, attempt_outcome>,
  /// From a worker: its attempt entered a new phase.
  caf::reacts_to<progress_atom, attempt_progress>,
  /// From a person: approve a task in review (integrate it) or held (lift
  /// its hold); answered once the change is durable, or with run_errc
  /// unknown_task / wrong_state (naming the task's state).
  caf::replies_to<approve_atom, std::string>::with<steer_reply>,
  /// From a person: turn down a task in review or held (task, why); it
  /// becomes blocked. Answered as approve.
  caf::replies_to<reject_atom, std::string, std::string>::with<steer_reply>,
  /// From a person: answer a blocked task (task, text); it runs again and
  /// its worker's first turn is the answer. Answered as approve.
  caf::replies_to<answer_atom, std::string, std::string>::with<steer_reply>,
  /// From a person: tasks join the run, recorded in the ledger first;
  /// answered once durable, or with run_errc duplicate_task / bad_tasks /
  /// ledger_io.
  caf::replies_to<add_atom, task_additions>::with<steer_reply>,
  /// Every task of the run as the scheduler has it now (the control
  /// endpoint checks where `send` may go).
  caf::replies_to<caf::get_atom>::with<steer_reply>,
  /// From itself: time to look for a pause or abort asked by another process.
  caf::reacts_to<caf::tick_atom>,
  /// From itself: changes that lingered for company are written now.
  caf::reacts_to<record_atom>>;

/// The control plane of one repository: managed background tasks (their
/// contracts, leases, tokens and completion gate, in the ledger) and
/// monitors.
using control_plane_actor = caf::typed_actor<
  /// From a bridge: one bg.* or monitor.* request, answered once the change
  /// is durable (bg.complete: once its validations ran; monitor.wait: when
  /// the monitor exits, matches or the wait times out).
  caf::replies_to<control_atom, control::control_request>::with<control_answer>,
  /// From a bridge: every change from now on goes to it as (event_atom,
  /// control_event), until it goes down.
  caf::replies_to<subscribe_atom, caf::actor>::with<bool>,
  /// From a bridge: a harness ended a session (the pool's `end`); a task
  /// whose child it was is interrupted and its leases freed.
  caf::reacts_to<end_atom, std::string>,
  /// From itself: hand expired dispatch tokens' tasks back to the queue.
  caf::reacts_to<caf::tick_atom>,
  /// From a validation helper: a completion's validations ran.
  caf::reacts_to<validation_done>,
  /// From the monitors actor: a monitor changed.
  caf::reacts_to<monitor_event>>;

} // namespace taskforce
