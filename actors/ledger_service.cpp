#include "actors/ledger_service.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <variant>

#include <caf/all.hpp>

#include "src/run/run_setup.hpp"

namespace taskforce {

store::task_fields to_store_fields(const task_facts& facts) {
  store::task_fields f;
  auto copy = [](const auto& from, auto& to) {
    if (from)
      to = *from;
  };
  copy(facts.branch, f.branch);
  copy(facts.worktree, f.worktree);
  copy(facts.merge_commit, f.merge_commit);
  copy(facts.gate_tail, f.gate_tail);
  copy(facts.conflict_paths, f.conflict_paths);
  copy(facts.session, f.session);
  if (facts.hold_lifted)
    f.hold_lifted = true;
  return f;
}

namespace {

int64_t to_int64(uint64_t x) {
  return static_cast<int64_t>(std::min<uint64_t>(x, INT64_MAX));
}

} // namespace

store::task_change to_store_change(const task_transition& tr) {
  store::task_change change;
  change.to = tr.to;
  change.expect = tr.from;
  if (!tr.reason.empty())
    change.reason = tr.reason;
  change.fields = to_store_fields(tr.facts);
  for (auto& t : tr.facts.spent)
    change.turns.push_back(store::turn_spend{
      static_cast<int>(std::min<uint64_t>(t.turn, INT32_MAX)), t.kind,
      store::usage{to_int64(t.usage.input_tokens),
                   to_int64(t.usage.output_tokens), t.usage.cost_usd}});
  if (tr.facts.model)
    change.attempt_model = *tr.facts.model;
  if (tr.facts.files)
    change.reserves = scope::task_claims(*tr.facts.files, tr.facts.locks);
  if (tr.facts.exit_code && *tr.facts.exit_code >= 0)
    change.exit_code = static_cast<int>(*tr.facts.exit_code);
  return change;
}

std::vector<transition_ack> apply_batch(store::ledger& db,
                                        const transition_batch& batch) {
  // Where the ledger has each task before the batch: a refused change is
  // answered with the state the ledger has at that point of the batch.
  std::map<std::string, std::optional<task_state>> where;
  std::vector<store::task_change_request> reqs;
  for (auto& tr : batch.changes) {
    if (where.count(tr.task_id) == 0)
      where[tr.task_id] = db.state_of(batch.run_id, tr.task_id);
    reqs.push_back({batch.run_id, tr.task_id, to_store_change(tr)});
  }
  auto outcomes = db.transition_batch(reqs, store::wall_clock_ms());
  std::vector<transition_ack> acks;
  for (size_t k = 0; k < outcomes.size(); ++k) {
    auto& tr = batch.changes[k];
    auto& now = where[tr.task_id];
    transition_ack ack;
    if (auto* r = std::get_if<store::transition_result>(&outcomes[k])) {
      ack.durable = true;
      ack.attempt = static_cast<uint64_t>(r->attempt);
      now = tr.to;
    } else {
      auto& e = std::get<store::ledger_error>(outcomes[k]);
      ack.refusal = e.what();
      ack.waits = e.code() == store::ledger_errc::reserved;
      if (now)
        ack.actual = *now;
    }
    acks.push_back(std::move(ack));
  }
  return acks;
}

namespace {

caf::error fail(const store::ledger_error& e) {
  switch (e.code()) {
    case store::ledger_errc::not_found:
      return caf::make_error(run_errc::unknown_run, std::string{e.what()});
    case store::ledger_errc::invalid_transition:
      return caf::make_error(run_errc::refused_transition,
                             std::string{e.what()});
    default: return caf::make_error(run_errc::ledger_io, std::string{e.what()});
  }
}

caf::error fail(const std::exception& e) {
  return caf::make_error(run_errc::ledger_io, std::string{e.what()});
}

struct ledger_state {
  static inline const char* name = "ledger_service";
  /// The connection (set at spawn).
  std::optional<store::ledger> db;
};

ledger_actor::behavior_type
ledger_service(ledger_actor::stateful_pointer<ledger_state> self,
               std::shared_ptr<store::ledger> db) {
  self->state.db.emplace(std::move(*db));
  return {
    [self](record_atom, transition_batch& batch) -> caf::result<batch_acks> {
      try {
        return batch_acks{apply_batch(*self->state.db, batch)};
      } catch (const store::ledger_error& e) {
        return fail(e);
      } catch (const std::exception& e) {
        return fail(e);
      }
    },
    [self](record_atom, task_update& up) -> caf::result<bool> {
      try {
        self->state.db->update_task(up.run_id, up.task_id,
                                    to_store_fields(up.facts),
                                    store::wall_clock_ms());
        return true;
      } catch (const store::ledger_error& e) {
        if (e.code() == store::ledger_errc::not_found)
          return caf::make_error(run_errc::unknown_task, std::string{e.what()});
        return fail(e);
      } catch (const std::exception& e) {
        return fail(e);
      }
    },
    [self](record_atom, run_transition& tr) -> caf::result<bool> {
      try {
        std::optional<std::string> reason;
        if (!tr.reason.empty())
          reason = tr.reason;
        self->state.db->set_run_state(tr.run_id, tr.to, reason,
                                      store::wall_clock_ms());
        return true;
      } catch (const store::ledger_error& e) {
        return fail(e);
      } catch (const std::exception& e) {
        return fail(e);
      }
    },
    [self](add_atom, std::string& run_id,
           task_additions& more) -> caf::result<bool> {
      try {
        store::added_tasks added;
        added.run_id = run_id;
        added.file = more.file;
        for (auto& s : more.tasks)
          added.tasks.push_back(run::new_task_of(s));
        self->state.db->add_tasks(added, store::wall_clock_ms());
        return true;
      } catch (const store::ledger_error& e) {
        if (e.code() == store::ledger_errc::duplicate)
          return caf::make_error(run_errc::duplicate_task,
                                 std::string{e.what()});
        return fail(e);
      } catch (const std::exception& e) {
        return fail(e);
      }
    },
    [self](caf::get_atom, std::string& run_id) -> caf::result<run_transition> {
      try {
        auto row = self->state.db->find_run(run_id);
        if (!row)
          return caf::make_error(run_errc::unknown_run, "no run " + run_id);
        return run_transition{row->id, row->state, row->reason.value_or("")};
      } catch (const store::ledger_error& e) {
        return fail(e);
      } catch (const std::exception& e) {
        return fail(e);
      }
    },
  };
}

} // namespace

ledger_actor spawn_ledger_service(caf::actor_system& sys, store::ledger db) {
  // Moved through a shared_ptr: spawn arguments must be copyable.
  auto holder = std::make_shared<store::ledger>(std::move(db));
  return sys.spawn<caf::detached>(ledger_service, holder);
}

} // namespace taskforce
