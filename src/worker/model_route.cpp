#include "src/worker/model_route.hpp"

#include <algorithm>

#include "src/worker/backend.hpp"

namespace taskforce {

std::string route_model(const std::string& task_model,
                        const std::string& task_agent, const run_config& cfg,
                        uint64_t failed_attempts) {
  auto choice = choose_backend(task_agent, cfg.worker, cfg.agent_preset);
  if (choice.backend != worker_backend::agent)
    return {};
  auto& fallbacks = cfg.fallback_models;
  if (failed_attempts > 0 && !fallbacks.empty()) {
    auto k = std::min<uint64_t>(failed_attempts, fallbacks.size());
    return fallbacks[k - 1];
  }
  if (!task_model.empty())
    return task_model;
  if (!task_agent.empty())
    if (auto it = cfg.role_models.find(task_agent); it != cfg.role_models.end())
      return it->second;
  return cfg.worker_model;
}

std::string verifier_preset_name(const run_config& cfg) {
  return cfg.verifier_preset.empty() ? cfg.agent_preset : cfg.verifier_preset;
}

std::string verifier_model(const run_config& cfg) {
  if (auto it = cfg.role_models.find(verifier_preset_name(cfg));
      it != cfg.role_models.end())
    return it->second;
  return cfg.worker_model;
}

} // namespace taskforce
