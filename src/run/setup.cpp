#include "src/run/setup.hpp"

#include <algorithm>

namespace taskforce::run {

rules rules_of(const run_config& cfg) {
  rules r;
  // In place, tasks share one checkout and run at once only with disjoint
  // scopes (the graph's conflicts; a task without files runs alone): the
  // git service gives each change to the attempt whose scope holds it.
  r.max_concurrency = std::max<uint64_t>(1, cfg.max_concurrency);
  r.max_attempts = std::max<uint64_t>(1, cfg.max_attempts);
  r.continue_on_error = cfg.continue_on_error;
  r.ask_user_on_blocked = cfg.ask_user_on_blocked;
  r.repair_on_failure = cfg.repair_on_failure;
  r.max_repairs = cfg.max_repairs;
  if (cfg.mode == "assist")
    r.finish = integration::leave;
  else if (!cfg.auto_merge && cfg.use_worktrees)
    r.finish = integration::review;
  else
    r.finish = integration::merge;
  return r;
}

std::vector<task_record> records_of(const plan::task_graph& graph,
                                    const std::vector<task_state>& states,
                                    const std::vector<std::string>& reasons,
                                    const std::vector<bool>& hold_lifted) {
  std::vector<task_record> out(graph.size());
  for (size_t i = 0; i < graph.size(); ++i) {
    auto& spec = graph.task(i);
    auto& r = out[i];
    if (i < states.size())
      r.state = states[i];
    if (i < reasons.size())
      r.reason = reasons[i];
    bool lifted = i < hold_lifted.size() && hold_lifted[i];
    r.hold = spec.held && !lifted;
    r.hold_reason = spec.hold_reason.value_or("");
    r.needs_approval = spec.needs_approval;
  }
  return out;
}

} // namespace taskforce::run
