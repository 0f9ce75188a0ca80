// Agent presets: how the `agent` backend starts an agent CLI.
//
// A preset is a JSON file (config/agents/<name>.json ships claude, opencode,
// codex and aider; a repository may add or override its own in
// .taskforce/agents/<name>.json):
//
//   {
//     "description": "Claude Code in print mode",
//     "argv": ["claude", "-p", "{prompt}", ["--model", "{model}"]],
//     "env": {"SOME_VAR": "{worktree}"},
//     "stdin": "{prompt_file}"
//   }
//
// `argv` holds strings and groups (arrays of strings); a group is dropped as
// a whole when a placeholder in it is empty (no model set: no --model flag).
// Placeholders: {prompt} (the composed prompt), {prompt_file} (a file holding
// it), {model}, {worktree}, {task_id}, {title}, and {files}, which stands
// alone in an element and becomes one element per declared path. `{{` and
// `}}` are literal braces. `env` values and `stdin` (a file fed as standard
// input) take the same placeholders except {files}. Only "argv" is required.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace taskforce {

/// A refused preset: names the file, the key and the rule.
class preset_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A validated preset.
struct agent_preset {
  /// Its name ("claude") or the path it was given as.
  std::string name;
  /// Where it came from: a file path or "built-in preset 'claude'".
  std::string origin;
  /// One line for humans.
  std::string description;
  /// The argv template: each element a group of one (a plain string) or
  /// more (an optional group) strings.
  std::vector<std::vector<std::string>> argv;
  /// Whether each element of `argv` was written as a group.
  std::vector<bool> grouped;
  /// Environment templates.
  std::map<std::string, std::string> env;
  /// The stdin template; empty = /dev/null.
  std::string stdin_template;
};

/// The values placeholders expand to.
struct agent_values {
  /// The composed prompt.
  std::string prompt;
  /// A file holding the prompt; the caller writes it first, outside the
  /// worktree (inside, it would count as a change of the task).
  std::string prompt_file;
  /// The model ("provider/model"); empty = the agent's default.
  std::string model;
  /// The worktree the agent runs in.
  std::string worktree;
  /// The task id.
  std::string task_id;
  /// The task title.
  std::string title;
  /// The task's declared write scope.
  std::vector<std::string> files;
};

/// A preset expanded for one run.
struct agent_command {
  /// The program and its arguments.
  std::vector<std::string> argv;
  /// Variables to set.
  std::vector<std::pair<std::string, std::string>> env;
  /// A file for standard input; empty = /dev/null.
  std::string stdin_file;
};

/// Parses and validates preset JSON; `origin` names it in errors. Throws
/// preset_error.
agent_preset parse_agent_preset(const std::string& text,
                                const std::string& origin);

/// Finds and loads a preset. `name` containing a '/' or ending in ".json" is
/// a file (relative to `repo`); otherwise `<repo>/.taskforce/agents/NAME.json`
/// when it exists, else the built-in preset NAME. Throws preset_error
/// (an unknown name lists the known ones).
agent_preset load_agent_preset(const std::string& name,
                               const std::string& repo);

/// The names of the built-in presets.
std::vector<std::string> builtin_agent_presets();

/// The JSON text of a built-in preset (as shipped in config/agents/); empty
/// when unknown.
std::string builtin_agent_preset_text(const std::string& name);

/// Expands the preset. Throws preset_error when an argument would exceed
/// what one exec argument may hold (128 KiB), naming the placeholder.
agent_command expand_agent_preset(const agent_preset& preset,
                                  const agent_values& values);

} // namespace taskforce
