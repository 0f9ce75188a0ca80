// Fakes of a run's actors for the orchestrator's tests: a ledger that
// refuses what the task lifecycle refuses (and what it does not have where
// the orchestrator believes), and can be told to fail; a git service whose
// answers the test chooses; a watcher and workers that record what they
// were told. Their state lives in plain structs the test reads and changes.
// Include it after caf/test/dsl.hpp.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "actors/orchestrator.hpp"
#include "messages/interfaces.hpp"

namespace taskforce::test {

/// The actor system config of the run's tests.
struct run_test_config : caf::actor_system_config {
  run_test_config() {
    add_message_types<caf::id_block::taskforce>();
    add_message_types<caf::id_block::taskforce_run>();
    add_error_category(
      caf::atom(run_errc_category),
      [](uint8_t code, caf::atom_value, const caf::message& ctx) {
        std::string out = to_string(static_cast<run_errc>(code));
        if (ctx.match_elements<std::string>())
          out += ": " + ctx.get_as<std::string>(0);
        return out;
      });
  }
};

/// One task as the fake ledger has it.
struct book_task {
  task_state state = task_state::pending;
  uint64_t attempt = 0;
  std::string reason;
  /// Every fact recorded with its changes, the latest of each kind.
  task_facts facts;
  /// The state the task last entered merging from.
  std::optional<task_state> merging_from;
};

/// The fake ledger's durable state, and its faults.
struct ledger_book {
  std::string run_id = "r1";
  run_state run = run_state::running;
  std::string run_reason;
  std::map<std::string, book_task> tasks;
  /// Every batch received, in order.
  std::vector<transition_batch> batches;
  /// Every run change recorded.
  std::vector<run_transition> run_changes;
  /// Tasks added (ids), in order.
  std::vector<std::string> added;
  /// The next this many batches fail as a whole (nothing written).
  int fail_batches = 0;
  /// The next this many run changes fail.
  int fail_runs = 0;
  /// When set, sees every change the ledger is about to write (a
  /// simulation checks its rules there).
  std::function<void(const task_transition&)> on_write;
  /// Tasks whose start another holder's reservation holds up (a managed
  /// task's), with the reason the ledger gives: their start is refused as
  /// a wait and the reason recorded.
  std::map<std::string, std::string> reserved;

  void add_task(const std::string& id, task_state st = task_state::pending) {
    tasks[id].state = st;
  }

  /// Applies one change as the real ledger does: refused unless the task
  /// is in `from` and the lifecycle allows the event.
  transition_ack apply(const task_transition& tr) {
    transition_ack ack;
    auto it = tasks.find(tr.task_id);
    if (it == tasks.end()) {
      ack.refusal = "no task " + tr.task_id;
      return ack;
    }
    auto& t = it->second;
    auto to = transition(t.state, tr.event);
    if (t.state != tr.from || !to || *to != tr.to) {
      ack.actual = t.state;
      ack.refusal = "task " + tr.task_id + " is "
                    + std::string{to_string(t.state)} + ", not "
                    + to_string(tr.from);
      return ack;
    }
    if (auto r = reserved.find(tr.task_id); r != reserved.end()
                                            && tr.to == task_state::running
                                            && !in_attempt(tr.from)) {
      ack.actual = t.state;
      ack.refusal = r->second;
      ack.waits = true;
      t.reason = r->second;
      return ack;
    }
    if (on_write)
      on_write(tr);
    if (in_attempt(tr.to) && !in_attempt(tr.from))
      ++t.attempt;
    if (tr.to == task_state::merging)
      t.merging_from = tr.from;
    t.state = tr.to;
    t.reason = tr.reason;
    auto keep = [](const auto& from, auto& into) {
      if (from)
        into = from;
    };
    keep(tr.facts.branch, t.facts.branch);
    keep(tr.facts.worktree, t.facts.worktree);
    keep(tr.facts.merge_commit, t.facts.merge_commit);
    keep(tr.facts.gate_tail, t.facts.gate_tail);
    keep(tr.facts.session, t.facts.session);
    keep(tr.facts.conflict_paths, t.facts.conflict_paths);
    keep(tr.facts.exit_code, t.facts.exit_code);
    t.facts.spent.insert(t.facts.spent.end(), tr.facts.spent.begin(),
                         tr.facts.spent.end());
    t.facts.hold_lifted = t.facts.hold_lifted || tr.facts.hold_lifted;
    ack.durable = true;
    ack.attempt = t.attempt;
    return ack;
  }

  /// What a driver's recovery does after a crash: open attempts end
  /// interrupted, a running run is paused.
  void mark_interrupted() {
    for (auto& [id, t] : tasks)
      if (in_attempt(t.state))
        t.state = task_state::interrupted;
    if (run == run_state::running) {
      run = run_state::paused;
      run_reason = "the process driving the run stopped";
    }
  }
};

inline ledger_actor::behavior_type
fake_ledger(std::shared_ptr<ledger_book> book) {
  return {
    [book](record_atom, transition_batch& b) -> caf::result<batch_acks> {
      book->batches.push_back(b);
      if (book->fail_batches > 0) {
        --book->fail_batches;
        return caf::make_error(run_errc::ledger_io,
                               std::string{"disk I/O error"});
      }
      batch_acks acks;
      for (auto& tr : b.changes)
        acks.acks.push_back(book->apply(tr));
      return acks;
    },
    [book](record_atom, task_update& up) -> caf::result<bool> {
      auto it = book->tasks.find(up.task_id);
      if (it == book->tasks.end())
        return caf::make_error(run_errc::unknown_task, "no task " + up.task_id);
      if (up.facts.worktree)
        it->second.facts.worktree = up.facts.worktree;
      if (up.facts.branch)
        it->second.facts.branch = up.facts.branch;
      return true;
    },
    [book](record_atom, run_transition& tr) -> caf::result<bool> {
      if (book->fail_runs > 0) {
        --book->fail_runs;
        return caf::make_error(run_errc::ledger_io,
                               std::string{"disk I/O error"});
      }
      if (tr.to != book->run && !allowed(book->run, tr.to))
        return caf::make_error(run_errc::refused_transition,
                               "run cannot go from "
                                 + std::string{to_string(book->run)} + " to "
                                 + to_string(tr.to));
      book->run = tr.to;
      book->run_reason = tr.reason;
      book->run_changes.push_back(tr);
      return true;
    },
    [book](add_atom, std::string&, task_additions& more) -> caf::result<bool> {
      for (auto& t : more.tasks) {
        book->add_task(t.id, t.done ? task_state::done : task_state::pending);
        book->added.push_back(t.id);
      }
      return true;
    },
    [book](caf::get_atom, std::string& run) -> caf::result<run_transition> {
      return run_transition{run, book->run, book->run_reason};
    },
  };
}

/// The fake git service's answers and what it was asked.
struct git_book {
  /// Per task: how its merge ends (default: merged as `m-<task>`).
  std::map<std::string, merge_outcome> merge_answers;
  /// Per task: what a check for a hand merge finds (default: not merged).
  std::map<std::string, merge_outcome> check_answers;
  /// Tasks merged (asked to merge), in order.
  std::vector<std::string> merges;
  /// Tasks checked, in order.
  std::vector<std::string> checks;
  /// When set, answers every merge request instead of the table above
  /// (a simulation checks its rules there).
  std::function<caf::result<merge_outcome>(const merge_request&)> on_merge;
  /// When set, answers every check instead of the table above.
  std::function<merge_outcome(const merge_request&)> on_check;
};

inline git_actor::behavior_type fake_git(std::shared_ptr<git_book> book) {
  return {
    [](lease_atom, worktree_request&) {
      return worktree_lease{};
    },
    [](snapshot_atom, scope_request&) {
      return std::string{};
    },
    [](release_atom, scope_request&) {
      // The attempt in place is over.
    },
    [](changed_atom, scope_request&) {
      return scope_report{};
    },
    [book](merge_atom, merge_request& r) -> caf::result<merge_outcome> {
      book->merges.push_back(r.task_id);
      if (book->on_merge)
        return book->on_merge(r);
      auto it = book->merge_answers.find(r.task_id);
      if (it != book->merge_answers.end())
        return it->second;
      return merge_outcome{
        run::merge_end::merged, "m-" + r.task_id, {}, "", ""};
    },
    [book](check_atom, merge_request& r) {
      book->checks.push_back(r.task_id);
      if (book->on_check)
        return book->on_check(r);
      auto it = book->check_answers.find(r.task_id);
      if (it != book->check_answers.end())
        return it->second;
      return merge_outcome{run::merge_end::not_merged, "", {}, "", ""};
    },
    [](review_atom, scope_request&, std::vector<std::string>&) {
      return caf::result<std::string, std::string>{std::string{},
                                                   std::string{}};
    },
    [](reviewed_atom, scope_request&, std::string&) {
      return std::vector<std::string>{};
    },
    [](discard_atom, std::string&, std::string&) {
      return true;
    },
    [](finished_atom) {
      return true;
    },
  };
}

/// One attempt the orchestrator launched.
struct launched_attempt {
  run_task task;
  uint64_t attempt = 0;
  bool fresh = false;
  caf::actor worker;
};

/// What the watcher and the workers were told.
struct run_record {
  std::vector<launched_attempt> launched;
  /// Tasks whose worker received cancel_atom.
  std::vector<std::string> cancelled;
  /// Tasks whose worker on standby was let go (start_atom), and the
  /// workers.
  std::vector<std::string> went;
  std::vector<caf::actor_addr> went_workers;
  std::vector<run_event> events;
  /// (state, reason) of each finished_atom.
  std::vector<std::pair<run_state, std::string>> finished;
  /// Launches refused by throwing (the next this many).
  int launch_failures = 0;

  std::vector<std::string> launched_ids() const {
    std::vector<std::string> ids;
    for (auto& l : launched)
      ids.push_back(l.task.id);
    return ids;
  }
};

inline caf::behavior fake_watcher(std::shared_ptr<run_record> rec) {
  return {
    [rec](run_event& ev) {
      rec->events.push_back(ev);
    },
    [rec](finished_atom, run_state st, std::string& why) {
      rec->finished.emplace_back(st, why);
    },
  };
}

/// A worker played by the test: it only notes a cancel (the test sends the
/// outcome, as the real worker would once its process is gone).
inline caf::behavior fake_worker(caf::event_based_actor* self,
                                 std::shared_ptr<run_record> rec,
                                 std::string task) {
  return {
    [rec, task](cancel_atom) {
      rec->cancelled.push_back(task);
    },
    [self, rec, task](start_atom) {
      rec->went.push_back(task);
      rec->went_workers.push_back(self->address());
    },
  };
}

/// A task spec for tests.
inline task_spec spec(std::string id, std::vector<std::string> files,
                      std::vector<std::string> deps = {},
                      int64_t priority = 0) {
  task_spec t;
  t.id = std::move(id);
  t.title = "task " + t.id;
  t.files = std::move(files);
  t.deps = std::move(deps);
  t.priority = priority;
  return t;
}

/// The graph of `specs` (indices set in order).
inline plan::task_graph graph_of(std::vector<task_spec> specs) {
  for (size_t i = 0; i < specs.size(); ++i)
    specs[i].index = i + 1;
  return plan::task_graph{std::move(specs)};
}

/// "id:from>to" for each change of a batch.
inline std::string show(const transition_batch& b) {
  std::string out;
  for (auto& c : b.changes) {
    if (!out.empty())
      out += ' ';
    out += c.task_id + ":" + to_string(c.from) + ">" + to_string(c.to);
  }
  return out;
}

} // namespace taskforce::test
