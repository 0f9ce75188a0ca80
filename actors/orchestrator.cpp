#include "actors/orchestrator.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

namespace taskforce {

bool is_final_task_state(const std::string& state) {
  return state == "done" || state == "skipped" || state == "failed";
}

namespace {

int64_t clock_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch())
    .count();
}

std::string join(const std::vector<std::string>& xs, const char* sep = ", ") {
  std::string out;
  for (auto& x : xs) {
    if (!out.empty())
      out += sep;
    out += x;
  }
  return out;
}

bool schedulable(const std::string& state) {
  return state == "pending" || state == "ready" || state == "interrupted";
}

// A task occupies its scope while it runs and until its work is merged: a
// conflicting task started earlier would fork from a base without it.
bool occupying(const std::string& state) {
  return state == "running" || state == "verifying" || state == "merging";
}

struct orchestrator_state {
  // -- constants ----------------------------------------------------------------
  static inline const char* name = "orchestrator";

  // -- member variables ---------------------------------------------------------
  /// The run's setup, tasks included.
  orchestrator_setup setup;
  /// Workers alive, by task index.
  std::map<size_t, worker_handle> running;
  /// Ledger writes and merges not answered yet: the run cannot finish.
  size_t outstanding = 0;
  /// A transition waiting for the next group commit, and what to do once
  /// it is durable.
  struct queued {
    size_t index;
    std::string state;
    std::string why;
    std::function<void(uint64_t)> then;
  };
  /// Transitions written while a batch is in flight: the next batch.
  std::vector<queued> queue;
  std::vector<task_transition> queue_msgs;
  /// A batch is with the ledger.
  bool batch_in_flight = false;
  /// The run no longer launches tasks.
  bool paused = false;
  /// The run stops for good.
  bool aborted = false;
  /// The watcher was told; nothing more happens.
  bool finished = false;
  /// Why the run paused or was aborted.
  std::string reason;
  /// The run was recorded as "running" (start acknowledged).
  bool started = false;
};

using self_ptr = orchestrator_actor::stateful_pointer<orchestrator_state>;

void schedule(self_ptr self);
void maybe_finish(self_ptr self);
void pause_run(self_ptr self, const std::string& why, bool interrupt);

run_task& task(self_ptr self, size_t i) {
  return self->state.setup.tasks[i];
}

size_t index_of(self_ptr self, const std::string& id) {
  auto& tasks = self->state.setup.tasks;
  for (size_t i = 0; i < tasks.size(); ++i)
    if (tasks[i].id == id)
      return i;
  return tasks.size();
}

void emit(self_ptr self, const run_task* t, const std::string& state,
          const std::string& why) {
  run_event ev;
  ev.time_ms = clock_ms();
  ev.run_id = self->state.setup.run_id;
  if (t != nullptr) {
    ev.task_id = t->id;
    ev.title = t->title;
    ev.attempt = t->attempt_no;
  }
  if (t != nullptr)
    from_string(state, ev.state);
  else
    from_string(state, ev.run);
  ev.reason = why;
  if (self->state.setup.watcher)
    caf::anon_send(self->state.setup.watcher, std::move(ev));
}

// A ledger write that fails leaves us unable to promise anything: stop
// launching and let the running attempts end as interrupted.
void ledger_failed(self_ptr self, const caf::error& err) {
  auto what = "ledger: " + self->system().render(err);
  spdlog::error("{}", what);
  self->state.reason = what;
  self->state.paused = true;
  for (auto& [i, h] : self->state.running)
    h.cancel();
  maybe_finish(self);
}

void flush(self_ptr self);

/// Writes a task transition. The in-memory state follows at once (so the
/// scheduler sees what is about to be true), but `then` (the action) runs
/// only once the ledger committed it, with the task's attempt number.
/// Transitions queue while one batch is with the ledger and go together in
/// the next (group commit): one sync for many.
void record(self_ptr self, size_t i, std::string state, std::string why,
            task_facts facts, std::function<void(uint64_t)> then) {
  auto& t = task(self, i);
  task_transition tr;
  tr.task_id = t.id;
  from_string(t.state, tr.from);
  from_string(state, tr.to);
  tr.event = event_between(tr.from, tr.to).value_or(task_event::start);
  tr.attempt = t.attempt_no;
  tr.reason = why;
  tr.facts = std::move(facts);
  self->state.queue_msgs.push_back(std::move(tr));
  self->state.queue.push_back({i, state, why, std::move(then)});
  t.state = state;
  t.reason = why;
  ++self->state.outstanding;
  flush(self);
}

void flush(self_ptr self) {
  auto& st = self->state;
  if (st.batch_in_flight || st.queue.empty())
    return;
  st.batch_in_flight = true;
  auto items = std::make_shared<std::vector<orchestrator_state::queued>>(
    std::move(st.queue));
  transition_batch batch{st.setup.run_id, std::move(st.queue_msgs)};
  st.queue.clear();
  st.queue_msgs.clear();
  self
    ->request(st.setup.ledger, caf::infinite, record_atom::value,
              std::move(batch))
    .then(
      [=](batch_acks& acks) {
        self->state.batch_in_flight = false;
        for (auto& ack : acks.acks)
          if (!ack.durable) {
            self->state.outstanding -= items->size();
            ledger_failed(
              self, caf::make_error(run_errc::refused_transition, ack.refusal));
            return;
          }
        for (size_t k = 0; k < items->size(); ++k) {
          auto& q = (*items)[k];
          --self->state.outstanding;
          auto attempt = k < acks.acks.size() ? acks.acks[k].attempt : 0;
          auto& t = task(self, q.index);
          if (attempt > 0)
            t.attempt_no = attempt;
          emit(self, &t, q.state, q.why);
          if (q.then)
            q.then(attempt);
        }
        flush(self);
        maybe_finish(self);
      },
      [=](caf::error& err) {
        self->state.batch_in_flight = false;
        self->state.outstanding -= items->size();
        ledger_failed(self, err);
      });
}

void record_run(self_ptr self, std::string state, std::string why,
                std::function<void()> then) {
  run_transition tr{self->state.setup.run_id, run_state::running, why};
  from_string(state, tr.to);
  self
    ->request(self->state.setup.ledger, caf::infinite, record_atom::value,
              std::move(tr))
    .then(
      [=](bool) {
        emit(self, nullptr, state, why);
        if (then)
          then();
      },
      [=](caf::error& err) { ledger_failed(self, err); });
}

void notify_finished(self_ptr self, const std::string& state) {
  if (self->state.finished)
    return;
  self->state.finished = true;
  if (self->state.setup.watcher) {
    run_state to = run_state::paused;
    from_string(state, to);
    caf::anon_send(self->state.setup.watcher, finished_atom::value, to,
                   self->state.reason);
  }
}

/// Skips every task that (transitively) depends on task `i`.
void skip_dependents(self_ptr self, size_t i) {
  auto& tasks = self->state.setup.tasks;
  std::vector<size_t> work{i};
  std::set<size_t> seen;
  while (!work.empty()) {
    auto cur = work.back();
    work.pop_back();
    for (size_t j = 0; j < tasks.size(); ++j) {
      auto& d = tasks[j].deps;
      if (std::find(d.begin(), d.end(), cur) == d.end() || seen.count(j) > 0)
        continue;
      seen.insert(j);
      work.push_back(j);
      auto& s = tasks[j].state;
      if (s == "pending" || s == "ready" || s == "held")
        record(self, j, "skipped",
               "dependency " + tasks[i].id + " " + tasks[i].state, {}, nullptr);
    }
  }
}

/// A task failed or blocked for good: pause, or go on around it.
void task_stopped(self_ptr self, size_t i, const std::string& why) {
  if (self->state.setup.cfg.continue_on_error) {
    skip_dependents(self, i);
    schedule(self);
  } else {
    pause_run(self, why, false);
  }
}

void merge_task(self_ptr self, size_t i) {
  auto& t = task(self, i);
  merge_request req;
  req.run_id = self->state.setup.run_id;
  req.task_id = t.id;
  req.title = t.title;
  req.worktree = t.worktree;
  req.branch = t.branch;
  req.cleanup = self->state.setup.cfg.cleanup_worktrees;
  req.scope = t.files;
  ++self->state.outstanding;
  self->request(self->state.setup.git, caf::infinite, merge_atom::value, req)
    .then(
      [=](merge_outcome& m) {
        --self->state.outstanding;
        auto& t = task(self, i);
        task_facts facts;
        switch (m.end) {
          case run::merge_end::merged:
          case run::merge_end::empty: {
            t.merge_commit = m.merge_commit;
            if (!m.merge_commit.empty())
              facts.merge_commit = m.merge_commit;
            auto why
              = m.end == run::merge_end::empty ? "no changes" : std::string{};
            record(self, i, "done", why, facts, [=](uint64_t) {
              schedule(self);
            });
            break;
          }
          default: {
            facts.conflict_paths = m.paths;
            auto why = m.message;
            record(self, i, "conflict", why, facts, [=](uint64_t) {
              pause_run(self, task(self, i).id + ": " + why, false);
            });
            break;
          }
        }
      },
      [=](caf::error& err) {
        --self->state.outstanding;
        pause_run(self,
                  task(self, i).id + ": merge: " + self->system().render(err),
                  false);
      });
}

/// Finished work: integrate it, keep it for review, or leave it in place.
void integrate(self_ptr self, size_t i) {
  auto& cfg = self->state.setup.cfg;
  auto& t = task(self, i);
  if (t.state == "running")
    record(self, i, "verifying", "", {}, nullptr);
  if (cfg.mode == "assist") {
    record(self, i, "merging", "", {}, nullptr);
    record(self, i, "done", "changes left uncommitted in the main checkout", {},
           [=](uint64_t) {
             schedule(self);
           });
    return;
  }
  task_facts where;
  where.worktree = t.worktree;
  where.branch = t.branch;
  if (!cfg.auto_merge && cfg.use_worktrees) {
    record(self, i, "merging", "", {}, nullptr);
    record(self, i, "review", "kept for review in " + t.worktree, where,
           [=](uint64_t) {
             schedule(self);
           });
    return;
  }
  record(self, i, "merging", "", where, [=](uint64_t) {
    merge_task(self, i);
  });
}

void on_outcome(self_ptr self, attempt_outcome& o) {
  auto i = index_of(self, o.task_id);
  if (i >= self->state.setup.tasks.size())
    return;
  auto& t = task(self, i);
  if (o.attempt != t.attempt_no || self->state.running.count(i) == 0)
    return; // a late word from an attempt already given up
  self->state.running.erase(i);
  t.invocations += o.turns;
  if (o.end == run::attempt_end::failed)
    t.previous_failure = o.reason;
  if (!o.worktree.empty())
    t.worktree = o.worktree;
  if (!o.branch.empty())
    t.branch = o.branch;
  task_facts detail;
  detail.gate_tail = o.tail;
  if (o.exit_code >= 0)
    detail.exit_code = o.exit_code;
  detail.spent = o.spent;
  if (!t.worktree.empty())
    detail.worktree = t.worktree;
  if (!t.branch.empty())
    detail.branch = t.branch;
  auto& cfg = self->state.setup.cfg;
  switch (o.end) {
    case run::attempt_end::interrupted:
      record(self, i, "interrupted", o.reason, detail,
             [=](uint64_t) { schedule(self); });
      return;
    case run::attempt_end::done:
      ++t.attempts;
      integrate(self, i);
      return;
    case run::attempt_end::blocked: {
      ++t.attempts;
      record(self, i, "blocked", o.reason, detail, [=](uint64_t) {
        task_stopped(self, i, task(self, i).id + " blocked: " + o.reason);
      });
      return;
    }
    case run::attempt_end::failed:
      ++t.attempts;
      if (t.attempts < cfg.max_attempts && !self->state.paused
          && !self->state.aborted) {
        record(self, i, "ready",
               "attempt " + std::to_string(o.attempt) + " failed: " + o.reason,
               detail, [=](uint64_t) { schedule(self); });
      } else {
        record(self, i, "failed", o.reason, detail, [=](uint64_t) {
          task_stopped(self, i, task(self, i).id + " failed: " + o.reason);
        });
      }
      return;
  }
}

void launch(self_ptr self, size_t i) {
  auto& t = task(self, i);
  auto fresh = t.attempts > 0 && self->state.setup.cfg.fresh_worktree_on_retry;
  if (t.state == "pending")
    record(self, i, "ready", "", {}, nullptr);
  record(self, i, "running", "", {}, [=](uint64_t attempt) {
    auto& t = task(self, i);
    if (self->state.paused || self->state.aborted) {
      record(self, i, "interrupted", "the run paused before it started", {},
             nullptr);
      return;
    }
    try {
      auto h = self->state.setup.launch(t, attempt, fresh,
                                        caf::actor_cast<caf::actor>(self));
      self->monitor(h.actor);
      self->state.running.emplace(i, std::move(h));
    } catch (const std::exception& e) {
      // Count it as running so on_outcome takes the word.
      self->state.running.emplace(i, worker_handle{caf::actor{}, [] {}});
      attempt_outcome o;
      o.task_id = t.id;
      o.attempt = attempt;
      o.end = run::attempt_end::failed;
      o.reason = std::string{"cannot start the worker: "} + e.what();
      on_outcome(self, o);
    }
  });
}

void schedule(self_ptr self) {
  auto& st = self->state;
  if (!st.started || st.paused || st.aborted || st.finished) {
    maybe_finish(self);
    return;
  }
  auto& tasks = st.setup.tasks;
  auto& cfg = st.setup.cfg;
  // In place (assist, useWorktrees: false) tasks share one checkout: what
  // changed there is attributed to the one attempt running.
  size_t limit = cfg.mode == "assist" || !cfg.use_worktrees
                   ? 1
                   : std::max<uint64_t>(1, cfg.max_concurrency);
  size_t active = 0;
  for (auto& t : tasks)
    if (t.state == "running" || t.state == "verifying")
      ++active;
  std::vector<size_t> ready;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto& t = tasks[i];
    if (!schedulable(t.state))
      continue;
    bool deps_done = std::all_of(t.deps.begin(), t.deps.end(), [&](size_t d) {
      return tasks[d].state == "done";
    });
    if (deps_done)
      ready.push_back(i);
  }
  std::stable_sort(ready.begin(), ready.end(), [&](size_t a, size_t b) {
    if (tasks[a].priority != tasks[b].priority)
      return tasks[a].priority > tasks[b].priority;
    return a < b;
  });
  auto taken = [&](size_t j) { return occupying(tasks[j].state); };
  for (auto i : ready) {
    if (active >= limit)
      break;
    auto& t = tasks[i];
    if (std::any_of(t.conflicts.begin(), t.conflicts.end(), taken))
      continue;
    if (t.held) {
      auto why = t.id + " held: " + t.hold_reason;
      record(self, i, "held", t.hold_reason, {}, [=](uint64_t) {
        pause_run(self, why, false);
      });
      return;
    }
    launch(self, i); // its state reads "running" from here on
    ++active;
  }
  maybe_finish(self);
}

void maybe_finish(self_ptr self) {
  auto& st = self->state;
  if (st.finished || !st.running.empty() || st.outstanding > 0 || !st.started)
    return;
  auto& tasks = st.setup.tasks;
  if (st.aborted) {
    st.finished = true; // no second record while this one is in flight
    record_run(self, "aborted", st.reason, [=] {
      self->state.finished = false;
      notify_finished(self, "aborted");
    });
    return;
  }
  if (st.paused) {
    notify_finished(self, "paused");
    return;
  }
  std::vector<std::string> waiting, failed;
  for (auto& t : tasks) {
    if (t.state == "failed")
      failed.push_back(t.id);
    else if (!is_final_task_state(t.state))
      waiting.push_back(t.id);
  }
  if (waiting.empty()) {
    st.reason = failed.empty() ? "" : "failed: " + join(failed);
    st.finished = true;
    record_run(self, "completed", st.reason, [=] {
      self->state.finished = false;
      notify_finished(self, "completed");
    });
    return;
  }
  // Nothing runs and nothing can start: the rest waits on a task that
  // needs a person (review, blocked, conflict, held).
  pause_run(self, "waiting on tasks that need attention: " + join(waiting),
            false);
}

void pause_run(self_ptr self, const std::string& why, bool interrupt) {
  auto& st = self->state;
  if (interrupt)
    for (auto& [i, h] : st.running)
      h.cancel();
  if (st.paused || st.aborted || st.finished) {
    maybe_finish(self);
    return;
  }
  st.paused = true;
  st.reason = why;
  if (!st.started) {
    maybe_finish(self);
    return;
  }
  ++st.outstanding; // finishing waits until the pause is durable
  record_run(self, "paused", why, [=] {
    --self->state.outstanding;
    maybe_finish(self);
  });
}

} // namespace

orchestrator_actor::behavior_type
orchestrator(orchestrator_actor::stateful_pointer<orchestrator_state> self,
             orchestrator_setup setup) {
  self->state.setup = std::move(setup);
  self->set_down_handler([self](caf::down_msg& msg) {
    for (auto& [i, h] : self->state.running) {
      if (h.actor.address() != msg.source)
        continue;
      // The worker died without a word: its attempt failed.
      attempt_outcome o;
      o.task_id = task(self, i).id;
      o.attempt = task(self, i).attempt_no;
      o.end = self->state.paused || self->state.aborted
                ? run::attempt_end::interrupted
                : run::attempt_end::failed;
      o.reason = "the worker stopped: " + self->system().render(msg.reason);
      on_outcome(self, o);
      return;
    }
  });
  return {
    [self](start_atom) {
      auto& st = self->state;
      if (st.started)
        return;
      record_run(self, "running", "", [self] {
        self->state.started = true;
        auto& tasks = self->state.setup.tasks;
        // Work finished before a stop but not yet merged: merge it now
        // (the git service sees what already went in).
        for (size_t i = 0; i < tasks.size(); ++i)
          if (tasks[i].state == "merging")
            merge_task(self, i);
        schedule(self);
        self->delayed_send(self, std::chrono::milliseconds(500),
                           caf::tick_atom::value);
      });
    },
    [self](pause_atom, std::string why, bool interrupt) {
      pause_run(self, why, interrupt);
    },
    [self](abort_atom, std::string why) {
      auto& st = self->state;
      if (st.aborted || st.finished)
        return;
      st.aborted = true;
      st.reason = why;
      for (auto& [i, h] : st.running)
        h.cancel();
      maybe_finish(self);
    },
    [self](outcome_atom, attempt_outcome& o) { on_outcome(self, o); },
    [self](progress_atom, attempt_progress& p) {
      auto i = index_of(self, p.task_id);
      if (i >= self->state.setup.tasks.size()
          || p.attempt != task(self, i).attempt_no
          || self->state.running.count(i) == 0)
        return;
      auto& t = task(self, i);
      task_facts detail;
      if (!p.worktree.empty()) {
        t.worktree = p.worktree;
        t.branch = p.branch;
        detail.worktree = p.worktree;
        detail.branch = p.branch;
      }
      if (p.phase == attempt_phase::leased && detail.worktree) {
        // Fields only: the ledger knows the worktree before anything is
        // written into it.
        task_update up{self->state.setup.run_id, t.id, detail};
        self
          ->request(self->state.setup.ledger, caf::infinite, record_atom::value,
                    std::move(up))
          .then([](bool) {},
                [self](caf::error& err) {
                  ledger_failed(self, err);
                });
      } else if (p.phase == attempt_phase::verifying && t.state == "running")
        record(self, i, "verifying", p.detail, detail, nullptr);
      else if (p.phase == attempt_phase::repairing && t.state == "verifying")
        record(self, i, "running", p.detail, detail, nullptr);
    },
    [self](caf::tick_atom) {
      // Another process (taskforce abort/pause) may have changed the run.
      auto& st = self->state;
      if (st.finished)
        return;
      self->request(st.setup.ledger, caf::infinite, caf::get_atom::value,
                    st.setup.run_id)
        .then(
          [self](run_transition& r) {
            auto& st = self->state;
            if (r.to == run_state::aborted && !st.aborted)
              self->send(self, abort_atom::value,
                         r.reason.empty() ? std::string{"aborted"} : r.reason);
            else if (r.to == run_state::paused && !st.paused)
              pause_run(self, r.reason.empty() ? "paused" : r.reason, true);
          },
          [](caf::error&) {});
      if (!st.finished)
        self->delayed_send(self, std::chrono::milliseconds(500),
                           caf::tick_atom::value);
    },
  };
}

orchestrator_actor spawn_orchestrator(caf::actor_system& sys,
                                      orchestrator_setup setup) {
  return sys.spawn(orchestrator, std::move(setup));
}

} // namespace taskforce
