#include "src/worker/backend.hpp"

#include <stdexcept>

#include "src/worker/prompt.hpp"
#include "src/worker/script.hpp"

namespace taskforce {

backend_choice choose_backend(const std::string& task_agent,
                              const std::string& run_worker,
                              const std::string& run_agent_preset) {
  auto run_backend = parse_worker_backend(run_worker);
  if (!run_backend)
    throw std::invalid_argument("run.worker: \"" + run_worker
                                + "\" is not shell, agent or scripted");
  if (task_agent.empty())
    return {*run_backend, run_agent_preset};
  if (auto named = parse_worker_backend(task_agent))
    return {*named, run_agent_preset};
  return {worker_backend::agent, task_agent};
}

std::vector<std::string> shell_argv(const std::string& command) {
  return {"sh", "-c", command};
}

worker_command prepare_worker_command(worker_backend backend,
                                      const worker_settings& settings,
                                      const worker_task& task,
                                      const worker_round& round) {
  worker_command cmd;
  switch (backend) {
    case worker_backend::shell:
      if (task.run.empty())
        throw std::invalid_argument("task " + task.id
                                    + " has no run: command for the shell "
                                      "worker");
      cmd.argv = shell_argv(task.run);
      break;
    case worker_backend::scripted:
      if (settings.script_file.empty())
        throw std::invalid_argument("the scripted worker needs a script "
                                    "(run.scriptFile)");
      cmd.argv
        = scripted_worker_argv(settings.taskforce_binary, settings.script_file,
                               task.id, round.invocation);
      break;
    case worker_backend::agent: {
      if (!settings.preset)
        throw std::invalid_argument("the agent worker needs a preset "
                                    "(run.agentPreset)");
      prompt_request r;
      r.task_id = task.id;
      r.title = task.title;
      r.body = task.body;
      r.files = task.files;
      r.verify = task.verify;
      r.contract = settings.contract;
      r.instructions = settings.instructions;
      r.instructions_file_text = settings.instructions_file_text;
      r.repair_round = round.repair_round;
      r.gate_result = round.gate_result;
      r.gate_tail = round.gate_tail;
      r.previous_failure = round.previous_failure;
      agent_values v;
      v.prompt = compose_prompt(r);
      v.prompt_file = round.prompt_file;
      v.model = task.model.empty() ? settings.model : task.model;
      v.worktree = round.worktree;
      v.task_id = task.id;
      v.title = task.title;
      v.files = task.files;
      auto expanded = expand_agent_preset(*settings.preset, v);
      cmd.argv = std::move(expanded.argv);
      cmd.env = std::move(expanded.env);
      cmd.stdin_file = std::move(expanded.stdin_file);
      cmd.prompt = std::move(v.prompt);
      break;
    }
  }
  cmd.env.emplace_back("TASKFORCE_TASK_ID", task.id);
  return cmd;
}

} // namespace taskforce
