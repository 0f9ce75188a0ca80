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
  // By its path, as the gate runs: no search of PATH at every task.
  return {"/bin/sh", "-c", command};
}

namespace {

/// Whether an agent turn continues the session it had.
bool continues_session(const agent_preset& preset, const worker_round& r) {
  using source = agent_preset::session_source;
  if (r.turn.kind == turn_kind::start || r.fresh_session
      || !preset.can_continue() || r.session.empty())
    return false;
  if (preset.session == source::directory)
    return r.own_directory && r.session == r.worktree;
  return true;
}

void prepare_agent(worker_command& cmd, const worker_settings& settings,
                   const worker_task& task, const worker_round& round) {
  using source = agent_preset::session_source;
  if (!settings.preset)
    throw std::invalid_argument("the agent worker needs a preset "
                                "(run.agentPreset)");
  auto& preset = *settings.preset;
  agent_values v;
  cmd.continues = continues_session(preset, round);
  if (cmd.continues) {
    v.prompt = compose_follow_up(round.turn, settings.contract);
    v.session = round.session;
  } else {
    prompt_request r;
    r.task_id = task.id;
    r.title = task.title;
    r.body = task.body;
    r.files = task.files;
    r.verify = task.verify;
    r.contract = settings.contract;
    r.skills = settings.skills;
    r.instructions = settings.instructions;
    r.instructions_file_text = settings.instructions_file_text;
    if (round.turn.kind == turn_kind::repair) {
      r.repair_round = round.turn.repair_round;
      r.gate_result = round.turn.gate_result;
      r.gate_tail = round.turn.gate_tail;
      r.by_verifier = round.turn.by_verifier;
    }
    r.answers = round.turn.answers;
    r.messages = round.turn.messages;
    r.previous_failure = round.previous_failure;
    v.prompt = compose_prompt(r);
    if (preset.session == source::uuid)
      v.session = round.new_session;
    else if (preset.session == source::directory && round.own_directory)
      v.session = round.worktree;
  }
  v.prompt_file = round.prompt_file;
  v.model = task.model;
  v.worktree = round.worktree;
  v.task_id = task.id;
  v.title = task.title;
  v.files = task.files;
  auto expanded = expand_agent_preset(preset, v, cmd.continues);
  cmd.argv = std::move(expanded.argv);
  for (auto& kv : expanded.env)
    cmd.env.push_back(std::move(kv));
  cmd.stdin_file = std::move(expanded.stdin_file);
  cmd.session = v.session;
  if (!round.prompt_file.empty())
    cmd.inputs.emplace_back(round.prompt_file, v.prompt);
}

} // namespace

worker_command prepare_worker_command(worker_backend backend,
                                      const worker_settings& settings,
                                      const worker_task& task,
                                      const worker_round& round) {
  worker_command cmd;
  cmd.env = turn_environment(round.context);
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
    case worker_backend::agent:
      prepare_agent(cmd, settings, task, round);
      return cmd;
  }
  // A shell or scripted worker reads the turn's text on standard input.
  auto text = turn_text(round.turn);
  if (!text.empty() && !round.turn_file.empty()) {
    cmd.inputs.emplace_back(round.turn_file, text);
    cmd.stdin_file = round.turn_file;
  }
  return cmd;
}

} // namespace taskforce
