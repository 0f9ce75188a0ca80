// The type-ID block: every type that crosses an actor boundary, registered
// once with `cfg.add_message_types<caf::id_block::taskforce>()`, so nothing
// fails at run time when a message crosses the network.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/type_id.hpp>

namespace taskforce {

// -- pool family (messages/pool.hpp) ------------------------------------------

enum class holder_kind : uint8_t;
enum class release_reason : uint8_t;
enum class pool_event_kind : uint8_t;
struct acquire_request;
struct adopt_request;
struct grant;
struct pool_event;
struct running_entry;
struct queued_entry;
struct pool_view;
struct pool_status;

// -- run family (messages/run.hpp, src/run) ----------------------------------

enum class task_state : uint8_t;
enum class task_event : uint8_t;
enum class run_state : uint8_t;
enum class attempt_phase : uint8_t;
enum class turn_kind : uint8_t;
struct task_spec;
struct token_usage;
struct turn_spent;
struct task_facts;
struct task_transition;
struct transition_batch;
struct transition_ack;
struct batch_acks;
struct task_update;
struct run_transition;
struct worktree_lease;
struct worktree_request;
struct merge_request;
struct merge_outcome;
struct attempt_outcome;
struct attempt_progress;
struct run_event;
struct scope_request;
struct scope_report;
struct task_view;
struct steer_reply;
struct task_additions;

// -- process family (messages/process.hpp) -----------------------------------

struct proc_started;
struct proc_output;
struct proc_exited;

// -- control family (messages/control.hpp, messages/background.hpp) ----------

enum class control_errc : uint8_t;
struct monitor_spec;
struct monitor_info;
struct monitor_output;
struct monitor_wait_result;
struct monitor_event;
struct control_event;
struct control_answer;
struct validation_done;

namespace control {

enum class control_op : uint8_t;
struct control_request;

} // namespace control

namespace run {

enum class attempt_end : uint8_t;
enum class merge_end : uint8_t;

} // namespace run

} // namespace taskforce

CAF_BEGIN_TYPE_ID_BLOCK(taskforce, caf::first_custom_type_id)

CAF_ADD_TYPE_ID(taskforce, (std::vector<std::string>))

CAF_ADD_TYPE_ID(taskforce, (taskforce::holder_kind))
CAF_ADD_TYPE_ID(taskforce, (taskforce::release_reason))
CAF_ADD_TYPE_ID(taskforce, (taskforce::pool_event_kind))
CAF_ADD_TYPE_ID(taskforce, (taskforce::acquire_request))
CAF_ADD_TYPE_ID(taskforce, (taskforce::adopt_request))
CAF_ADD_TYPE_ID(taskforce, (taskforce::grant))
CAF_ADD_TYPE_ID(taskforce, (taskforce::pool_event))
CAF_ADD_TYPE_ID(taskforce, (taskforce::running_entry))
CAF_ADD_TYPE_ID(taskforce, (taskforce::queued_entry))
CAF_ADD_TYPE_ID(taskforce, (taskforce::pool_view))
CAF_ADD_TYPE_ID(taskforce, (taskforce::pool_status))
CAF_ADD_TYPE_ID(taskforce, (std::vector<taskforce::running_entry>))
CAF_ADD_TYPE_ID(taskforce, (std::vector<taskforce::queued_entry>))
CAF_ADD_TYPE_ID(taskforce, (std::vector<taskforce::pool_view>))

// Pool protocol.
CAF_ADD_ATOM(taskforce, taskforce, acquire_atom, "acquire")
CAF_ADD_ATOM(taskforce, taskforce, adopt_atom, "adopt")
CAF_ADD_ATOM(taskforce, taskforce, release_atom, "release")
CAF_ADD_ATOM(taskforce, taskforce, bind_atom, "bind")
CAF_ADD_ATOM(taskforce, taskforce, end_atom, "end")
CAF_ADD_ATOM(taskforce, taskforce, status_atom, "status")
CAF_ADD_ATOM(taskforce, taskforce, subscribe_atom, "subscribe")
CAF_ADD_ATOM(taskforce, taskforce, attach_atom, "attach")
CAF_ADD_ATOM(taskforce, taskforce, detach_atom, "detach")
CAF_ADD_ATOM(taskforce, taskforce, event_atom, "event")
// Transports: a sink tells its bridge how many output bytes left its queue;
// a connection resumes reading its socket.
CAF_ADD_ATOM(taskforce, taskforce, written_atom, "written")
CAF_ADD_ATOM(taskforce, taskforce, read_atom, "read")
// Who may connect: a TCP connection's time to say hello with the token runs
// out; a process joins a published pool with the token.
CAF_ADD_ATOM(taskforce, taskforce, hello_atom, "hello")
CAF_ADD_ATOM(taskforce, taskforce, join_atom, "join")
// Timers (watchdog).
CAF_ADD_ATOM(taskforce, taskforce, arm_atom, "arm")
CAF_ADD_ATOM(taskforce, taskforce, disarm_atom, "disarm")
CAF_ADD_ATOM(taskforce, taskforce, expired_atom, "expired")

CAF_END_TYPE_ID_BLOCK(taskforce)

// The run family: a second block, so the run's vocabulary grows without
// renumbering the pool's.
CAF_BEGIN_TYPE_ID_BLOCK(taskforce_run, caf::id_block::taskforce::end)

CAF_ADD_TYPE_ID(taskforce_run, (taskforce::task_state))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::task_event))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::run_state))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::run::attempt_end))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::run::merge_end))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::attempt_phase))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::turn_kind))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::task_spec))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::token_usage))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::turn_spent))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::task_facts))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::task_transition))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::transition_batch))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::transition_ack))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::batch_acks))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::task_update))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::run_transition))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::worktree_lease))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::worktree_request))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::merge_request))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::merge_outcome))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::attempt_outcome))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::attempt_progress))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::run_event))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::scope_request))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::scope_report))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::task_view))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::steer_reply))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::task_additions))

// Ledger protocol.
CAF_ADD_ATOM(taskforce_run, taskforce, record_atom, "record")
CAF_ADD_ATOM(taskforce_run, taskforce, add_atom, "add")
// Git protocol.
CAF_ADD_ATOM(taskforce_run, taskforce, lease_atom, "lease")
CAF_ADD_ATOM(taskforce_run, taskforce, merge_atom, "merge")
CAF_ADD_ATOM(taskforce_run, taskforce, check_atom, "check")
CAF_ADD_ATOM(taskforce_run, taskforce, changed_atom, "changed")
CAF_ADD_ATOM(taskforce_run, taskforce, snapshot_atom, "snapshot")
CAF_ADD_ATOM(taskforce_run, taskforce, discard_atom, "discard")
CAF_ADD_ATOM(taskforce_run, taskforce, review_atom, "review")
CAF_ADD_ATOM(taskforce_run, taskforce, reviewed_atom, "reviewed")
// Orchestrator protocol.
CAF_ADD_ATOM(taskforce_run, taskforce, start_atom, "start")
CAF_ADD_ATOM(taskforce_run, taskforce, pause_atom, "pause")
CAF_ADD_ATOM(taskforce_run, taskforce, resume_atom, "resume")
CAF_ADD_ATOM(taskforce_run, taskforce, abort_atom, "abort")
CAF_ADD_ATOM(taskforce_run, taskforce, outcome_atom, "outcome")
CAF_ADD_ATOM(taskforce_run, taskforce, progress_atom, "progress")
CAF_ADD_ATOM(taskforce_run, taskforce, finished_atom, "finished")
// Worker protocol: the orchestrator stops an attempt.
CAF_ADD_ATOM(taskforce_run, taskforce, cancel_atom, "cancel")
// A person steers a live run.
CAF_ADD_ATOM(taskforce_run, taskforce, approve_atom, "approve")
CAF_ADD_ATOM(taskforce_run, taskforce, reject_atom, "reject")
CAF_ADD_ATOM(taskforce_run, taskforce, answer_atom, "answer")
// A worker and its process helper (messages/process.hpp).
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::proc_started))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::proc_output))
CAF_ADD_TYPE_ID(taskforce_run, (taskforce::proc_exited))
// A worker takes its task's undelivered mail.
CAF_ADD_ATOM(taskforce_run, taskforce, take_atom, "take")
// The run's mailbox stores mail down to a task; the driver's control
// endpoint hands it a person's request.
CAF_ADD_ATOM(taskforce_run, taskforce, post_atom, "post")
CAF_ADD_ATOM(taskforce_run, taskforce, steer_atom, "steer")

CAF_END_TYPE_ID_BLOCK(taskforce_run)

// The control family (managed background work and monitors): a third
// block, after the run's.
CAF_BEGIN_TYPE_ID_BLOCK(taskforce_control, caf::id_block::taskforce_run::end)

CAF_ADD_TYPE_ID(taskforce_control, (taskforce::monitor_spec))
CAF_ADD_TYPE_ID(taskforce_control, (taskforce::monitor_info))
CAF_ADD_TYPE_ID(taskforce_control, (taskforce::monitor_output))
CAF_ADD_TYPE_ID(taskforce_control, (taskforce::monitor_wait_result))
CAF_ADD_TYPE_ID(taskforce_control, (taskforce::monitor_event))
CAF_ADD_TYPE_ID(taskforce_control, (std::vector<taskforce::monitor_info>))

// Monitors: wait for an exit or the wake pattern, kill the whole group;
// a process helper's wake pattern matched.
CAF_ADD_ATOM(taskforce_control, taskforce, wait_atom, "wait")
CAF_ADD_ATOM(taskforce_control, taskforce, kill_atom, "kill")
CAF_ADD_ATOM(taskforce_control, taskforce, ready_atom, "ready")

// The control plane: a bridge's bg.* and monitor.* requests, its answers,
// and the changes it publishes.
CAF_ADD_TYPE_ID(taskforce_control, (taskforce::control::control_op))
CAF_ADD_TYPE_ID(taskforce_control, (taskforce::control::control_request))
CAF_ADD_TYPE_ID(taskforce_control, (taskforce::control_event))
CAF_ADD_TYPE_ID(taskforce_control, (taskforce::control_answer))
CAF_ADD_TYPE_ID(taskforce_control, (taskforce::validation_done))
CAF_ADD_ATOM(taskforce_control, taskforce, control_atom, "control")

CAF_END_TYPE_ID_BLOCK(taskforce_control)
