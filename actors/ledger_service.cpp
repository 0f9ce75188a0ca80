#include "actors/ledger_service.hpp"

#include <optional>
#include <variant>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

namespace taskforce {

namespace {

using json = nlohmann::json;

// Detail keys of a task_transition (see messages/run.hpp) -> task columns.
store::task_fields fields_of(const json& d) {
  store::task_fields f;
  auto str = [&](const char* key, std::optional<std::string>& out) {
    if (d.contains(key) && d[key].is_string())
      out = d[key].get<std::string>();
  };
  str("branch", f.branch);
  str("worktree", f.worktree);
  str("merge_commit", f.merge_commit);
  str("tail", f.gate_tail);
  if (d.contains("paths") && d["paths"].is_array())
    f.conflict_paths = d["paths"].get<std::vector<std::string>>();
  return f;
}

} // namespace

namespace {

store::task_change change_of(const task_transition& tr, json& d) {
  store::task_change change;
  if (!from_string(tr.state, change.to))
    throw store::ledger_error(store::ledger_errc::invalid_transition,
                              "unknown task state " + tr.state);
  if (!tr.reason.empty())
    change.reason = tr.reason;
  change.fields = fields_of(d);
  if (d.contains("usage") && d["usage"].is_object()) {
    auto& u = d["usage"];
    store::usage use;
    use.input_tokens = u.value("input_tokens", int64_t{0});
    use.output_tokens = u.value("output_tokens", int64_t{0});
    use.cost_usd = u.value("cost_usd", 0.0);
    if (use.input_tokens != 0 || use.output_tokens != 0 || use.cost_usd != 0)
      change.usage = use;
  }
  if (d.contains("exit_code") && d["exit_code"].is_number_integer()
      && d["exit_code"].get<int64_t>() >= 0)
    change.exit_code = d["exit_code"].get<int>();
  // The event keeps the small facts; the tail lives in the task row.
  d.erase("tail");
  change.data_json = d.dump();
  return change;
}

json detail_of(const task_transition& tr) {
  auto d = json::parse(tr.detail.empty() ? "{}" : tr.detail, nullptr, false);
  return d.is_object() ? d : json::object();
}

} // namespace

std::vector<uint64_t> apply_batch(store::ledger& db,
                                  const std::vector<task_transition>& trs) {
  std::vector<store::task_change_request> reqs;
  for (auto& tr : trs) {
    auto d = detail_of(tr);
    reqs.push_back({tr.run_id, tr.task_id, change_of(tr, d)});
  }
  auto outcomes = db.transition_batch(reqs, store::wall_clock_ms());
  std::vector<uint64_t> attempts;
  std::string refused;
  for (size_t k = 0; k < outcomes.size(); ++k) {
    if (auto* r = std::get_if<store::transition_result>(&outcomes[k])) {
      attempts.push_back(static_cast<uint64_t>(r->attempt));
    } else {
      attempts.push_back(0);
      if (refused.empty())
        refused = "task " + trs[k].task_id + " -> " + trs[k].state + ": "
                  + std::get<store::ledger_error>(outcomes[k]).what();
    }
  }
  if (!refused.empty())
    throw store::ledger_error(store::ledger_errc::invalid_transition, refused);
  return attempts;
}

uint64_t apply_transition(store::ledger& db, const task_transition& tr) {
  auto now = store::wall_clock_ms();
  auto d = detail_of(tr);
  if (tr.state.empty()) {
    db.update_task(tr.run_id, tr.task_id, fields_of(d), now);
    return tr.attempt;
  }
  auto change = change_of(tr, d);
  auto r = db.transition(tr.run_id, tr.task_id, change, now);
  return static_cast<uint64_t>(r.attempt);
}

namespace {

struct ledger_state {
  static inline const char* name = "ledger_service";
  /// The connection (set at spawn).
  std::optional<store::ledger> db;
};

caf::error fail(const std::string& what) {
  return caf::make_error(caf::sec::runtime_error, what);
}

ledger_actor::behavior_type
ledger_service(ledger_actor::stateful_pointer<ledger_state> self,
               std::shared_ptr<store::ledger> db) {
  self->state.db.emplace(std::move(*db));
  return {
    [self](record_atom, task_transition& tr) -> caf::result<uint64_t> {
      try {
        return apply_transition(*self->state.db, tr);
      } catch (const std::exception& e) {
        return fail("task " + tr.task_id + " -> " + tr.state + ": " + e.what());
      }
    },
    [self](record_atom,
           transition_batch& batch) -> caf::result<batch_acks> {
      try {
        return batch_acks{apply_batch(*self->state.db, batch.changes)};
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
    [self](record_atom, run_transition& tr) -> caf::result<bool> {
      try {
        run_state to;
        if (!from_string(tr.state, to))
          return fail("unknown run state " + tr.state);
        std::optional<std::string> reason;
        if (!tr.reason.empty())
          reason = tr.reason;
        self->state.db->set_run_state(tr.run_id, to, reason,
                                      store::wall_clock_ms());
        return true;
      } catch (const std::exception& e) {
        return fail("run " + tr.run_id + " -> " + tr.state + ": " + e.what());
      }
    },
    [self](caf::get_atom, std::string& run_id) -> caf::result<run_transition> {
      try {
        auto row = self->state.db->find_run(run_id);
        if (!row)
          return fail("no run " + run_id);
        return run_transition{row->id, to_string(row->state),
                              row->reason.value_or("")};
      } catch (const std::exception& e) {
        return fail(e.what());
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
