// Model routing: which model an agent attempt runs on.
//
// The chain, first non-empty wins: the task's `model:`, then
// `run.roleModels[<the task's agent:>]`, then `run.workerModel`, then
// nothing (the agent's own default: the preset's {model} group is left
// out). A retry after failed attempts walks `run.fallbackModels` instead:
// the k-th failure is followed by the k-th fallback, and past the end of
// the list the last one stays. Only the `agent` backend runs on a model;
// shell and scripted tasks have none.
#pragma once

#include <cstdint>
#include <string>

#include "src/config/config.hpp"

namespace taskforce {

/// The model of an attempt of a task with `task_model` (its `model:`) and
/// `task_agent` (its `agent:`), after `failed_attempts` failed attempts of
/// it in this run; "" = the agent's own default, or not an agent task.
/// Throws std::invalid_argument when `cfg.worker` is no backend name.
std::string route_model(const std::string& task_model,
                        const std::string& task_agent, const run_config& cfg,
                        uint64_t failed_attempts);

/// The verifier's model: `run.roleModels[<its preset>]`, then
/// `run.workerModel`, then "" (the agent's own default).
std::string verifier_model(const run_config& cfg);

/// The verifier's agent preset: `run.verifierPreset`, empty =
/// `run.agentPreset`.
std::string verifier_preset_name(const run_config& cfg);

} // namespace taskforce
