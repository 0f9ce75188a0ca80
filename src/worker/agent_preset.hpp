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
//     "stdin": "{prompt_file}",
//     "continue": ["claude", "-p", "{prompt}", "--resume", "{session}"],
//     "session": "uuid"
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
  /// The argv template of a turn that continues the session (same shape as
  /// argv); empty = the preset cannot continue.
  std::vector<std::vector<std::string>> continue_argv;
  /// Whether each element of `continue_argv` was written as a group.
  std::vector<bool> continue_grouped;
  /// How the session to continue is known.
  enum class session_source {
    /// Not at all: the preset cannot continue.
    none,
    /// taskforce names it with a fresh UUID.
    uuid,
    /// Read from the output with `session_pattern`.
    output,
    /// The CLI's last session in its working directory.
    directory,
  };
  /// How the session to continue is known.
  session_source session = session_source::none;
  /// For `output`: an ECMAScript regular expression with one group.
  std::string session_pattern;

  /// Whether a later turn may continue the session.
  bool can_continue() const {
    return !continue_argv.empty();
  }
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
  /// The agent session: a new one to name (uuid) or the one to continue.
  std::string session;
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

/// Expands the preset (its `continue` argv when `continuing`). Throws
/// preset_error when an argument would exceed what one exec argument may
/// hold (128 KiB), naming the placeholder.
agent_command expand_agent_preset(const agent_preset& preset,
                                  const agent_values& values,
                                  bool continuing = false);

/// The session named in `output` by the preset's pattern (its first group
/// of the first match); "" when the preset does not read it from the
/// output or nothing matches.
std::string find_session(const agent_preset& preset, const std::string& output);

/// A fresh random UUID (version 4), lowercase: a new agent session's name.
std::string new_session_uuid();

} // namespace taskforce
