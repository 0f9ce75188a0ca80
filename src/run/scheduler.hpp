// The run's scheduler: the pure core that decides, for one run, which tasks
// start, what every event does to a task's state, and when the run pauses,
// completes or is aborted. ninja's `Plan` is the model: the orchestrator
// actor feeds it events and carries out its decisions; it never does I/O,
// never reads a clock and knows nothing of actors.
//
// Every state change goes through `transition()` of task_state.hpp (the one
// table of legal moves) and comes out as a `task_change` to make durable.
// The scheduler updates its own view at once, so it never decides twice on
// the same task, but what a change asks for (`then`: launch a worker, merge)
// must be done only after the ledger committed that change.
//
//   event ──▶ scheduler ──▶ decision { task changes (+ what to do once each
//                                      is durable), orders to carry out
//                                      now, a run change }
//
// An event only records what happened; `next()` answers what starts now and
// whether the run is over. The orchestrator asks it after every event;
// simulate_waves asks it once per wave.
//
// The run's phase:
//
//   running ──pause──▶ pausing ──nothing active──▶ paused
//      │                                             ▲
//      ├──nothing can start, someone must act────────┘
//      │  (a task waiting for a managed task's reservation keeps it running)
//      ├──every task done or skipped (or failed, continueOnError)──▶ completed
//      └──abort──▶ aborting ──nothing active──▶ aborted
//
// `taskforce plan` simulates waves with this same code (simulate_waves).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "src/plan/graph.hpp"
#include "src/run/budget.hpp"
#include "src/run/outcome.hpp"
#include "src/run/task_state.hpp"

namespace taskforce::run {

/// What passing work becomes.
enum class integration : uint8_t {
  /// Merged into the base branch (integrate mode, autoMerge).
  merge,
  /// Kept on its branch in `review` until approved (autoMerge: false).
  review,
  /// Left uncommitted in the main checkout (assist mode): done at once.
  leave,
};

/// The rules of one run, from its config.
struct rules {
  /// Attempts at once (running or verifying); at least 1.
  size_t max_concurrency = 3;
  /// Failed attempts of a task before it stays failed; at least 1.
  uint64_t max_attempts = 2;
  /// A failed or blocked task skips its dependents and the rest goes on;
  /// otherwise it pauses the run.
  bool continue_on_error = false;
  /// A blocked task waits for `answer` while the run stays open.
  bool ask_user_on_blocked = false;
  /// What passing work becomes.
  integration finish = integration::merge;
  /// Once the run's usage reaches it, no task starts and the run pauses
  /// with reason `budget` (running tasks finish and merge).
  run::budget budget;
  /// A gate that failed on the merge result sends the task back to its
  /// worker (repairOnFailure), at most `max_repairs` times per task before
  /// it counts as a failed attempt.
  bool repair_on_failure = true;
  uint64_t max_repairs = 2;
};

/// A task as the scheduler starts with it (from the ledger and the file).
struct task_record {
  /// Its state in the ledger.
  task_state state = task_state::pending;
  /// The task file's hold pattern matches it and nobody lifted the hold.
  bool hold = false;
  /// The matching line (the hold's reason).
  std::string hold_reason;
  /// Its risk needs approval before it is integrated, and nobody approved.
  bool needs_approval = false;
  /// Why it is in its state (from the ledger).
  std::string reason;
};

/// What the orchestrator does for a task: once a change is durable (a
/// change's `then`), or at once (a decision's `now`).
enum class follow_up : uint8_t {
  /// Nothing: the change only records what happened.
  none,
  /// Start a worker attempt (its first turn follows from the task's
  /// mailbox: an answer waiting, or a fresh start).
  launch,
  /// Integrate the task's branch into the base branch; answer with
  /// merge_ended.
  merge,
  /// Find out whether the task's branch is already in the base (merged by
  /// hand while the task waited in review); answer with merge_ended.
  check_merged,
  /// Stop the task's worker; its outcome arrives later as interrupted.
  cancel,
};

/// The lowercase name.
const char* to_string(follow_up x);

/// Something to do at once, with no change to record first.
struct order {
  size_t task = 0;
  follow_up what = follow_up::none;
};

/// One task state change to make durable.
struct task_change {
  /// The task (position in the graph).
  size_t task = 0;
  /// What happened; `to == transition(from, event)`.
  task_event event = task_event::start;
  task_state from = task_state::pending;
  task_state to = task_state::pending;
  /// Why; may be empty.
  std::string reason;
  /// What to do once durable.
  follow_up then = follow_up::none;
};

/// A run state change to make durable.
struct run_change {
  run_state to = run_state::running;
  std::string reason;
};

/// The scheduler's answer to an event.
struct decision {
  /// In order; each stands alone (a refused one does not undo the others).
  std::vector<task_change> changes;
  /// To do at once: cancel workers, merge again what a stop left merging,
  /// check review tasks for a hand merge.
  std::vector<order> now;
  /// Recorded after `changes`.
  std::optional<run_change> run;

  /// Whether there is nothing to do.
  bool empty() const {
    return changes.empty() && now.empty() && !run;
  }

  /// Appends `other`'s changes and orders; its run change wins.
  decision& operator+=(decision other);
};

/// Where the whole run stands.
enum class run_phase : uint8_t {
  /// Not started yet (before `start`).
  idle,
  running,
  /// No new starts; waits for the active tasks, then `paused`.
  pausing,
  paused,
  completed,
  /// Stops the active tasks, then `aborted`.
  aborting,
  aborted,
};

/// The lowercase name.
const char* to_string(run_phase x);

/// Why a person's command does not apply.
enum class refusal : uint8_t {
  /// It applies.
  none,
  /// The task is not in a state the command applies to.
  wrong_state,
  /// A task to add has the id of a task of the run (or of another one
  /// being added).
  duplicate,
  /// The tasks to add are not a valid graph: an unknown dependency, a
  /// cycle, an empty id.
  invalid,
};

/// The answer to a person's command (approve, reject, answer, add).
struct steer_result {
  /// False when the command does not apply; `why_not` and `error` say why.
  bool ok = false;
  refusal why_not = refusal::none;
  std::string error;
  /// The changes the command makes.
  decision changes;
};

/// The scheduler of one run. Not thread-safe; one owner.
class scheduler {
 public:
  /// A run over `graph` whose tasks start as `records` (one per task, in
  /// graph order). Tasks the file marks done count as done.
  scheduler(plan::task_graph graph, std::vector<task_record> records, rules r);

  // -- queries ---------------------------------------------------------------

  /// The graph (specs, deps, conflicts).
  const plan::task_graph& graph() const {
    return graph_;
  }

  /// The number of tasks.
  size_t size() const {
    return records_.size();
  }

  /// Task `i`'s state as the scheduler sees it.
  task_state state(size_t i) const {
    return records_[i].state;
  }

  /// Task `i`'s reason.
  const std::string& reason(size_t i) const {
    return records_[i].reason;
  }

  /// Failed attempts counted against maxAttempts since this scheduler
  /// started (a resume gives every task a fresh budget).
  uint64_t failures(size_t i) const {
    return failures_[i];
  }

  /// The position of the task with `id`.
  std::optional<size_t> find(std::string_view id) const {
    return graph_.find(id);
  }

  /// Where the run stands.
  run_phase phase() const {
    return phase_;
  }

  /// Why the run is pausing, paused, completed (what failed under
  /// continueOnError) or aborting; empty while it runs.
  const std::string& phase_reason() const {
    return phase_reason_;
  }

  /// Attempts running or verifying now.
  size_t attempts_open() const;

  /// Whether nothing is active (no attempt, merge or merge check).
  bool quiet() const;

  /// Whether the run is over for this process (paused, completed,
  /// aborted) — a paused run may still wait for an answer.
  bool finished() const;

  /// Whether a blocked task waits for `answer` with askUserOnBlocked: the
  /// run is paused but should be kept open for the answer (not when a
  /// person asked for the pause: then the driver may stop).
  bool awaiting_answer() const;

  /// The rules.
  const rules& rule_set() const {
    return rules_;
  }

  /// The usage of the whole run: what the ledger had when the scheduler
  /// was made (`spent`) and what was reported since.
  const spend& total_spent() const {
    return spent_;
  }

  /// Whether the run's usage reached its budget: no task starts.
  bool over_budget() const {
    return reached(rules_.budget, spent_);
  }

  // -- the run ---------------------------------------------------------------

  /// Starts (or resumes) the run: records it running, puts held tasks on
  /// hold and lifts holds the file no longer asks for, gives failed and
  /// blocked tasks another chance (not a rejected one, nor a blocked one
  /// with askUserOnBlocked: they wait for an answer), merges again what
  /// conflicted or was cut short while merging, checks review tasks for a hand
  /// merge, then `next()`.
  decision start();

  /// What starts now: tasks whose dependencies are done become ready; up to
  /// the free slots of them, in scheduling order and conflicting with
  /// nothing active, start. When nothing is active and nothing can start,
  /// the run pauses (someone must act), completes, or ends its pause or
  /// abort.
  decision next();

  /// Stops starting tasks; `interrupt` also cancels the running attempts.
  /// The run is recorded paused at once.
  decision pause(std::string why, bool interrupt);

  /// Cancels the running attempts; the run is recorded aborted once they
  /// ended.
  decision abort(std::string why);

  /// The ledger says another process aborted the run: as abort, and a run
  /// that completed here ends aborted too (its completion cannot be
  /// recorded over the abort).
  decision aborted_elsewhere(std::string why);

  /// The ledger has the run in `in_ledger` (another process may have
  /// paused or aborted it; `why` its reason). An abort is final and always
  /// followed; a pause only while the run is running and `stale` is false
  /// (no run change was decided here since the ledger was asked).
  decision observed(run_state in_ledger, std::string why, bool stale);

  /// What the ledger records for a run this process is done with: its
  /// completion or abort, and otherwise a pause; a pause too when changes
  /// were lost on the way to the ledger (`changes_lost`), since what the
  /// run decided is then not all recorded.
  run_state recorded_end(bool changes_lost = false) const;

  // -- what happened to a task -----------------------------------------------

  /// Workers reported usage (a turn ended, or the ledger's total at load):
  /// added to the run's total. Once it reaches the budget, `next()` starts
  /// nothing and pauses the run with reason `budget` as soon as a task
  /// could start; what runs finishes (and merges).
  void spent(const spend& s);

  /// The worker entered a phase: `work_done` (its gate runs: verifying) or
  /// `repair` (back to work on the gate's failure: running). Ignored when
  /// the task is not in the attempt any more.
  decision worker_phase(size_t i, task_event event, std::string why = {});

  /// The attempt ended.
  decision attempt_ended(size_t i, attempt_end end, std::string why);

  /// An integration (or a check for a hand merge) ended. `gate_failed`
  /// (verifyMerged) sends the task back for a repair while repairs are
  /// left (merging -> ready: its next attempt begins with the repair), and
  /// otherwise counts as a failed attempt.
  decision merge_ended(size_t i, merge_end end, std::string why);

  /// Repairs of a merge result that failed its gate, for task `i`, since
  /// this scheduler started.
  uint64_t merge_repairs(size_t i) const {
    return merge_repairs_[i];
  }

  /// The ledger refused a change of task `i` and says the task is in
  /// `actual`: the scheduler takes the ledger's word and pauses the run
  /// (a run that was completing pauses instead: its end was not recorded).
  decision refused(size_t i, task_state actual, std::string why);

  /// The ledger did not record the start of task `i` because another
  /// holder (a managed background task) reserves what it writes; it has
  /// the task in `actual` with `why` ("waits for managed task bg-1
  /// (src)"). The task waits there, out of the choice, until
  /// `retry_reserved`; meanwhile the run neither pauses nor completes on
  /// its account. Ignored when the task is no longer starting.
  decision reserved_elsewhere(size_t i, task_state actual, std::string why);

  /// Whether a task waits for a reservation held elsewhere.
  bool waits_elsewhere() const;

  /// Lets the tasks that wait for a reservation held elsewhere be chosen
  /// again (a later look at the ledger): the next `next()` tries to start
  /// them, and the ledger decides once more.
  decision retry_reserved();

  // -- a person decides ------------------------------------------------------

  /// review: integrate it; held: lift the hold.
  steer_result approve(size_t i);

  /// review or held: the task becomes blocked with `why` ("rejected: "
  /// first) and awaits an answer, its dependents with it, while the rest
  /// of the run goes on. It stays blocked at resume until answered or
  /// discarded.
  steer_result reject(size_t i, std::string why);

  /// blocked: the task runs again, continuing with the answer.
  steer_result answer(size_t i);

  /// Whether `specs` may join the run, without changing anything: the run
  /// not over, ids new and not empty, deps naming tasks of the run or of
  /// `specs`, no cycle. `ok` true, or why not.
  steer_result check_add(const std::vector<task_spec>& specs) const;

  /// Tasks are on their way into the run (their rows are being written):
  /// while any are, a running run neither completes nor settles in a
  /// pause. Call with false once they joined (add) or did not.
  void hold_open(bool on);

  /// Adds tasks to the run (as check_add allows); they start pending (or
  /// done when the file checks them), held when the file holds them, and
  /// needing approval when their risk asks for it.
  steer_result add(std::vector<task_spec> specs);

 private:
  /// A ready task in the scheduling order (higher priority first, then
  /// file order); it reads as its position, so the graph's pick() can walk
  /// the ready set directly.
  struct ready_key {
    int64_t priority;
    size_t task;
    bool operator<(const ready_key& other) const {
      if (priority != other.priority)
        return priority > other.priority;
      return task < other.task;
    }
    operator size_t() const noexcept {
      return task;
    }
  };

  task_change& move(decision& d, size_t i, task_event event, std::string why,
                    follow_up then = follow_up::none);
  void refresh(size_t i);
  bool eligible(size_t i) const;
  void count_dependencies(size_t i);
  void skip_dependents(decision& d, size_t i);
  void unskip_dependents(decision& d, size_t i);
  bool blocked_upstream(size_t i) const;
  void stopped(decision& d, size_t i, const std::string& why);
  void gate_failed_on_merge(decision& d, size_t i, std::string why);
  void start_pause(decision& d, std::string why);
  bool stop_for_budget(decision& d);
  void wake(decision& d);
  void settle(decision& d);
  std::string waiting_summary() const;
  ready_key key_of(size_t i) const {
    return {graph_.task(i).priority, i};
  }

  plan::task_graph graph_;
  std::vector<task_record> records_;
  rules rules_;
  run_phase phase_ = run_phase::idle;
  std::string phase_reason_;
  /// A person asked for the pause (`pause`): nothing keeps the run open.
  bool asked_to_pause_ = false;
  /// Per task: failed attempts counted against maxAttempts.
  std::vector<uint64_t> failures_;
  /// Per task: repairs of a merge result that failed its gate.
  std::vector<uint64_t> merge_repairs_;
  /// Per task: dependencies not done yet.
  std::vector<size_t> waiting_;
  /// Per task: the failed or blocked task that made it skipped.
  std::vector<std::optional<size_t>> skipped_by_;
  /// Per task: its start waits for a reservation held elsewhere.
  std::vector<bool> reserved_;
  /// Tasks that may start: deps done, schedulable, not on hold.
  std::set<ready_key> ready_;
  /// Pending tasks that entered ready_ and are not recorded ready yet.
  std::vector<size_t> newly_ready_;
  /// Tasks that occupy their scope: running, verifying, merging.
  std::set<size_t> active_;
  /// Review tasks whose hand-merge check is out.
  std::set<size_t> checking_;
  /// Additions on their way (hold_open).
  size_t held_open_ = 0;
  /// The run's usage (see total_spent).
  spend spent_;
};

/// `taskforce plan`'s waves: the run simulated by the scheduler with unit
/// durations (every task of a wave passes and is merged before the next
/// wave starts). Wave k lists the tasks started together at step k, in the
/// order they were chosen; done tasks and tasks that can never start
/// appear in no wave. Holds are not simulated: the preview shows the
/// schedule once every decision is made.
std::vector<std::vector<size_t>> simulate_waves(const plan::task_graph& g,
                                                size_t max_concurrency);

} // namespace taskforce::run
