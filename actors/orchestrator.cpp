#include "actors/orchestrator.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "src/worker/model_route.hpp"

namespace taskforce {

namespace {

int64_t clock_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch())
    .count();
}

/// A person's command waiting for its changes to become durable.
struct waiter {
  caf::typed_response_promise<steer_reply> promise;
  /// The tasks the reply shows, as the command left them (updated as its
  /// changes become durable).
  std::map<size_t, task_view> tasks;
  /// Changes not acknowledged yet.
  size_t open = 0;
  /// The first refusal (or failure); the command is then refused.
  caf::error failure;
  bool done = false;

  ~waiter() {
    if (!done && promise.pending())
      promise.deliver(caf::make_error(run_errc::no_driver,
                                      std::string{"the run stopped before the "
                                                  "command took effect"}));
  }
};

using waiter_ptr = std::shared_ptr<waiter>;

/// A task change on its way to the ledger, with the facts recorded with it
/// and the command (if any) waiting for it.
struct pending_change {
  run::task_change change;
  task_facts facts;
  waiter_ptr wait;
  /// Numbers the task's changes: a continuation runs only for the task's
  /// latest one.
  uint64_t serial = 0;
};

/// What goes to the ledger together: task changes in one batch, then the
/// run change.
struct commit_unit {
  std::vector<pending_change> changes;
  std::optional<run::run_change> run;

  bool empty() const {
    return changes.empty() && !run;
  }
};

/// A started attempt's worker.
struct worker_entry {
  worker_handle handle;
  uint64_t attempt = 0;
  /// The orchestrator asked it to stop: its death is an interruption.
  bool stopping = false;
  /// Started before its start was durable: it waits for `start_atom`.
  bool standby = false;
};

/// What an event adds to the decision it caused: facts for one task's
/// change, and a command waiting for the decision's changes.
struct annotation {
  std::optional<size_t> task;
  task_facts facts;
  waiter_ptr wait;
};

struct orchestrator_state {
  // -- constants --------------------------------------------------------------
  static inline const char* name = "orchestrator";

  // -- member variables -------------------------------------------------------
  /// The run's setup.
  orchestrator_setup setup;
  /// The run's rules and every task's state.
  std::optional<run::scheduler> sched;
  /// Per task: worktree, branch, attempts, answers.
  std::vector<task_memory> memory;
  /// Workers alive, by task.
  std::map<size_t, worker_entry> workers;
  /// Merges and hand-merge checks at the git service: token -> task.
  std::map<uint64_t, size_t> at_git;
  uint64_t next_git_token = 0;
  /// Changes gathering for the next batch.
  commit_unit gathering;
  /// The batch (and run change) with the ledger, if any.
  std::optional<commit_unit> in_flight;
  /// A timer will write what lingers in `gathering`.
  bool linger_armed = false;
  /// Per task: the serial of its latest change.
  std::vector<uint64_t> last_change;
  /// Tasks whose start waited for another holder's reservation (a managed
  /// task's) and is not durable yet: no standby worker for them, as their
  /// start is likely to wait again.
  std::set<size_t> contended;
  uint64_t change_serial = 0;
  /// Numbers the units sent, so a late answer to a dropped one is ignored.
  uint64_t unit_serial = 0;
  /// Counts the run changes decided: a look at the ledger's run state
  /// taken before one of them is stale.
  uint64_t run_writes = 0;
  /// Why nothing can be recorded any more (the ledger failed or stopped).
  std::string lost;
  /// Why the git service is gone.
  std::string git_gone;
  /// Ids of tasks being added (waiting for the ledger).
  std::vector<std::string> adding;
  /// Looks at the ledger's run state after it refused a run change: the
  /// run does not end before the answer is taken.
  int rechecks = 0;
  /// start_atom arrived.
  bool started = false;
  /// The watcher was told the run is over for this process.
  bool told = false;
};

using self_ptr = orchestrator_actor::stateful_pointer<orchestrator_state>;

void step(self_ptr self, run::decision d, annotation a = {});
void flush(self_ptr self, bool now = false);
void look(self_ptr self, bool after_refusal = false);
void maybe_finish(self_ptr self);
void ledger_failed(self_ptr self, const std::string& why);

run::scheduler& sched(self_ptr self) {
  return *self->state.sched;
}

const std::string& id_of(self_ptr self, size_t i) {
  return sched(self).graph().task(i).id;
}

caf::actor as_actor(self_ptr self) {
  return caf::actor_cast<caf::actor>(self);
}

// -- telling the watcher ------------------------------------------------------

void emit_task(self_ptr self, size_t i, task_state state,
               const std::string& why,
               const std::vector<turn_spent>& spent = {}) {
  auto& st = self->state;
  if (!st.setup.watcher && !st.setup.assist)
    return;
  run_event ev;
  ev.time_ms = clock_ms();
  ev.run_id = st.setup.run_id;
  ev.task_id = id_of(self, i);
  ev.title = sched(self).graph().task(i).title;
  ev.state = state;
  ev.attempt = st.memory[i].attempt;
  ev.reason = why;
  for (auto& t : spent) {
    ev.spent.input_tokens += t.usage.input_tokens;
    ev.spent.output_tokens += t.usage.output_tokens;
    ev.spent.cost_usd += t.usage.cost_usd;
  }
  if (st.setup.assist)
    caf::anon_send(st.setup.assist, ev);
  if (st.setup.watcher)
    caf::anon_send(st.setup.watcher, std::move(ev));
}

void emit_run(self_ptr self, const run::run_change& rc) {
  auto& st = self->state;
  if (!st.setup.watcher)
    return;
  run_event ev;
  ev.time_ms = clock_ms();
  ev.run_id = st.setup.run_id;
  ev.run = rc.to;
  ev.reason = rc.reason;
  caf::anon_send(st.setup.watcher, std::move(ev));
}

// -- commands waiting for durability ------------------------------------------

void settle_waiter(const waiter_ptr& w) {
  if (!w || w->done || w->open > 0)
    return;
  w->done = true;
  if (w->failure) {
    w->promise.deliver(w->failure);
    return;
  }
  steer_reply reply;
  for (auto& [i, view] : w->tasks)
    reply.tasks.push_back(view);
  w->promise.deliver(std::move(reply));
}

/// A command for tasks `tasks`, shown as the scheduler has them now.
waiter_ptr make_waiter(self_ptr self, std::vector<size_t> tasks,
                       caf::typed_response_promise<steer_reply> promise) {
  auto w = std::make_shared<waiter>();
  w->promise = std::move(promise);
  for (auto i : tasks)
    w->tasks[i]
      = task_view{id_of(self, i), sched(self).state(i), sched(self).reason(i)};
  return w;
}

/// One change of a command was acknowledged: durable (`failure` empty) or
/// not.
void acknowledged(const waiter_ptr& w, const run::task_change& c,
                  caf::error failure) {
  if (!w)
    return;
  if (!failure)
    if (auto it = w->tasks.find(c.task); it != w->tasks.end()) {
      it->second.state = c.to;
      it->second.reason = c.reason;
    }
  if (failure && !w->failure)
    w->failure = std::move(failure);
  if (w->open > 0)
    --w->open;
  settle_waiter(w);
}

// -- carrying out what a change or an order asks for --------------------------

void launch(self_ptr self, size_t i, uint64_t attempt, bool standby = false) {
  auto& st = self->state;
  auto& spec = sched(self).graph().task(i);
  auto& m = st.memory[i];
  run_task t;
  t.standby = standby;
  t.id = spec.id;
  t.title = spec.title;
  t.body = spec.body;
  t.files = spec.files;
  t.verify = spec.verify.value_or("");
  t.run = spec.run.value_or("");
  t.agent = spec.agent.value_or("");
  t.model = m.model;
  t.timeout_ms = spec.timeout_ms.value_or(0);
  t.invocations = m.invocations;
  t.previous_failure = m.previous_failure;
  t.worktree = m.worktree;
  t.branch = m.branch;
  t.session = m.session;
  if (!m.answer.empty()) {
    t.first_turn = turn_kind::answer;
    t.turn_text = std::move(m.answer);
    m.answer.clear();
  } else if (!m.merge_gate_result.empty()) {
    t.first_turn = turn_kind::repair;
    t.gate_result = std::move(m.merge_gate_result);
    t.turn_text = std::move(m.merge_gate_tail);
  }
  m.merge_gate_result.clear();
  m.merge_gate_tail.clear();
  bool fresh
    = sched(self).failures(i) > 0 && st.setup.cfg.fresh_worktree_on_retry;
  std::string why;
  try {
    auto h = st.setup.launch(t, attempt, fresh, as_actor(self));
    if (h.actor) {
      self->monitor(h.actor);
      st.workers[i] = worker_entry{std::move(h), attempt, false, standby};
      return;
    }
    why = "cannot start the worker";
  } catch (const std::exception& e) {
    why = std::string{"cannot start the worker: "} + e.what();
  }
  if (standby) {
    // It starts the usual way once the start is durable, and fails then.
    return;
  }
  ++m.failed;
  step(self, sched(self).attempt_ended(i, run::attempt_end::failed, why));
}

/// The start of task `i` is being recorded: its worker gets ready
/// meanwhile, on standby, when the attempt's number is foreseeable (the
/// ledger numbers a new attempt after the last) and its first turn is a
/// plain start (an answer or a repair is handed over once only).
void prepare(self_ptr self, size_t i) {
  auto& st = self->state;
  auto& m = st.memory[i];
  if (!st.setup.prepare_workers || st.workers.count(i) != 0 || !m.answer.empty()
      || !m.merge_gate_result.empty() || st.contended.count(i) != 0)
    return;
  // Another start of the task still on its way (one whose attempt ended
  // before it was durable) leaves the number unforeseeable.
  auto opens = [i](const commit_unit& u, size_t skip_last) {
    for (size_t k = 0; k + skip_last < u.changes.size(); ++k) {
      auto& c = u.changes[k].change;
      if (c.task == i && in_attempt(c.to) && !in_attempt(c.from))
        return true;
    }
    return false;
  };
  if ((st.in_flight && opens(*st.in_flight, 0)) || opens(st.gathering, 1))
    return;
  launch(self, i, m.attempt + 1, true);
}

/// The standby worker of task `i` goes: its start was not made durable,
/// or not with the number it foresaw. Its word is ignored from now on.
void drop_standby(self_ptr self, size_t i) {
  auto& st = self->state;
  auto w = st.workers.find(i);
  if (w == st.workers.end() || !w->second.standby)
    return;
  self->demonitor(w->second.handle.actor);
  caf::anon_send<caf::message_priority::high>(w->second.handle.actor,
                                              cancel_atom::value);
  st.workers.erase(w);
}

/// The start of task `i` is durable as `attempt`: its standby worker goes
/// on, or a worker starts now.
void start_worker(self_ptr self, size_t i, uint64_t attempt) {
  auto& st = self->state;
  auto w = st.workers.find(i);
  if (w != st.workers.end() && w->second.standby
      && w->second.attempt == attempt) {
    w->second.standby = false;
    caf::anon_send(w->second.handle.actor, start_atom::value);
    return;
  }
  drop_standby(self, i);
  launch(self, i, attempt);
}

merge_request merge_request_of(self_ptr self, size_t i) {
  auto& st = self->state;
  auto& spec = sched(self).graph().task(i);
  merge_request req;
  req.run_id = st.setup.run_id;
  req.task_id = spec.id;
  req.title = spec.title;
  req.worktree = st.memory[i].worktree;
  req.branch = st.memory[i].branch;
  req.cleanup = st.setup.cfg.cleanup_worktrees;
  req.scope = spec.files;
  return req;
}

/// What a merge or a check answered, for the scheduler.
void merge_answered(self_ptr self, uint64_t token, const merge_outcome& m) {
  auto& st = self->state;
  auto it = st.at_git.find(token);
  if (it == st.at_git.end())
    return; // answered already (the git service stopped meanwhile)
  auto i = it->second;
  st.at_git.erase(it);
  task_facts facts;
  if (!m.merge_commit.empty()) {
    facts.merge_commit = m.merge_commit;
    st.memory[i].merge_commit = m.merge_commit;
  }
  if (m.end == run::merge_end::conflict || m.end == run::merge_end::error)
    facts.conflict_paths = m.paths;
  if (m.end == run::merge_end::gate_failed) {
    facts.gate_tail = m.tail;
    st.memory[i].merge_gate_result = m.message;
    st.memory[i].merge_gate_tail = m.tail;
    st.memory[i].previous_failure = m.message;
  }
  step(self, sched(self).merge_ended(i, m.end, m.message),
       annotation{i, std::move(facts), nullptr});
}

/// A merge check for task `i` when its gate must pass on the merge result
/// first (verifyMerged): the task has a gate and merges from a branch (in
/// place, its gate already ran in the checkout the base is in). Null
/// otherwise, or when it cannot be started (the git service merges then).
caf::actor merge_checker_for(self_ptr self, size_t i) {
  auto& st = self->state;
  auto& spec = sched(self).graph().task(i);
  auto verify = spec.verify.value_or("");
  if (!st.setup.check_merge || verify.empty() || st.memory[i].branch.empty())
    return nullptr;
  try {
    return st.setup.check_merge(spec.id, st.memory[i].attempt, verify);
  } catch (const std::exception& e) {
    spdlog::warn("{}: merged without checking the merge result: {}", spec.id,
                 e.what());
    return nullptr;
  }
}

/// Asks the git service to merge task `i` (`check`: only whether it is
/// merged already).
void ask_git(self_ptr self, size_t i, bool check) {
  auto& st = self->state;
  auto token = st.next_git_token++;
  st.at_git.emplace(token, i);
  auto on_error = [self, token](caf::error& err) {
    merge_outcome m;
    m.end = run::merge_end::error;
    m.message = "git: " + self->system().render(err);
    merge_answered(self, token, m);
  };
  auto req = merge_request_of(self, i);
  if (check)
    self->request(st.setup.git, caf::infinite, check_atom::value, req)
      .then(
        [self, token](merge_outcome& m) {
          merge_answered(self, token, m);
        },
        on_error);
  else if (auto checker = merge_checker_for(self, i))
    self->request(checker, caf::infinite, merge_atom::value, req)
      .then(
        [self, token](merge_outcome& m) {
          merge_answered(self, token, m);
        },
        on_error);
  else
    self->request(st.setup.git, caf::infinite, merge_atom::value, req)
      .then(
        [self, token](merge_outcome& m) {
          merge_answered(self, token, m);
        },
        on_error);
}

/// Stops task `i`'s worker; without one (its start is not durable yet),
/// the attempt ends here.
void cancel(self_ptr self, size_t i) {
  auto& st = self->state;
  auto w = st.workers.find(i);
  if (w == st.workers.end()) {
    step(self, sched(self).attempt_ended(i, run::attempt_end::interrupted,
                                         "stopped before its worker started"));
    return;
  }
  w->second.stopping = true;
  caf::anon_send<caf::message_priority::high>(w->second.handle.actor,
                                              cancel_atom::value);
  if (w->second.handle.cancel)
    w->second.handle.cancel();
}

/// Carries out `what` for task `i`: a change's `then` once it is durable,
/// or an order at once.
void follow(self_ptr self, size_t i, run::follow_up what, uint64_t attempt) {
  switch (what) {
    case run::follow_up::none: return;
    case run::follow_up::launch: start_worker(self, i, attempt); return;
    case run::follow_up::merge: ask_git(self, i, false); return;
    case run::follow_up::check_merged: ask_git(self, i, true); return;
    case run::follow_up::cancel: cancel(self, i); return;
  }
}

/// Whether `p` is still the task's last word: no later change of the task
/// was made and the scheduler has it where `p` put it. A continuation of
/// an older change (a start cancelled before it was durable, and the task
/// started again meanwhile) must not run.
bool current(self_ptr self, const pending_change& p) {
  auto& c = p.change;
  return self->state.last_change[c.task] == p.serial
         && sched(self).state(c.task) == c.to;
}

/// A change that will never be durable asked for `what`: the scheduler
/// hears that it did not happen, so nothing waits for it.
void abandon(self_ptr self, const pending_change& p) {
  if (!current(self, p))
    return;
  auto& c = p.change;
  auto& why = self->state.lost;
  switch (c.then) {
    case run::follow_up::launch:
      drop_standby(self, c.task);
      step(self, sched(self).attempt_ended(c.task,
                                           run::attempt_end::interrupted, why));
      return;
    case run::follow_up::merge:
      step(self, sched(self).merge_ended(c.task, run::merge_end::error,
                                         "not merged: " + why));
      return;
    default: return;
  }
}

// -- the ledger: group commit -------------------------------------------------

/// The model the attempt task `i` is about to start runs on (recorded with
/// the change that opens it, then handed to its worker).
std::string route(self_ptr self, size_t i) {
  auto& st = self->state;
  auto& spec = sched(self).graph().task(i);
  auto& m = st.memory[i];
  try {
    m.model = route_model(spec.model.value_or(""), spec.agent.value_or(""),
                          st.setup.cfg, m.failed);
  } catch (const std::exception&) {
    // Only a run.worker that is no backend throws; launch says so.
    m.model.clear();
  }
  return m.model;
}

/// Carries out a decision: its changes gather for the ledger (with the
/// facts and the command of `a` on the first `own` of them), its orders run
/// at once, its run change follows the task changes.
void carry_out(self_ptr self, run::decision d, size_t own,
               const annotation& a) {
  auto& st = self->state;
  // The facts go with the change that closes the attempt (or the first).
  std::optional<size_t> with_facts;
  if (a.task)
    for (size_t k = 0; k < own && k < d.changes.size(); ++k)
      if (d.changes[k].task == *a.task) {
        if (!with_facts)
          with_facts = k;
        if (!in_attempt(d.changes[k].to)) {
          with_facts = k;
          break;
        }
      }
  std::vector<pending_change> dropped;
  for (size_t k = 0; k < d.changes.size(); ++k) {
    pending_change p{std::move(d.changes[k]), {}, nullptr, ++st.change_serial};
    st.last_change[p.change.task] = p.serial;
    if (with_facts && *with_facts == k)
      p.facts = a.facts;
    bool starts = p.change.then == run::follow_up::launch;
    if (starts)
      p.facts.model = route(self, p.change.task);
    if (k < own && a.wait) {
      p.wait = a.wait;
      ++a.wait->open;
    }
    if (!st.lost.empty()) {
      acknowledged(p.wait, p.change,
                   caf::make_error(run_errc::ledger_io, st.lost));
      dropped.push_back(std::move(p));
      continue;
    }
    st.gathering.changes.push_back(std::move(p));
    if (starts)
      prepare(self, st.gathering.changes.back().change.task);
  }
  if (d.run && st.lost.empty()) {
    st.gathering.run = std::move(d.run);
    ++st.run_writes;
  }
  for (auto& o : d.now)
    follow(self, o.task, o.what, st.memory[o.task].attempt);
  for (auto& p : dropped)
    abandon(self, p);
  settle_waiter(a.wait);
  flush(self);
  maybe_finish(self);
}

/// Every event goes through here: the scheduler's decision about it, and
/// then what starts now.
void step(self_ptr self, run::decision d, annotation a) {
  auto own = d.changes.size();
  d += sched(self).next();
  carry_out(self, std::move(d), own, a);
}

void record_run(self_ptr self, uint64_t serial, run::run_change rc) {
  auto& st = self->state;
  run_transition tr{st.setup.run_id, rc.to, rc.reason};
  self->request(st.setup.ledger, caf::infinite, record_atom::value, tr)
    .then(
      [self, serial, rc](bool) {
        auto& st = self->state;
        if (serial != st.unit_serial || !st.lost.empty())
          return;
        st.in_flight.reset();
        emit_run(self, rc);
        flush(self);
        maybe_finish(self);
      },
      [self, serial](caf::error& err) {
        auto& st = self->state;
        if (serial != st.unit_serial || !st.lost.empty())
          return;
        if (err == run_errc::refused_transition) {
          // Another process moved the run (an abort): look at once, and
          // let the scheduler follow what the ledger says.
          st.in_flight.reset();
          ++st.run_writes;
          look(self, true);
          flush(self);
          maybe_finish(self);
          return;
        }
        ledger_failed(self, self->system().render(err));
      });
}

/// The ledger answered a batch: tell the watcher what is durable, take the
/// ledger's word where it refused, then carry out each durable change's
/// `then`, and record the run change.
void batch_answered(self_ptr self, uint64_t serial, batch_acks& answer) {
  auto& st = self->state;
  if (serial != st.unit_serial || !st.lost.empty() || !st.in_flight)
    return;
  auto& unit = *st.in_flight;
  auto& changes = unit.changes;
  if (answer.acks.size() != changes.size()) {
    ledger_failed(self, "the ledger answered "
                          + std::to_string(answer.acks.size()) + " of "
                          + std::to_string(changes.size()) + " changes");
    return;
  }
  // Where the ledger has each task with a refused change after the batch,
  // why it refused, and whether the task waits for another holder's
  // reservation rather than being refused for good.
  struct refusal {
    task_state where;
    std::string why;
    bool waits;
  };
  std::map<size_t, refusal> refused;
  std::map<size_t, task_state> last;
  std::map<size_t, uint64_t> last_serial;
  for (size_t k = 0; k < changes.size(); ++k) {
    auto& c = changes[k].change;
    auto& ack = answer.acks[k];
    last_serial[c.task] = changes[k].serial;
    if (ack.durable) {
      last[c.task] = c.to;
      if (ack.attempt > 0)
        st.memory[c.task].attempt = ack.attempt;
      continue;
    }
    auto where = ack.actual ? *ack.actual : c.from;
    last[c.task] = where;
    auto why = ack.actual ? ack.refusal
                          : "the ledger has no task " + id_of(self, c.task);
    if (refused.count(c.task) == 0)
      refused[c.task] = {where, why, ack.waits};
  }
  for (auto& [i, r] : refused)
    r.where = last[i];
  // A task with changes decided after this batch's: those were decided
  // from a view that already took an earlier refusal into account, or
  // they will be refused in turn; their answer is the ledger's last word.
  for (auto i = refused.begin(); i != refused.end();)
    if (last_serial[i->first] != st.last_change[i->first])
      i = refused.erase(i);
    else
      ++i;
  // Durable changes reach the watcher in order.
  for (size_t k = 0; k < changes.size(); ++k) {
    auto& p = changes[k];
    if (answer.acks[k].durable) {
      emit_task(self, p.change.task, p.change.to, p.change.reason,
                p.facts.spent);
      acknowledged(p.wait, p.change, caf::error{});
    } else {
      acknowledged(
        p.wait, p.change,
        caf::make_error(run_errc::refused_transition, answer.acks[k].refusal));
    }
  }
  // A start the ledger refused lets its standby worker go before the
  // scheduler decides again.
  for (size_t k = 0; k < changes.size(); ++k)
    if (!answer.acks[k].durable
        && changes[k].change.then == run::follow_up::launch)
      drop_standby(self, changes[k].change.task);
  auto run_change = std::move(unit.run);
  auto durable = std::move(changes);
  // The ledger's word first, so a continuation sees the task where it is.
  // A start that waits for another holder's reservation is tried again at
  // a later look (the tick), without a standby worker meanwhile.
  for (auto& [i, r] : refused) {
    if (r.waits) {
      st.contended.insert(i);
      emit_task(self, i, r.where, r.why);
      step(self, sched(self).reserved_elsewhere(i, r.where, r.why));
      continue;
    }
    emit_task(self, i, r.where, "the ledger refused a change: " + r.why);
    step(self, sched(self).refused(i, r.where, r.why));
  }
  for (size_t k = 0; k < durable.size(); ++k) {
    auto& c = durable[k].change;
    if (c.then == run::follow_up::launch && answer.acks[k].durable)
      st.contended.erase(c.task);
    if (c.then == run::follow_up::none || !answer.acks[k].durable)
      continue;
    if (current(self, durable[k]))
      follow(self, c.task, c.then, answer.acks[k].attempt);
    else if (c.then == run::follow_up::launch
             && self->state.last_change[c.task] == durable[k].serial)
      drop_standby(self, c.task);
  }
  if (!st.lost.empty())
    return;
  // A run change decided meanwhile supersedes this one.
  if (run_change && !st.gathering.run) {
    record_run(self, serial, std::move(*run_change));
    return;
  }
  st.in_flight.reset();
  flush(self);
  maybe_finish(self);
}

/// Whether what gathered may wait for company: it starts nothing and
/// nobody waits for it, and a worker or a merge still under way will bring
/// the next batch (the timer bounds the wait when it does not). Only tasks
/// that worked in place: a merged branch's worktree may be handed to
/// another task at once, and a resume must find the merge recorded first.
bool may_linger(self_ptr self) {
  auto& st = self->state;
  if (st.setup.linger.count() <= 0 || st.gathering.run
      || (st.workers.empty() && st.at_git.empty()))
    return false;
  return std::all_of(st.gathering.changes.begin(), st.gathering.changes.end(),
                     [&st](const pending_change& p) {
                       return !p.wait && p.change.then == run::follow_up::none
                              && st.memory[p.change.task].branch.empty();
                     });
}

/// Sends what gathered, unless a unit is with the ledger or it may linger
/// (`now` ends the lingering).
void flush(self_ptr self, bool now) {
  auto& st = self->state;
  if (st.in_flight || !st.lost.empty() || st.gathering.empty())
    return;
  if (!now && may_linger(self)) {
    if (!st.linger_armed) {
      st.linger_armed = true;
      self->delayed_send(self, st.setup.linger, record_atom::value);
    }
    return;
  }
  st.in_flight = std::move(st.gathering);
  st.gathering = commit_unit{};
  auto serial = ++st.unit_serial;
  auto& unit = *st.in_flight;
  if (unit.changes.empty()) {
    auto rc = std::move(*unit.run);
    unit.run.reset();
    record_run(self, serial, std::move(rc));
    return;
  }
  transition_batch batch;
  batch.run_id = st.setup.run_id;
  for (auto& p : unit.changes) {
    auto& c = p.change;
    batch.changes.push_back(
      task_transition{id_of(self, c.task), c.event, c.from, c.to,
                      st.memory[c.task].attempt, c.reason, p.facts});
    if (c.to == task_state::running || c.to == task_state::merging) {
      // What the task writes, for the ledger's reservation table.
      auto& spec = sched(self).graph().task(c.task);
      batch.changes.back().facts.files = spec.files;
      batch.changes.back().facts.locks = spec.locks;
    }
  }
  self
    ->request(st.setup.ledger, caf::infinite, record_atom::value,
              std::move(batch))
    .then(
      [self, serial](batch_acks& acks) {
        batch_answered(self, serial, acks);
      },
      [self, serial](caf::error& err) {
        if (serial == self->state.unit_serial)
          ledger_failed(self, self->system().render(err));
      });
}

/// The ledger failed or stopped: nothing more is recorded or acted on, the
/// attempts are interrupted, and the run ends paused with the reason once
/// they ended.
void ledger_failed(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (!st.lost.empty())
    return;
  st.lost = "the ledger failed: " + why;
  spdlog::error("{}", st.lost);
  std::vector<pending_change> dropped;
  auto drop = [&](commit_unit& u) {
    for (auto& p : u.changes) {
      acknowledged(p.wait, p.change,
                   caf::make_error(run_errc::ledger_io, st.lost));
      dropped.push_back(std::move(p));
    }
    u = commit_unit{};
  };
  if (st.in_flight)
    drop(*st.in_flight);
  st.in_flight.reset();
  drop(st.gathering);
  step(self, sched(self).pause(st.lost, true));
  for (auto& p : dropped)
    abandon(self, p);
  maybe_finish(self);
}

// -- the git service ----------------------------------------------------------

void git_stopped(self_ptr self, const std::string& why) {
  auto& st = self->state;
  if (!st.git_gone.empty())
    return;
  st.git_gone = "the git service stopped: " + why;
  spdlog::error("{}", st.git_gone);
  auto out = std::move(st.at_git);
  st.at_git.clear();
  for (auto& [token, i] : out)
    step(self, sched(self).merge_ended(i, run::merge_end::error, st.git_gone));
  step(self, sched(self).pause(st.git_gone, true));
}

// -- the end ------------------------------------------------------------------

run_state final_state(self_ptr self) {
  return sched(self).recorded_end(!self->state.lost.empty());
}

/// Tells the watcher once the run is over for this process and what it
/// recorded is durable (or can never be).
void maybe_finish(self_ptr self) {
  auto& st = self->state;
  if (st.told || !st.started || !sched(self).finished())
    return;
  if (st.lost.empty()) {
    if (st.in_flight || !st.gathering.empty() || st.rechecks > 0
        || !st.adding.empty())
      return;
    // Kept open for a person's answer.
    if (sched(self).awaiting_answer())
      return;
  }
  st.told = true;
  for (auto& [i, w] : st.workers) {
    // A worker whose task the scheduler no longer counts: stop it.
    caf::anon_send<caf::message_priority::high>(w.handle.actor,
                                                cancel_atom::value);
    if (w.handle.cancel)
      w.handle.cancel();
  }
  auto reason = st.lost.empty() ? sched(self).phase_reason() : st.lost;
  if (st.setup.watcher)
    caf::anon_send(st.setup.watcher, finished_atom::value, final_state(self),
                   reason);
}

// -- workers ------------------------------------------------------------------

std::optional<size_t> worker_task(self_ptr self, const std::string& task_id,
                                  uint64_t attempt) {
  auto i = sched(self).find(task_id);
  if (!i)
    return std::nullopt;
  auto w = self->state.workers.find(*i);
  if (w == self->state.workers.end() || w->second.attempt != attempt)
    return std::nullopt; // a late word from an attempt already given up
  return i;
}

/// Usage a worker reported: the scheduler counts it towards the budget
/// before it decides on the event that brought it.
void count_spent(self_ptr self, const std::vector<turn_spent>& turns) {
  for (auto& t : turns)
    sched(self).spent(run::spend{t.usage.input_tokens, t.usage.output_tokens,
                                 t.usage.cost_usd});
}

void on_outcome(self_ptr self, attempt_outcome& o) {
  auto& st = self->state;
  auto i = worker_task(self, o.task_id, o.attempt);
  if (!i)
    return;
  self->demonitor(st.workers[*i].handle.actor);
  st.workers.erase(*i);
  auto& m = st.memory[*i];
  m.invocations += o.turns;
  task_facts facts;
  if (!o.worktree.empty())
    facts.worktree = m.worktree = o.worktree;
  if (!o.branch.empty())
    facts.branch = m.branch = o.branch;
  if (!o.session.empty())
    facts.session = m.session = o.session;
  if (!o.tail.empty())
    facts.gate_tail = o.tail;
  if (o.exit_code >= 0)
    facts.exit_code = o.exit_code;
  facts.spent = o.spent;
  count_spent(self, o.spent);
  if (o.end == run::attempt_end::failed
      || o.end == run::attempt_end::base_moved) {
    m.previous_failure = o.reason;
    ++m.failed;
  }
  step(self, sched(self).attempt_ended(*i, o.end, o.reason),
       annotation{*i, std::move(facts), nullptr});
}

void on_progress(self_ptr self, attempt_progress& p) {
  auto& st = self->state;
  auto i = worker_task(self, p.task_id, p.attempt);
  if (!i)
    return;
  switch (p.phase) {
    case attempt_phase::leased: {
      if (p.worktree.empty() || !st.lost.empty())
        return;
      auto& m = st.memory[*i];
      m.worktree = p.worktree;
      m.branch = p.branch;
      // The ledger knows the worktree before anything is written into it.
      task_update up{st.setup.run_id, p.task_id, {}};
      up.facts.worktree = p.worktree;
      up.facts.branch = p.branch;
      self
        ->request(st.setup.ledger, caf::infinite, record_atom::value,
                  std::move(up))
        .then([](bool) {},
              [self](caf::error& err) {
                ledger_failed(self, self->system().render(err));
              });
      return;
    }
    case attempt_phase::verifying: {
      // The usage of the turn that ended goes with its move to verifying.
      task_facts facts;
      facts.spent = p.spent;
      count_spent(self, p.spent);
      step(self, sched(self).worker_phase(*i, task_event::work_done, p.detail),
           annotation{*i, std::move(facts), nullptr});
      return;
    }
    case attempt_phase::repairing:
      step(self, sched(self).worker_phase(*i, task_event::repair, p.detail));
      return;
  }
}

void on_down(self_ptr self, caf::down_msg& msg) {
  auto& st = self->state;
  for (auto& [i, w] : st.workers) {
    if (w.handle.actor.address() != msg.source)
      continue;
    auto task = i;
    auto end
      = w.stopping ? run::attempt_end::interrupted : run::attempt_end::failed;
    st.workers.erase(task);
    if (end == run::attempt_end::failed)
      ++st.memory[task].failed;
    step(self, sched(self).attempt_ended(
                 task, end,
                 "the worker stopped: " + self->system().render(msg.reason)));
    return;
  }
  if (msg.source == st.setup.ledger.address())
    ledger_failed(self,
                  "it stopped (" + self->system().render(msg.reason) + ")");
  else if (msg.source == st.setup.git.address())
    git_stopped(self, self->system().render(msg.reason));
}

// -- another process ----------------------------------------------------------

/// Asks the ledger where the run is: another process (`taskforce abort`)
/// may have aborted or paused it, and the scheduler follows.
void look(self_ptr self, bool after_refusal) {
  auto& st = self->state;
  auto ours = [self] {
    auto& st = self->state;
    return (st.in_flight && st.in_flight->run) || st.gathering.run;
  };
  if (!after_refusal && ours())
    return; // our own run change is not recorded yet
  if (after_refusal)
    ++st.rechecks;
  auto seen = st.run_writes;
  auto done = [self, after_refusal] {
    if (!after_refusal)
      return;
    --self->state.rechecks;
    maybe_finish(self);
  };
  self
    ->request(st.setup.ledger, caf::infinite, caf::get_atom::value,
              st.setup.run_id)
    .then(
      [self, seen, ours, done](run_transition& r) {
        auto& st = self->state;
        if (!st.told && st.lost.empty())
          step(self, sched(self).observed(r.to, r.reason,
                                          seen != st.run_writes || ours()));
        done();
      },
      [self, after_refusal, done](caf::error& err) {
        // After a refusal, the run's end waits for this answer: without
        // it, nothing more can be recorded with confidence.
        if (after_refusal)
          ledger_failed(self, self->system().render(err));
        done();
      });
}

// -- a person steers ----------------------------------------------------------

/// Whether the run can take a command now; the error when not.
caf::error closed(self_ptr self) {
  auto& st = self->state;
  if (!st.lost.empty())
    return caf::make_error(run_errc::ledger_io, st.lost);
  if (st.told || !st.started)
    return caf::make_error(run_errc::no_driver,
                           std::string{"the run is not being driven"});
  return {};
}

caf::error refusal_error(const run::steer_result& r) {
  switch (r.why_not) {
    case run::refusal::duplicate:
      return caf::make_error(run_errc::duplicate_task, r.error);
    case run::refusal::invalid:
      return caf::make_error(run_errc::bad_tasks, r.error);
    default: return caf::make_error(run_errc::wrong_state, r.error);
  }
}

/// Runs a person's command on task `task_id` through `command` (the
/// scheduler's steer method); the reply comes once its changes are
/// durable.
template<class Command>
caf::result<steer_reply> steer(self_ptr self, const std::string& task_id,
                               Command command) {
  if (auto err = closed(self))
    return err;
  auto i = sched(self).find(task_id);
  if (!i)
    return caf::make_error(run_errc::unknown_task,
                           "no task " + task_id + " in run "
                             + self->state.setup.run_id);
  auto r = command(*i);
  if (!r.ok)
    return refusal_error(r);
  auto w = make_waiter(self, {*i}, self->make_response_promise<steer_reply>());
  task_facts facts;
  for (auto& c : r.changes.changes)
    if (c.task == *i && c.event == task_event::release)
      facts.hold_lifted = true;
  auto promise = w->promise;
  step(self, std::move(r.changes), annotation{*i, std::move(facts), w});
  return promise;
}

caf::result<steer_reply> add_tasks(self_ptr self, task_additions& more) {
  auto& st = self->state;
  if (auto err = closed(self))
    return err;
  for (auto& t : more.tasks)
    if (std::find(st.adding.begin(), st.adding.end(), t.id) != st.adding.end())
      return caf::make_error(run_errc::duplicate_task,
                             "task " + t.id + " is being added already");
  auto check = sched(self).check_add(more.tasks);
  if (!check.ok)
    return refusal_error(check);
  for (auto& t : more.tasks)
    st.adding.push_back(t.id);
  // The run stays open until the tasks joined (or did not).
  sched(self).hold_open(true);
  auto promise = self->make_response_promise<steer_reply>();
  auto release = [self, ids = more.tasks] {
    auto& adding = self->state.adding;
    for (auto& t : ids)
      adding.erase(std::remove(adding.begin(), adding.end(), t.id),
                   adding.end());
    sched(self).hold_open(false);
  };
  self
    ->request(st.setup.ledger, caf::infinite, add_atom::value, st.setup.run_id,
              more)
    .then(
      [self, promise, release, tasks = more.tasks](bool) mutable {
        release();
        auto& st = self->state;
        if (!st.lost.empty()) {
          promise.deliver(caf::make_error(run_errc::ledger_io, st.lost));
          maybe_finish(self);
          return;
        }
        auto first = sched(self).size();
        auto r = sched(self).add(tasks);
        if (!r.ok) {
          promise.deliver(refusal_error(r));
          step(self, run::decision{});
          return;
        }
        st.memory.resize(sched(self).size());
        st.last_change.resize(sched(self).size());
        std::vector<size_t> added;
        for (auto i = first; i < sched(self).size(); ++i)
          added.push_back(i);
        auto w = make_waiter(self, std::move(added), promise);
        step(self, std::move(r.changes), annotation{std::nullopt, {}, w});
      },
      [self, promise, release](caf::error& err) mutable {
        release();
        promise.deliver(std::move(err));
        step(self, run::decision{});
      });
  return promise;
}

} // namespace

orchestrator_actor::behavior_type
orchestrator(orchestrator_actor::stateful_pointer<orchestrator_state> self,
             orchestrator_setup setup) {
  auto& st = self->state;
  st.setup = std::move(setup);
  auto records = std::move(st.setup.records);
  records.resize(st.setup.graph.size());
  st.sched.emplace(st.setup.graph, std::move(records), st.setup.rules);
  st.sched->spent(st.setup.spent);
  st.memory = std::move(st.setup.memory);
  st.memory.resize(st.sched->size());
  st.last_change.resize(st.sched->size());
  if (st.setup.ledger)
    self->monitor(st.setup.ledger);
  if (st.setup.git)
    self->monitor(st.setup.git);
  self->set_down_handler([self](caf::down_msg& msg) {
    on_down(self, msg);
  });
  return {
    // -- the command ----------------------------------------------------------
    [self](start_atom) {
      auto& st = self->state;
      if (st.started)
        return;
      st.started = true;
      step(self, sched(self).start());
      self->delayed_send(self, st.setup.poll, caf::tick_atom::value);
    },
    [self](pause_atom, std::string& why, bool interrupt) {
      step(self, sched(self).pause(std::move(why), interrupt));
    },
    [self](abort_atom, std::string& why) {
      step(self, sched(self).abort(std::move(why)));
    },
    // -- workers --------------------------------------------------------------
    [self](outcome_atom, attempt_outcome& o) {
      on_outcome(self, o);
    },
    [self](progress_atom, attempt_progress& p) {
      on_progress(self, p);
    },
    // -- a person -------------------------------------------------------------
    [self](approve_atom, std::string& task) {
      return steer(self, task, [self](size_t i) {
        return sched(self).approve(i);
      });
    },
    [self](reject_atom, std::string& task, std::string& why) {
      return steer(self, task, [self, why](size_t i) {
        return sched(self).reject(i, why);
      });
    },
    [self](answer_atom, std::string& task, std::string& text) {
      return steer(self, task, [self, text](size_t i) {
        auto r = sched(self).answer(i);
        if (r.ok)
          self->state.memory[i].answer = text;
        return r;
      });
    },
    [self](add_atom, task_additions& more) {
      return add_tasks(self, more);
    },
    [self](caf::get_atom) {
      steer_reply r;
      auto& s = sched(self);
      for (size_t i = 0; i < s.size(); ++i)
        r.tasks.push_back({s.graph().task(i).id, s.state(i), s.reason(i)});
      return r;
    },
    // -- another process ------------------------------------------------------
    [self](caf::tick_atom) {
      auto& st = self->state;
      if (st.told || !st.lost.empty())
        return;
      self->delayed_send(self, st.setup.poll, caf::tick_atom::value);
      look(self);
      // Starts that waited for a managed task's reservation are tried
      // again: the ledger says whether it is gone.
      if (sched(self).waits_elsewhere())
        step(self, sched(self).retry_reserved());
    },
    [self](record_atom) {
      self->state.linger_armed = false;
      flush(self, true);
      maybe_finish(self);
    },
  };
}

orchestrator_actor spawn_orchestrator(caf::actor_system& sys,
                                      orchestrator_setup setup) {
  return sys.spawn(orchestrator, std::move(setup));
}

} // namespace taskforce
