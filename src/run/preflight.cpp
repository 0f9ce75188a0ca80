#include "src/run/preflight.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>

#include "src/proc/which.hpp"
#include "src/worker/agent_preset.hpp"
#include "src/worker/backend.hpp"

namespace taskforce::run {

namespace {

/// A preset as the checks found it, with the tasks that use it.
struct preset_use {
  std::optional<agent_preset> preset;
  /// Why it cannot be loaded; empty when it can.
  std::string error;
  /// The tasks it runs, and the line of the first.
  std::vector<std::string> tasks;
  size_t first_line = 0;
};

/// "t1", "t1 and t2", "t1, t2 and 3 more".
std::string some_of(const std::vector<std::string>& ids) {
  if (ids.size() == 1)
    return ids[0];
  if (ids.size() == 2)
    return ids[0] + " and " + ids[1];
  return ids[0] + ", " + ids[1] + " and " + std::to_string(ids.size() - 2)
         + " more";
}

/// The programs a preset starts (its first turn's and a later one's).
std::vector<std::string> programs_of(const agent_preset& p) {
  std::vector<std::string> out;
  auto take = [&](const std::vector<std::vector<std::string>>& argv,
                  const std::vector<bool>& grouped) {
    if (argv.empty() || argv[0].empty() || (!grouped.empty() && grouped[0]))
      return;
    auto& program = argv[0][0];
    // A placeholder in the program is only known per task.
    if (program.find('{') != std::string::npos)
      return;
    if (std::find(out.begin(), out.end(), program) == out.end())
      out.push_back(program);
  };
  take(p.argv, p.grouped);
  take(p.continue_argv, p.continue_grouped);
  return out;
}

/// Why `program` cannot be started here, or "".
std::string missing(const std::string& program, const preflight_context& ctx) {
  if (proc::find_program(program, ctx.path_env, ctx.root))
    return "";
  if (program.find('/') != std::string::npos)
    return "the program \"" + program + "\" is not an executable file";
  return "the program \"" + program + "\" is not on PATH";
}

} // namespace

std::string current_path() {
  if (const char* p = std::getenv("PATH"))
    return p;
  // What execvp searches without a PATH.
  return "/bin:/usr/bin";
}

std::vector<preflight_finding> preflight(const std::vector<task_spec>& tasks,
                                         const preflight_context& ctx) {
  std::vector<preflight_finding> out;
  const auto& cfg = ctx.cfg;
  std::map<std::string, preset_use> presets;
  auto load = [&](const std::string& name) -> preset_use& {
    auto [it, fresh] = presets.try_emplace(name);
    if (fresh) {
      try {
        it->second.preset = load_agent_preset(name, ctx.root);
      } catch (const std::exception& e) {
        it->second.error = e.what();
      }
    }
    return it->second;
  };
  // The run's own preset is reported once, at the first task it runs.
  std::vector<std::string> default_users;
  size_t default_line = 0;
  for (const auto& t : tasks) {
    if (t.done)
      continue;
    backend_choice choice;
    try {
      choice
        = choose_backend(t.agent.value_or(""), cfg.worker, cfg.agent_preset);
    } catch (const std::invalid_argument& e) {
      out.push_back({0, std::string{"run.worker: "} + e.what(), true});
      return out;
    }
    if (choice.backend == worker_backend::shell && !t.run) {
      out.push_back({t.line,
                     "task " + t.id
                       + " has no run: command for the shell worker "
                         "(run.worker \""
                       + cfg.worker
                       + "\"); add a run: line, or agent: NAME to give it to "
                         "an agent",
                     false});
      continue;
    }
    if (choice.backend != worker_backend::agent)
      continue;
    bool own = t.agent && *t.agent == choice.preset;
    auto line = own ? t.agent_line : t.line;
    auto& use = load(choice.preset);
    if (!use.error.empty()) {
      if (own) {
        out.push_back({line, "agent: " + use.error, true});
      } else {
        if (default_users.empty())
          default_line = line;
        default_users.push_back(t.id);
      }
      continue;
    }
    if (use.tasks.empty())
      use.first_line = line;
    use.tasks.push_back(t.id);
  }
  if (!default_users.empty())
    out.push_back({default_line,
                   "run.agentPreset: " + load(cfg.agent_preset).error
                     + " (it would run " + some_of(default_users) + ")",
                   true});
  for (auto& [name, use] : presets) {
    if (!use.preset || use.tasks.empty())
      continue;
    for (auto& program : programs_of(*use.preset))
      if (auto why = missing(program, ctx); !why.empty())
        out.push_back({use.first_line,
                       "agent preset \"" + name + "\": " + why
                         + " (it would run " + some_of(use.tasks) + ")",
                       false});
  }
  // The verifier runs after the gate of any task that runs.
  bool any = std::any_of(tasks.begin(), tasks.end(), [](const task_spec& t) {
    return !t.done;
  });
  if (cfg.verifier_enabled && any) {
    auto name
      = cfg.verifier_preset.empty() ? cfg.agent_preset : cfg.verifier_preset;
    auto& use = load(name);
    bool told = name == cfg.agent_preset && !default_users.empty();
    if (!use.error.empty()) {
      if (!told)
        out.push_back({0, "run.verifierPreset: " + use.error, true});
    } else if (use.tasks.empty()) {
      // Its programs are checked here unless tasks run it too (above).
      for (auto& program : programs_of(*use.preset))
        if (auto why = missing(program, ctx); !why.empty())
          out.push_back(
            {0, "run.verifierPreset: agent preset \"" + name + "\": " + why,
             false});
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const preflight_finding& a, const preflight_finding& b) {
                     return a.line < b.line;
                   });
  return out;
}

} // namespace taskforce::run
