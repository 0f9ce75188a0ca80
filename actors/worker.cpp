#include "actors/worker.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "src/proc/registry.hpp"
#include "src/report/report.hpp"
#include "src/run/assist.hpp"
#include "src/run/run_setup.hpp"
#include "src/store/ledger.hpp"
#include "src/text/join.hpp"
#include "src/worker/model_route.hpp"
#include "src/worker/prompt.hpp"
#include "src/worker/scope_check.hpp"
#include "src/worker/script.hpp"
#include "src/worker/verifier.hpp"

namespace fs = std::filesystem;

namespace taskforce {

namespace {

/// How much of a turn's or a gate's output the outcome carries.
constexpr size_t outcome_tail = 2000;
/// How much of the start of a turn's output is searched for its session.
constexpr size_t session_head = 8 * 1024;

std::string tail_of(const std::string& text, size_t n) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

/// What the worker is waiting for.
enum class phase {
  /// The worktree (or the snapshot of the checkout in place).
  leasing,
  /// The task's mail, before the first turn or after a passing check.
  taking_mail,
  /// A turn of the backend.
  turn,
  /// The git service's list of what the attempt brings.
  checking,
  /// The gate.
  gate,
  /// The git service's scratch checkout for the verifier.
  reviewing,
  /// The verifier's run.
  verifier,
  /// The git service's list of what the verifier changed.
  closing_review,
  /// The outcome is sent.
  done,
};

struct worker_state {
  static inline const char* name = "worker";

  // -- the attempt ------------------------------------------------------------

  /// The job, as given.
  worker_job job;
  /// The outcome being built.
  attempt_outcome out;
  /// What the worker waits for.
  phase now = phase::leasing;
  /// A cancel arrived: the attempt ends interrupted.
  bool cancelled = false;

  // -- where it runs ----------------------------------------------------------

  /// The checkout the attempt runs in.
  fs::path cwd;
  /// The attempt runs in the main checkout (no worktree of its own).
  bool in_place = false;
  /// Where the task's branch (in place: HEAD) was as the attempt began.
  std::string start;
  /// The task's scope where it lies in `cwd`.
  resolved_scope scope;
  /// The attempt's log folder.
  fs::path log_dir;

  // -- the backend ------------------------------------------------------------

  /// Which backend runs the turns.
  worker_backend backend = worker_backend::shell;
  /// What the backends need beyond the task.
  worker_settings settings;
  /// The turn running (or about to run).
  turn_input turn;
  /// The session the agent has so far.
  std::string session;
  /// The session the running turn is in, when known before it ran.
  std::string turn_session;
  /// The running turn continues its session.
  bool continuing = false;
  /// The running turn is the fresh run of a turn that could not continue.
  bool retried_fresh = false;
  /// The report's summary of the last turn that reported done.
  std::string summary;
  /// Gates run in this attempt (the log is appended from the second on).
  uint64_t gates = 0;
  /// Who changed the checkout last: what the next check is after.
  changed_by last_change = changed_by::worker;
  /// The usage of turns not yet sent to the orchestrator (with the
  /// verifying progress, or the outcome).
  std::vector<turn_spent> unsent;

  // -- the verifier -----------------------------------------------------------

  /// The verifier's preset (loaded when run.verifierEnabled).
  std::optional<agent_preset> verifier;
  /// What the attempt brings, as its last passing check listed it.
  std::vector<std::string> changed;
  /// The verifier accepted the work as the worker last left it.
  bool verified = false;
  /// Verifier runs in this attempt (its log is appended from the second on).
  uint64_t reviews = 0;
  /// The verdict of the verifier that ran last.
  review_verdict verdict;

  // -- the process helper -----------------------------------------------------

  /// The helper running the current command; null when none.
  caf::actor helper;
  /// The lane borrowed from the run's lanes, once they answered.
  caf::actor lane;
  /// A command waiting for the lane.
  std::optional<process_job> waiting;

  // -- the mail
  // -----------------------------------------------------------------

  /// What the mailbox said since the last command ended (or the attempt
  /// began): nothing yet (unknown again once a command starts), or a
  /// question is on its way, or whether mail waits.
  enum class mail_news { unknown, asking, none, some };
  mail_news mail_heard = mail_news::unknown;
  /// Numbers the questions: a late answer to an old one is ignored.
  uint64_t mail_question = 0;
  /// The take waits for the mailbox's answer.
  bool take_when_answered = false;

  // -- standby (worker_job::standby)
  // -------------------------------------------

  /// Where a worker on standby waits for its start to be durable.
  enum class parked { no, before_lease, before_turn };
  parked waiting_at = parked::no;
  /// The start is durable: nothing holds the worker back.
  bool go = false;
  /// The running command's mark, once it started; shared with the functor
  /// that kills it when the worker dies.
  std::shared_ptr<std::string> mark = std::make_shared<std::string>();
};

using self_ptr = caf::stateful_actor<worker_state>*;

// -- reporting ----------------------------------------------------------------

void progress(self_ptr self, attempt_phase p, std::string detail) {
  auto& st = self->state;
  attempt_progress msg;
  msg.task_id = st.job.task.id;
  msg.attempt = st.job.attempt;
  msg.phase = p;
  msg.detail = std::move(detail);
  msg.worktree = st.out.worktree;
  msg.branch = st.out.branch;
  // The turn that ended in verifying: its usage is recorded with that move.
  if (p == attempt_phase::verifying)
    msg.spent = std::exchange(st.unsent, {});
  self->send(st.job.orchestrator, progress_atom::value, std::move(msg));
}

/// Sends the one outcome and quits. A cancelled attempt that did not pass
/// is interrupted, whatever else went wrong meanwhile.
void finish(self_ptr self, run::attempt_end end, std::string reason) {
  auto& st = self->state;
  if (st.now == phase::done)
    return;
  st.now = phase::done;
  if (st.cancelled && end != run::attempt_end::done) {
    end = run::attempt_end::interrupted;
    reason = "interrupted";
  }
  st.out.end = end;
  st.out.reason = std::move(reason);
  st.out.session = st.session;
  st.out.spent = std::exchange(st.unsent, {});
  self->send(st.job.orchestrator, outcome_atom::value, st.out);
  self->quit();
}

void fail(self_ptr self, std::string reason) {
  finish(self, run::attempt_end::failed, std::move(reason));
}

/// After a reply arrived: whether the attempt is over (a late reply after
/// the outcome is ignored), or a cancel ends it now.
bool stopped(self_ptr self) {
  if (self->state.now == phase::done)
    return true;
  if (!self->state.cancelled)
    return false;
  finish(self, run::attempt_end::interrupted, "interrupted");
  return true;
}

std::string render(self_ptr self, const caf::error& err) {
  return self->system().render(err);
}

// -- processes ----------------------------------------------------------------

/// Where the attempt's logs go.
fs::path log_dir_of(const worker_job& job) {
  return job.root / ".taskforce"
         / store::attempt_log_dir(job.run_id, job.task.id,
                                  static_cast<int>(job.attempt));
}

/// Hands `pj` to the lane, or to a new helper without one.
void start_command(self_ptr self, process_job pj) {
  auto& st = self->state;
  if (st.lane) {
    st.helper = st.lane;
    self->send(st.lane, start_atom::value, std::move(pj));
  } else {
    auto spawn = st.job.processes ? st.job.processes : spawn_process;
    st.helper = spawn(self->system(), std::move(pj));
  }
  self->monitor(st.helper);
}

/// Borrows a lane from the run's lanes while the attempt gets ready: its
/// commands run there, one after the other, on a thread that outlives
/// them. Without an answer they run in helpers of their own.
void borrow_lane(self_ptr self) {
  auto& st = self->state;
  if (!st.job.lanes || st.job.processes)
    return;
  self->request(st.job.lanes, caf::infinite, acquire_atom::value)
    .then(
      [self](caf::actor& lane) {
        auto& st = self->state;
        st.lane = std::move(lane);
        // The attempt's log folder, made while the worker waits for git
        // (two new folders: the slowest part of a trivial command's start).
        self->send(st.lane, ready_atom::value,
                   std::vector<std::string>{log_dir_of(st.job).string()});
        if (auto pj = std::exchange(st.waiting, std::nullopt))
          start_command(self, std::move(*pj));
      },
      [self](caf::error& err) {
        auto& st = self->state;
        spdlog::warn("{}: no process lane ({}), a helper per command",
                     st.job.task.id, render(self, err));
        st.job.lanes = nullptr;
        if (auto pj = std::exchange(st.waiting, std::nullopt))
          start_command(self, std::move(*pj));
      });
}

/// Runs `opts` (and writes `inputs` first) in the lane or a new helper.
void run_command(self_ptr self, proc::run_options opts,
                 std::vector<std::pair<std::string, std::string>> inputs) {
  auto& st = self->state;
  // What the mailbox said holds until a command runs.
  st.mail_heard = worker_state::mail_news::unknown;
  st.take_when_answered = false;
  ++st.mail_question;
  if (opts.cwd.empty())
    opts.cwd = st.cwd.string();
  // Recorded before it starts, so that the next driver finds what a crash
  // of this one left running (kill_leftover_workers).
  opts.label = st.job.run_id + "/" + st.job.task.id + "/";
  opts.record_folder = run::worker_records(st.job.root).string();
  process_job pj;
  pj.run = std::move(opts);
  pj.inputs = std::move(inputs);
  pj.owner = caf::actor_cast<caf::actor>(self);
  if (st.job.lanes && !st.job.processes && !st.lane)
    st.waiting = std::move(pj);
  else
    start_command(self, std::move(pj));
}

/// The helper's command is over: forget it.
void command_ended(self_ptr self) {
  auto& st = self->state;
  if (st.helper)
    self->demonitor(st.helper);
  st.helper = nullptr;
  st.mark->clear();
}

/// The environment of every worker and gate process of this attempt.
turn_context context_of(const worker_state& st) {
  return {st.job.run_id, st.job.task.id, st.job.attempt, st.turn.kind,
          st.job.root.string()};
}

// -- the steps ----------------------------------------------------------------

void take_mail(self_ptr self);
void check(self_ptr self);
void after_gate(self_ptr self);
void run_verifier(self_ptr self, const std::string& path,
                  const std::string& diff);
void review_closed(self_ptr self, const std::vector<std::string>& discarded);

/// Starts the turn in `st.turn` (`fresh`: a new session even if it could
/// continue one).
void run_turn(self_ptr self, bool fresh = false) {
  auto& st = self->state;
  auto& job = st.job;
  worker_round round;
  round.context = context_of(st);
  round.worktree = st.cwd.string();
  round.invocation = job.invocations + st.out.turns + 1;
  round.turn = st.turn;
  round.previous_failure = job.previous_failure;
  auto n = std::to_string(round.invocation);
  round.prompt_file = (st.log_dir / ("prompt-" + n + ".md")).string();
  round.turn_file = (st.log_dir / ("turn-" + n + ".txt")).string();
  round.session = st.session;
  round.own_directory = !st.in_place;
  round.fresh_session = fresh;
  if (st.settings.preset
      && st.settings.preset->session == agent_preset::session_source::uuid)
    round.new_session = new_session_uuid();
  worker_command cmd;
  try {
    cmd = prepare_worker_command(st.backend, st.settings, job.task, round);
  } catch (const std::exception& e) {
    return fail(self, e.what());
  }
  st.continuing = cmd.continues;
  st.retried_fresh = fresh;
  st.turn_session = cmd.session;
  proc::run_options opts;
  opts.argv = std::move(cmd.argv);
  opts.env = std::move(cmd.env);
  opts.stdin_file = std::move(cmd.stdin_file);
  opts.log_file = (st.log_dir / "worker.log").string();
  opts.append_log = st.out.turns > 0;
  int64_t timeout
    = job.timeout_ms > 0 ? job.timeout_ms : job.cfg.task_timeout_ms;
  opts.timeout = std::chrono::milliseconds(timeout); // saturates in run()
  opts.head_bytes = session_head;
  ++st.out.turns;
  st.now = phase::turn;
  st.last_change = changed_by::worker;
  st.verified = false;
  run_command(self, std::move(opts), std::move(cmd.inputs));
}

/// The gate, after the worker's changes passed the check.
void run_gate(self_ptr self) {
  auto& st = self->state;
  if (st.job.task.verify.empty())
    return after_gate(self);
  proc::run_options opts;
  opts.argv = {"/bin/sh", "-c", st.job.task.verify};
  opts.env = turn_environment(context_of(st));
  opts.log_file = (st.log_dir / "verify.log").string();
  opts.append_log = st.gates > 0;
  opts.timeout = std::chrono::milliseconds(st.job.cfg.verify_timeout_ms);
  ++st.gates;
  st.now = phase::gate;
  st.last_change = changed_by::gate;
  run_command(self, std::move(opts), {});
}

/// run.detectCompletion "checkboxes": the task's box in the task file, as
/// the worker left it in its checkout, says whether it is done, instead of
/// its report. A question (a blocked report) is still a question, and a
/// turn that timed out or was cut short still failed.
void judge_by_box(const worker_state& st, const proc::run_result& r,
                  verdict& v) {
  if (v.kind == verdict_kind::blocked || r.timed_out || r.signal != 0)
    return;
  task_spec task;
  task.line = st.job.task_line;
  task.title = st.job.task.title;
  auto file = st.cwd / st.job.task_file;
  if (run::box_checked_in_file(file, task)) {
    v.kind = verdict_kind::done;
    if (v.reason.empty() || !v.report)
      v.reason = "its box in " + st.job.task_file + " is checked";
    return;
  }
  v.kind = verdict_kind::failed;
  v.reason = "its box in " + st.job.task_file
             + " is not checked (run.detectCompletion is \"checkboxes\")";
}

/// A turn ended: read its report, then check what it changed.
void turn_ended(self_ptr self, const proc_exited& exit) {
  auto& st = self->state;
  if (stopped(self))
    return;
  if (!exit.error.empty())
    return fail(self, exit.error);
  // The session it ran in: known before, or named in its output.
  if (!st.turn_session.empty())
    st.session = st.turn_session;
  else if (st.settings.preset)
    if (auto found
        = find_session(*st.settings.preset, exit.head + "\n" + exit.tail);
        !found.empty())
      st.session = found;
  auto reading = read_report(exit.tail);
  // A turn that tried to continue and died without a word most likely
  // found no session to continue: the same turn runs fresh, once.
  if (st.continuing && !st.retried_fresh && !exit.success() && reading.none()) {
    spdlog::info("{}: could not continue session {} ({}); running the {} "
                 "turn in a fresh session",
                 st.job.task.id, st.session, exit.description,
                 to_string(st.turn.kind));
    return run_turn(self, true);
  }
  st.out.exit_code = exit.exit_code;
  st.out.tail = tail_of(exit.tail, outcome_tail);
  proc::run_result r;
  r.exit_code = static_cast<int>(exit.exit_code);
  r.signal = exit.signal;
  r.timed_out = exit.timed_out;
  r.duration = std::chrono::milliseconds(exit.duration_ms);
  r.tail = exit.tail;
  auto v = judge_worker(st.backend, r, reading);
  if (st.job.cfg.detect_completion == "checkboxes")
    judge_by_box(st, r, v);
  if (v.report && v.report->usage) {
    auto& u = *v.report->usage;
    st.unsent.push_back(
      turn_spent{st.out.turns + st.reviews,
                 to_string(st.turn.kind),
                 {u.input_tokens, u.output_tokens, u.cost_usd}});
  }
  if (v.report)
    for (auto& w : v.report->warnings)
      spdlog::warn("{}: the report of turn {}: {}", st.job.task.id,
                   st.out.turns, w);
  if (v.kind == verdict_kind::blocked)
    return finish(self, run::attempt_end::blocked, v.reason);
  if (v.kind == verdict_kind::failed)
    return fail(self, "worker: " + v.reason);
  st.summary = v.reason;
  // Without a gate or a verifier the check takes a moment and the outcome
  // follows: it records the move through verifying with its own, one
  // ledger transaction instead of two.
  if (!st.job.task.verify.empty() || st.job.cfg.verifier_enabled)
    progress(self, attempt_phase::verifying, "");
  check(self);
}

/// A failed gate (or a rejection by the verifier) goes back to the worker
/// as a repair turn while repairs are left; else the attempt fails.
void repair_or_fail(self_ptr self, const std::string& failure,
                    turn_input repair) {
  auto& st = self->state;
  auto& cfg = st.job.cfg;
  if (!cfg.repair_on_failure || st.out.repairs >= cfg.max_repairs)
    return fail(self, failure);
  ++st.out.repairs;
  progress(self, attempt_phase::repairing,
           "repair " + std::to_string(st.out.repairs) + ": " + failure);
  repair.kind = turn_kind::repair;
  repair.repair_round = static_cast<int>(st.out.repairs);
  st.turn = std::move(repair);
  run_turn(self);
}

/// The gate ended: check again if it passed, else repair or fail.
void gate_ended(self_ptr self, const proc_exited& exit) {
  auto& st = self->state;
  if (stopped(self))
    return;
  if (!exit.error.empty())
    return fail(self, "gate: " + exit.error);
  st.out.tail = tail_of(exit.tail, outcome_tail);
  st.out.exit_code = exit.exit_code;
  if (exit.success())
    return check(self); // what the gate left is part of what the task brings
  turn_input repair;
  repair.gate_result = exit.description;
  repair.gate_tail = exit.tail;
  repair_or_fail(self, "gate failed (" + exit.description + ")",
                 std::move(repair));
}

// -- the verifier -------------------------------------------------------------

/// What the verifier's git requests name: the attempt and its checkout.
scope_request review_request(const worker_state& st) {
  return {st.job.run_id, st.job.task.id, st.job.attempt,   st.cwd.string(),
          st.out.branch, st.start,       st.job.task.files};
}

/// The verifier, once the gate passed (or there is none): unless it
/// accepted the work as it is already, it runs in a scratch copy of it.
void after_gate(self_ptr self) {
  auto& st = self->state;
  if (!st.job.cfg.verifier_enabled || st.verified)
    return take_mail(self);
  // The task is verifying already (the gate's phase): no progress to tell.
  st.now = phase::reviewing;
  spdlog::info("{}: the verifier reviews attempt {}", st.job.task.id,
               st.job.attempt);
  self
    ->request(st.job.git, caf::infinite, review_atom::value, review_request(st),
              st.changed)
    .then(
      [self](std::string& path, std::string& diff) {
        if (stopped(self)) {
          // The scratch goes; nobody waits for the answer.
          caf::anon_send(self->state.job.git, reviewed_atom::value,
                         review_request(self->state), std::string{});
          return;
        }
        run_verifier(self, path, diff);
      },
      [self](caf::error& err) {
        if (stopped(self))
          return;
        fail(self, "verifier: " + render(self, err));
      });
}

/// Starts the verifier in the scratch checkout at `path`.
void run_verifier(self_ptr self, const std::string& path,
                  const std::string& diff) {
  auto& st = self->state;
  auto& job = st.job;
  verifier_request vr;
  vr.task_id = job.task.id;
  vr.title = job.task.title;
  vr.body = job.task.body;
  vr.files = job.task.files;
  vr.verify = job.task.verify;
  vr.summary = st.summary;
  vr.diff = diff;
  vr.instructions = job.cfg.verifier_prompt;
  ++st.reviews;
  auto n = std::to_string(st.reviews);
  agent_values v;
  v.prompt = compose_verifier_prompt(vr);
  v.prompt_file = (st.log_dir / ("verifier-prompt-" + n + ".md")).string();
  v.model = verifier_model(job.cfg);
  v.worktree = path;
  v.task_id = job.task.id;
  v.title = job.task.title;
  v.files = job.task.files;
  if (st.verifier->session == agent_preset::session_source::uuid)
    v.session = new_session_uuid();
  proc::run_options opts;
  try {
    auto cmd = expand_agent_preset(*st.verifier, v, false);
    opts.argv = std::move(cmd.argv);
    auto ctx = context_of(st);
    ctx.turn = turn_kind::verify;
    opts.env = turn_environment(ctx);
    for (auto& kv : cmd.env)
      opts.env.push_back(std::move(kv));
    opts.stdin_file = std::move(cmd.stdin_file);
  } catch (const std::exception& e) {
    caf::anon_send(job.git, reviewed_atom::value, review_request(st),
                   std::string{});
    return fail(self, std::string{"verifier: "} + e.what());
  }
  opts.cwd = path;
  opts.log_file = (st.log_dir / "verifier.log").string();
  opts.append_log = st.reviews > 1;
  int64_t timeout
    = job.timeout_ms > 0 ? job.timeout_ms : job.cfg.task_timeout_ms;
  opts.timeout = std::chrono::milliseconds(timeout);
  st.now = phase::verifier;
  run_command(self, std::move(opts), {{v.prompt_file, v.prompt}});
}

/// The verifier's run ended: its verdict, then the scratch goes (what it
/// changed there is listed and noted in its log), then the verdict counts.
void verifier_ended(self_ptr self, const proc_exited& exit) {
  auto& st = self->state;
  auto log = (st.log_dir / "verifier.log").string();
  if (stopped(self)) {
    caf::anon_send(st.job.git, reviewed_atom::value, review_request(st), log);
    return;
  }
  if (!exit.error.empty()) {
    st.verdict = {review_kind::failed, exit.error, std::nullopt};
  } else {
    proc::run_result r;
    r.exit_code = static_cast<int>(exit.exit_code);
    r.signal = exit.signal;
    r.timed_out = exit.timed_out;
    r.tail = exit.tail;
    st.verdict = judge_review(r, read_report(exit.tail));
  }
  // Numbered with the worker's turns: the attempt's runs in order.
  if (auto& u = st.verdict.usage)
    st.unsent.push_back(
      turn_spent{st.out.turns + st.reviews,
                 "verify",
                 {u->input_tokens, u->output_tokens, u->cost_usd}});
  st.now = phase::closing_review;
  self
    ->request(st.job.git, caf::infinite, reviewed_atom::value,
              review_request(st), log)
    .then(
      [self](std::vector<std::string>& discarded) {
        if (stopped(self))
          return;
        review_closed(self, discarded);
      },
      [self](caf::error& err) {
        if (stopped(self))
          return;
        // Its changes never reached the task; the verdict stands.
        spdlog::warn("{}: {}", self->state.job.task.id, render(self, err));
        review_closed(self, {});
      });
}

/// The verdict counts: accepted goes on, rejected is repaired like a failed
/// gate, no verdict fails the attempt.
void review_closed(self_ptr self, const std::vector<std::string>& discarded) {
  auto& st = self->state;
  std::string note;
  if (!discarded.empty()) {
    note = " (the verifier changed " + std::to_string(discarded.size())
           + " file(s) in its scratch copy, discarded: " + discarded[0]
           + (discarded.size() > 1 ? ", ..." : "") + ")";
    spdlog::warn("{}: the verifier is read-only; its changes were discarded: "
                 "{}",
                 st.job.task.id, discarded.size());
  }
  auto& v = st.verdict;
  switch (v.kind) {
    case review_kind::accepted: st.verified = true; return take_mail(self);
    case review_kind::failed: return fail(self, "verifier: " + v.reason + note);
    case review_kind::rejected: break;
  }
  turn_input repair;
  repair.gate_result = "rejected by the verifier";
  repair.gate_tail = v.reason;
  repair.by_verifier = true;
  repair_or_fail(self, "verifier rejected: " + v.reason + note,
                 std::move(repair));
}

/// Asks the git service what the attempt brings and judges it.
void check(self_ptr self) {
  auto& st = self->state;
  st.now = phase::checking;
  scope_request req{st.job.run_id,    st.job.task.id, st.job.attempt,
                    st.cwd.string(),  st.out.branch,  st.start,
                    st.job.task.files};
  // In place, ahead of merges waiting at the git service: a check (or a
  // snapshot) stands between a task and its slot, and a merge in place is
  // a commit that holds up nobody. Either order judges the same: the
  // service moves snapshots in place over its own commits, and a
  // neighbour's change in its scope is its own. Merges from branches keep
  // their turn: checks ahead of them made run.verifyMerged 2.5x slower in
  // bench/run.sh (merges trailed; a merged worktree is what the next lease
  // reuses).
  auto answer
    = st.in_place
        ? self->request<caf::message_priority::high>(st.job.git, caf::infinite,
                                                     changed_atom::value, req)
        : self->request(st.job.git, caf::infinite, changed_atom::value, req);
  std::move(answer).then(
    [self](scope_report& report) {
      auto& st = self->state;
      if (stopped(self))
        return;
      auto who = st.last_change;
      auto after = std::string{"after "}
                   + (who == changed_by::gate ? "the gate" : "the worker")
                   + " ran, ";
      if (!report.base_moved.empty())
        return finish(self, run::attempt_end::base_moved,
                      after + report.base_moved);
      if (!report.moved.empty())
        return fail(self, after + report.moved);
      // What the run itself writes (a box, a progress block) is no
      // change of this attempt.
      auto& theirs = st.job.run_files;
      auto own = [&theirs](const std::string& p) {
        return std::find(theirs.begin(), theirs.end(), p) != theirs.end();
      };
      report.paths.erase(
        std::remove_if(report.paths.begin(), report.paths.end(), own),
        report.paths.end());
      report.main_paths.erase(
        std::remove_if(report.main_paths.begin(), report.main_paths.end(), own),
        report.main_paths.end());
      if (!report.main_paths.empty())
        return fail(self, after
                            + "the main checkout changed, where nothing "
                              "may change while a task works in its own "
                              "worktree: "
                            + join(report.main_paths));
      std::string refused;
      try {
        refused = judge_changes(st.cwd, st.scope, st.job.cfg.enforce_diff_scope,
                                report.paths, who);
      } catch (const std::exception& e) {
        refused = e.what();
      }
      if (!refused.empty())
        return fail(self, refused);
      st.changed = std::move(report.paths);
      if (who == changed_by::worker)
        run_gate(self);
      else
        after_gate(self);
    },
    [self](caf::error& err) {
      if (stopped(self))
        return;
      fail(self, "cannot list the changes: " + render(self, err));
    });
}

/// What a turn that starts with mail is, or none.
bool mail_turn(worker_state& st, std::vector<std::string>& answers,
               std::vector<std::string>& messages, turn_kind kind) {
  if (answers.empty() && messages.empty())
    return false;
  st.turn = {};
  st.turn.kind = !answers.empty() ? turn_kind::answer : kind;
  st.turn.answers = std::move(answers);
  st.turn.messages = std::move(messages);
  return true;
}

/// The mail that waits: before the first turn it makes it an answer turn
/// (or brings messages to the start); after a passing check it is handed
/// over in a message turn, and without any the attempt passes.
void mail_arrived(self_ptr self, std::vector<std::string> answers,
                  std::vector<std::string> messages) {
  auto& st = self->state;
  // Once only: the mailbox's answer, or its going down, whichever is first.
  if (st.now != phase::taking_mail || stopped(self))
    return;
  if (st.out.turns == 0) {
    if (st.job.first_repair.kind == turn_kind::repair && answers.empty()) {
      // The gate failed on the merge result: the attempt begins with its
      // repair, the messages that wait with it.
      st.turn = st.job.first_repair;
      st.turn.repair_round = static_cast<int>(++st.out.repairs);
      st.turn.messages = std::move(messages);
      return run_turn(self);
    }
    if (!mail_turn(st, answers, messages, turn_kind::start))
      st.turn = {};
    return run_turn(self);
  }
  if (!mail_turn(st, answers, messages, turn_kind::message))
    return finish(self, run::attempt_end::done, st.summary);
  progress(self, attempt_phase::repairing,
           std::string{to_string(st.turn.kind)} + " turn: "
             + std::to_string(st.turn.answers.size() + st.turn.messages.size())
             + " new");
  run_turn(self);
}

/// The mailbox answered question `question`: a take that waited for it
/// goes on.
void mail_answered(self_ptr self, uint64_t question, bool waits) {
  auto& st = self->state;
  if (question != st.mail_question)
    return;
  st.mail_heard
    = waits ? worker_state::mail_news::some : worker_state::mail_news::none;
  if (std::exchange(st.take_when_answered, false)
      && st.now == phase::taking_mail)
    take_mail(self);
}

/// Asks the mailbox whether mail waits, while the worker waits for the
/// git service: a take then follows only when some does (mostly none
/// does, and the question cost a round trip after every check).
void ask_for_mail(self_ptr self) {
  auto& st = self->state;
  if (!st.job.mail)
    return;
  auto question = ++st.mail_question;
  st.mail_heard = worker_state::mail_news::asking;
  self
    ->request(st.job.mail, caf::infinite, check_atom::value, st.job.run_id,
              st.job.task.id)
    .then(
      [self, question](bool waits) {
        mail_answered(self, question, waits);
      },
      [self, question](caf::error&) {
        // The take tries, and says what went wrong.
        mail_answered(self, question, true);
      });
}

void take_mail(self_ptr self) {
  auto& st = self->state;
  st.now = phase::taking_mail;
  if (!st.job.mail || st.mail_heard == worker_state::mail_news::none)
    return mail_arrived(self, {}, {});
  if (st.mail_heard == worker_state::mail_news::asking) {
    // Asked already: the answer decides.
    st.take_when_answered = true;
    return;
  }
  self
    ->request(st.job.mail, caf::infinite, take_atom::value, st.job.run_id,
              st.job.task.id)
    .then(
      [self](std::vector<std::string>& answers,
             std::vector<std::string>& messages) {
        mail_arrived(self, std::move(answers), std::move(messages));
      },
      [self](caf::error& err) {
        // Mail that could not be taken stays undelivered: the worker reads
        // it with `taskforce inbox`, or the next attempt gets it.
        spdlog::warn("{}: cannot take the task's mail: {}",
                     self->state.job.task.id, render(self, err));
        mail_arrived(self, {}, {});
      });
}

/// The checkout is there: the log folder, the scope where it lies, then
/// the mail that decides the first turn.
void leased(self_ptr self) {
  auto& st = self->state;
  if (stopped(self))
    return;
  progress(self, attempt_phase::leased, "");
  st.log_dir = log_dir_of(st.job);
  st.scope = resolve_scope(st.cwd, st.job.task.files);
  if (!st.scope.error.empty())
    return fail(self, st.scope.error);
  if (st.job.standby && !st.go) {
    st.waiting_at = worker_state::parked::before_turn;
    return;
  }
  take_mail(self);
}

/// In place, the attempt is judged against the checkout as it is now: the
/// git service keeps a snapshot of it.
void snapshot(self_ptr self) {
  auto& st = self->state;
  st.in_place = true;
  st.cwd = st.job.root;
  st.out.worktree.clear();
  st.out.branch.clear();
  scope_request req{
    st.job.run_id,    st.job.task.id, st.job.attempt, st.cwd.string(), "", "",
    st.job.task.files};
  // Ahead of merges waiting at the git service (see check).
  self
    ->request<caf::message_priority::high>(st.job.git, caf::infinite,
                                           snapshot_atom::value, req)
    .then(
      [self, req](std::string& head) {
        // However the worker ends, the git service learns that the
        // attempt is over (its neighbours' checks stop excusing changes
        // in its scope).
        self->attach_functor([git = self->state.job.git, req] {
          caf::anon_send(git, release_atom::value, req);
        });
        self->state.start = head;
        leased(self);
      },
      [self](caf::error& err) {
        if (stopped(self))
          return;
        fail(self,
             "cannot take a snapshot of the checkout: " + render(self, err));
      });
}

void lease(self_ptr self) {
  auto& st = self->state;
  auto& cfg = st.job.cfg;
  if (!cfg.use_worktrees || cfg.mode == "assist")
    return snapshot(self);
  // A worktree is made only for a start that is recorded.
  if (st.job.standby && !st.go) {
    st.waiting_at = worker_state::parked::before_lease;
    return;
  }
  worktree_request req{st.job.run_id, st.job.task.id, st.job.fresh,
                       st.job.known_worktree, st.job.attempt};
  self->request(st.job.git, caf::infinite, lease_atom::value, req)
    .then(
      [self](worktree_lease& l) {
        auto& st = self->state;
        st.out.worktree = l.path;
        st.out.branch = l.branch;
        st.start = l.start;
        st.cwd = l.path;
        // However the worker ends, the git service stops watching the main
        // checkout for the attempt.
        scope_request done{st.job.run_id,
                           st.job.task.id,
                           st.job.attempt,
                           l.path,
                           l.branch,
                           l.start,
                           {}};
        self->attach_functor([git = st.job.git, done] {
          caf::anon_send(git, release_atom::value, done);
        });
        leased(self);
      },
      [self](caf::error& err) {
        auto& st = self->state;
        if (stopped(self))
          return;
        auto why = render(self, err);
        if (st.job.cfg.require_worktrees)
          return fail(self, "cannot create the worktree: " + why);
        spdlog::warn("{}: no worktree ({}), running in place", st.job.task.id,
                     why);
        snapshot(self);
      });
}

/// What the backends need, read once: the preset, the instructions, the
/// script.
void choose(self_ptr self) {
  auto& st = self->state;
  auto& cfg = st.job.cfg;
  auto choice = choose_backend(st.job.agent, cfg.worker, cfg.agent_preset);
  st.backend = choice.backend;
  auto& s = st.settings;
  s.taskforce_binary = st.job.self_exe;
  s.skills = cfg.worker_skills;
  s.contract = cfg.worker_contract != "none";
  if (choice.backend == worker_backend::scripted) {
    s.script_file = cfg.script_file;
    if (!s.script_file.empty() && fs::path{s.script_file}.is_relative())
      s.script_file = (st.job.root / s.script_file).string();
  }
  if (cfg.verifier_enabled)
    try {
      st.verifier
        = load_agent_preset(verifier_preset_name(cfg), st.job.root.string());
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string{"run.verifierPreset: "} + e.what());
    }
  if (choice.backend == worker_backend::agent) {
    s.preset = load_agent_preset(choice.preset, st.job.root.string());
    s.instructions = cfg.worker_instructions;
    s.instructions_file_text = read_instructions_file(
      cfg.worker_instructions_file, st.job.root.string());
  }
}

// -- cancel and the helper's messages -----------------------------------------

void cancel(self_ptr self) {
  auto& st = self->state;
  if (st.now == phase::done || st.cancelled)
    return;
  st.cancelled = true;
  // On standby and waiting for nothing else: over now.
  if (st.waiting_at != worker_state::parked::no)
    return finish(self, run::attempt_end::interrupted, "interrupted");
  // A command that has not started yet is killed when it starts; a git or
  // mail request in flight ends the attempt when it is answered.
  if (!st.mark->empty())
    proc::kill_running(*st.mark);
}

/// The start is durable: a worker on standby goes on where it waits.
void go(self_ptr self) {
  auto& st = self->state;
  if (st.go || st.now == phase::done)
    return;
  st.go = true;
  switch (std::exchange(st.waiting_at, worker_state::parked::no)) {
    case worker_state::parked::no: return;
    case worker_state::parked::before_lease: return lease(self);
    case worker_state::parked::before_turn: return take_mail(self);
  }
}

bool from_helper(self_ptr self) {
  auto& st = self->state;
  return st.helper && self->current_sender() == st.helper.address();
}

void helper_exited(self_ptr self, proc_exited exit) {
  auto& st = self->state;
  auto was = st.now;
  command_ended(self);
  ask_for_mail(self);
  if (was == phase::turn)
    turn_ended(self, exit);
  else if (was == phase::gate)
    gate_ended(self, exit);
  else if (was == phase::verifier)
    verifier_ended(self, exit);
}

} // namespace

caf::behavior worker(self_ptr self, worker_job job) {
  auto& st = self->state;
  st.job = std::move(job);
  st.out.task_id = st.job.task.id;
  st.out.attempt = st.job.attempt;
  st.session = st.job.session;
  // No command outlives its worker, however the worker ends.
  self->attach_functor([mark = st.mark] {
    if (!mark->empty())
      proc::kill_running(*mark);
  });
  self->monitor(st.job.git);
  if (st.job.mail)
    self->monitor(st.job.mail);
  self->set_down_handler([self](caf::down_msg& d) {
    auto& st = self->state;
    if (st.helper && d.source == st.helper.address()) {
      // Gone without its exit: its thread may still be in the command,
      // which is killed (nobody would watch it); how it ended is unknown.
      if (!st.mark->empty())
        proc::kill_running(*st.mark);
      proc_exited exit;
      exit.error = "the process helper stopped: " + render(self, d.reason);
      exit.description = exit.error;
      helper_exited(self, std::move(exit));
    } else if (st.job.mail && d.source == st.job.mail.address()) {
      // Without a mailbox the task's mail stays undelivered in the ledger;
      // the attempt goes on without it.
      spdlog::warn("{}: the mailbox stopped: {}", st.job.task.id,
                   render(self, d.reason));
      st.job.mail = nullptr;
      mail_arrived(self, {}, {});
    } else if (d.source == st.job.git.address() && st.now != phase::done) {
      // A request in flight would never be answered.
      if (st.now == phase::leasing || st.now == phase::checking
          || st.now == phase::reviewing || st.now == phase::closing_review) {
        if (!stopped(self))
          fail(self, "the git service stopped: " + render(self, d.reason));
      }
    }
  });
  try {
    choose(self);
  } catch (const std::exception& e) {
    fail(self, e.what());
    return {};
  }
  borrow_lane(self);
  ask_for_mail(self);
  lease(self);
  return {
    [self](cancel_atom) {
      cancel(self);
    },
    [self](start_atom) {
      go(self);
    },
    [self](proc_started& s) {
      if (!from_helper(self))
        return;
      auto& st = self->state;
      *st.mark = s.mark;
      if (st.cancelled) // a cancel that came before the start
        proc::kill_running(s.mark);
    },
    [](proc_output&) {
      // Progress of the output is not forwarded yet.
    },
    [self](proc_exited& exit) {
      if (from_helper(self))
        helper_exited(self, std::move(exit));
    },
  };
}

caf::actor spawn_worker(caf::actor_system& sys, worker_job job) {
  return sys.spawn(worker, std::move(job));
}

} // namespace taskforce
