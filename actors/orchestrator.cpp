#include "actors/orchestrator.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace taskforce {

bool is_final_task_state(const std::string& state) {
  return state == "done" || state == "skipped" || state == "failed";
}

namespace {

using json = nlohmann::json;

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
  /// Tasks with a transition written but not yet acknowledged, or a merge
  /// in flight: the scheduler leaves them alone and counts their scope.
  std::set<size_t> busy;
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
  ev.state = state;
  ev.reason = why;
  if (self->state.setup.watcher)
    self->send(self->state.setup.watcher, std::move(ev));
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

/// Writes a task transition; applies it in memory and runs `then` only once
/// the ledger committed it.
void record(self_ptr self, size_t i, std::string state, std::string why,
            json detail, std::function<void()> then) {
  auto& t = task(self, i);
  task_transition tr{self->state.setup.run_id, t.id, state, t.attempt_no, why,
                     detail.is_null() ? "{}" : detail.dump()};
  self->state.busy.insert(i);
  self
    ->request(self->state.setup.ledger, caf::infinite, record_atom::value,
              std::move(tr))
    .then(
      [=](bool) {
        self->state.busy.erase(i);
        auto& t = task(self, i);
        t.state = state;
        t.reason = why;
        emit(self, &t, state, why);
        if (then)
          then();
      },
      [=](caf::error& err) {
        self->state.busy.erase(i);
        ledger_failed(self, err);
      });
}

void record_run(self_ptr self, std::string state, std::string why,
                std::function<void()> then) {
  run_transition tr{self->state.setup.run_id, state, why};
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
  if (self->state.setup.watcher)
    self->send(self->state.setup.watcher, finished_atom::value, state,
               self->state.reason);
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
      if (schedulable(tasks[j].state) || tasks[j].state == "held")
        record(self, j, "skipped", "dependency " + tasks[cur].id + " "
                                     + tasks[cur].state,
               nullptr, [=] { schedule(self); });
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
  self->state.busy.insert(i);
  self->request(self->state.setup.git, caf::infinite, merge_atom::value, req)
    .then(
      [=](merge_outcome& m) {
        self->state.busy.erase(i);
        auto& t = task(self, i);
        json detail{{"merge_status", to_string(m.status)},
                    {"paths", m.paths},
                    {"branch", t.branch},
                    {"worktree", t.worktree}};
        switch (m.status) {
          case merge_status::merged:
          case merge_status::already_merged:
          case merge_status::empty: {
            t.merge_commit = m.merge_commit;
            detail["merge_commit"] = m.merge_commit.empty()
                                       ? json()
                                       : json(m.merge_commit);
            std::string why = m.status == merge_status::empty
                                ? "no changes"
                                : "";
            record(self, i, "done", why, detail, [=] { schedule(self); });
            break;
          }
          case merge_status::conflict: {
            auto why = "merge conflict in " + join(m.paths)
                       + " (branch " + t.branch + " kept)";
            record(self, i, "conflict", why, detail, [=] {
              pause_run(self, task(self, i).id + ": " + why, false);
            });
            break;
          }
          case merge_status::dirty: {
            auto why = "main checkout has uncommitted changes: "
                       + join(m.paths);
            record(self, i, "merging", why, detail,
                   [=] { pause_run(self, task(self, i).id + ": " + why, false); });
            break;
          }
          case merge_status::error:
            record(self, i, "merging", m.message, detail, [=] {
              pause_run(self, task(self, i).id + ": " + m.message, false);
            });
            break;
        }
      },
      [=](caf::error& err) {
        self->state.busy.erase(i);
        pause_run(self,
                  task(self, i).id + ": merge: " + self->system().render(err),
                  false);
      });
}

/// Finished work: integrate it, keep it for review, or leave it in place.
void integrate(self_ptr self, size_t i) {
  auto& cfg = self->state.setup.cfg;
  if (cfg.mode == "assist") {
    record(self, i, "done", "changes left uncommitted in the main checkout",
           nullptr, [=] { schedule(self); });
    return;
  }
  if (!cfg.auto_merge && cfg.use_worktrees) {
    record(self, i, "review",
           "kept for review in " + task(self, i).worktree,
           json{{"worktree", task(self, i).worktree},
                {"branch", task(self, i).branch}},
           [=] { schedule(self); });
    return;
  }
  record(self, i, "merging", "", nullptr, [=] { merge_task(self, i); });
}

void on_outcome(self_ptr self, attempt_outcome& o) {
  auto i = index_of(self, o.task_id);
  if (i >= self->state.setup.tasks.size())
    return;
  auto& t = task(self, i);
  if (o.attempt != t.attempt_no)
    return; // a late word from an attempt already given up
  self->state.running.erase(i);
  if (!o.worktree.empty())
    t.worktree = o.worktree;
  if (!o.branch.empty())
    t.branch = o.branch;
  json detail{{"worktree", t.worktree},
              {"branch", t.branch},
              {"repairs", o.repairs},
              {"tail", o.tail},
              {"usage",
               {{"input_tokens", o.input_tokens},
                {"output_tokens", o.output_tokens},
                {"cost_usd", o.cost_usd}}}};
  auto& cfg = self->state.setup.cfg;
  switch (o.status) {
    case attempt_status::interrupted:
      record(self, i, "interrupted", o.reason, detail,
             [=] { schedule(self); });
      return;
    case attempt_status::done:
      ++t.attempts;
      integrate(self, i);
      return;
    case attempt_status::blocked: {
      ++t.attempts;
      auto why = "blocked: " + o.reason;
      record(self, i, "blocked", o.reason, detail,
             [=] { task_stopped(self, i, task(self, i).id + " " + why); });
      return;
    }
    case attempt_status::failed:
      ++t.attempts;
      if (t.attempts < cfg.max_attempts && !self->state.paused
          && !self->state.aborted) {
        record(self, i, "pending",
               "attempt " + std::to_string(o.attempt) + " failed: " + o.reason,
               detail, [=] { schedule(self); });
      } else {
        record(self, i, "failed", o.reason, detail, [=] {
          task_stopped(self, i, task(self, i).id + " failed: " + o.reason);
        });
      }
      return;
  }
}

void launch(self_ptr self, size_t i) {
  auto& t = task(self, i);
  auto fresh = t.attempts > 0 && self->state.setup.cfg.fresh_worktree_on_retry;
  ++t.attempt_no;
  auto attempt = t.attempt_no;
  record(self, i, "running", "", nullptr, [=] {
    auto& t = task(self, i);
    if (self->state.paused || self->state.aborted) {
      record(self, i, "interrupted", "the run paused before it started",
             nullptr, [=] { maybe_finish(self); });
      return;
    }
    try {
      auto h = self->state.setup.launch(t, attempt, fresh,
                                        caf::actor_cast<caf::actor>(self));
      self->monitor(h.actor);
      self->state.running.emplace(i, std::move(h));
    } catch (const std::exception& e) {
      attempt_outcome o;
      o.task_id = t.id;
      o.attempt = attempt;
      o.status = attempt_status::failed;
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
  size_t limit = cfg.mode == "assist" ? 1 : std::max<uint64_t>(1, cfg.max_concurrency);
  // Workers alive plus launches awaiting their ledger ack.
  size_t active = 0;
  for (size_t i = 0; i < tasks.size(); ++i)
    if (tasks[i].state == "running" || tasks[i].state == "verifying"
        || (st.busy.count(i) > 0 && schedulable(tasks[i].state)))
      ++active;
  std::vector<size_t> ready;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto& t = tasks[i];
    if (!schedulable(t.state) || st.busy.count(i) > 0)
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
  auto taken = [&](size_t i) {
    return occupying(tasks[i].state) || st.busy.count(i) > 0;
  };
  for (auto i : ready) {
    if (active >= limit)
      break;
    auto& t = tasks[i];
    bool clash = std::any_of(t.conflicts.begin(), t.conflicts.end(), taken);
    if (clash)
      continue;
    if (t.held) {
      record(self, i, "held", t.hold_reason, nullptr, [=] {
        pause_run(self, task(self, i).id + " held: " + task(self, i).hold_reason,
                  false);
      });
      return;
    }
    launch(self, i); // marks i busy at once
    ++active;
  }
  maybe_finish(self);
}

void maybe_finish(self_ptr self) {
  auto& st = self->state;
  if (st.finished || !st.running.empty() || !st.busy.empty() || !st.started)
    return;
  auto& tasks = st.setup.tasks;
  if (st.aborted) {
    st.finished = true; // no second abort record
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
  st.busy.insert(SIZE_MAX); // hold finishing until the pause is durable
  record_run(self, "paused", why, [=] {
    self->state.busy.erase(SIZE_MAX);
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
      o.status = self->state.paused || self->state.aborted
                   ? attempt_status::interrupted
                   : attempt_status::failed;
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
      auto state = p.phase == "verifying" ? "verifying" : "running";
      record(self, i, state, p.detail, nullptr, nullptr);
    },
  };
}

orchestrator_actor spawn_orchestrator(caf::actor_system& sys,
                                      orchestrator_setup setup) {
  return sys.spawn(orchestrator, std::move(setup));
}

} // namespace taskforce
