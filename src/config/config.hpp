// The configuration: defaults, loading and validation of taskforce.json.
//
// A file may set any subset of the keys; the rest keep their defaults. Every
// key is checked (type, range, allowed values); an unknown key is refused
// with the nearest known key suggested. Nothing starts on a bad file.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace taskforce {

/// `pool.mode`: one pool per requesting session, or one for the server.
enum class pool_mode { session, global };

/// `pool.nested`: what a nested acquire does when no permit is free.
enum class nested_policy { lend, fail_fast };

const char* to_string(pool_mode x);
const char* to_string(nested_policy x);

/// The `"pool"` section (docs/configuration.md, `pool`).
struct pool_config {
  uint64_t max_parallel = 2;
  pool_mode mode = pool_mode::session;
  /// 0 waits forever.
  int64_t queue_timeout_ms = 300000;
  int64_t max_hold_ms = 3600000;
  nested_policy nested = nested_policy::lend;
  /// Matched without regard to ASCII case. The defaults name each harness's
  /// own spelling: Claude Code's `Task` and `Agent`, OpenCode's `task`.
  std::vector<std::string> subagent_tool_names{"Task", "Agent", "task"};
  int64_t idle_memory_ms = 10000;
};

/// The `"run"` section: task files and how a run executes them.
struct run_config {
  /// `checklist` or `headings`.
  std::string task_format = "checklist";
  bool sequential_deps = false;
  /// A program that turns a task file into plan JSON; empty = built in.
  std::string parser_command;
  /// Headings format: label as written -> canonical field name.
  std::map<std::string, std::string> fields;
  std::vector<std::string> hold_pattern{"\\[NEEDS DECISION"};
  std::vector<std::string> approval_risks;
  uint64_t max_concurrency = 3;
  /// `shell`, `agent` or `scripted`.
  std::string worker = "shell";
  /// The agent preset (a file `config/agents/<name>.json`) for `agent`.
  std::string agent_preset = "claude";
  std::string worker_model;
  /// The JSON script of the `scripted` worker, relative to the repository.
  std::string script_file;
  int64_t task_timeout_ms = 1200000;
  int64_t verify_timeout_ms = 600000;
  uint64_t max_attempts = 2;
  /// Gate repairs per attempt before the attempt counts as failed.
  uint64_t max_repairs = 2;
  bool repair_on_failure = true;
  bool fresh_worktree_on_retry = false;
  bool continue_on_error = false;
  /// A worker that reports blocked is kept for `taskforce answer`; the run
  /// waits "awaiting answer" instead of going on around it.
  bool ask_user_on_blocked = false;
  bool use_worktrees = true;
  bool require_worktrees = true;
  bool auto_merge = true;
  bool cleanup_worktrees = true;
  bool enforce_diff_scope = true;
  /// `integrate` or `assist`.
  std::string mode = "integrate";
  /// The branch tasks merge into; empty = the branch checked out at start.
  std::string base_branch;
  std::string worker_instructions;
  std::string worker_instructions_file;
  /// Skills the worker should follow, appended to its prompt.
  std::vector<std::string> worker_skills;
  /// `generic` (the built-in report contract in the prompt) or `none`.
  std::string worker_contract = "generic";
  /// Agent (a task's `agent:`) -> model, between the task's `model:` and
  /// worker_model.
  std::map<std::string, std::string> role_models;
  /// Models tried in order on the retries after a failed attempt.
  std::vector<std::string> fallback_models;
  /// Budgets: the run pauses (reason `budget`) once its total reaches one.
  /// 0 = off; tokens count input plus output.
  double max_cost_usd = 0;
  int64_t max_tokens = 0;
  /// An independent read-only agent run inspects a task's diff after its
  /// gate passes and may reject it.
  bool verifier_enabled = false;
  /// The verifier's agent preset; empty = agent_preset.
  std::string verifier_preset;
  std::string verifier_prompt;
  /// The gate also runs on the merge result before the base branch moves.
  bool verify_merged = true;
  /// Assist mode: the run writes `[x]` back into the task file.
  bool flip_checkboxes = false;
  /// A file (relative to the repository) a block per finished task is
  /// appended to; empty = none.
  std::string progress_file;
  /// `report` (the worker's report says done) or `checkboxes` (the task's
  /// box in the file was flipped).
  std::string detect_completion = "report";
  /// Files that changed together in completed tasks become conflicts.
  bool co_change_learning = false;
  uint64_t co_change_min_count = 2;
};

/// The `"server"` section.
struct server_config {
  /// Where `serve --listen` binds when no address is given.
  std::string listen = "127.0.0.1:7411";
  /// How long the per-user server (`serve --user`) stays up with no
  /// connection open and no permit held or awaited before it exits.
  int64_t idle_exit_ms = 600000;
};

/// The `"control"` section: managed background work and monitors.
struct control_config {
  /// Managed tasks holding a slot (ready, starting, running, blocked,
  /// checking) at once; more are queued.
  uint64_t max_concurrent = 4;
  /// Live monitors at once; more are refused.
  uint64_t max_monitors = 8;
  /// Whether live tasks' write roots must not overlap, and writes outside a
  /// task's roots are refused (bg.may_write) and fail its completion.
  bool enforce_write_roots = true;
  /// Whether a task ends only through bg.complete (its child's end alone
  /// leaves it interrupted, not done).
  bool require_completion = true;
  /// The wall-clock limit of each validation command.
  uint64_t validation_timeout_ms = 600000;
  /// How much output of a validation or a monitor an answer carries (the
  /// log file keeps all of it).
  uint64_t max_output_bytes = 65536;
};

/// The whole file.
struct config {
  pool_config pool;
  run_config run;
  server_config server;
  control_config control;
};

/// A refused config: names the file, the key, the value and the rule.
class config_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Parses and validates config JSON text; `origin` names it in errors.
/// Throws config_error.
config parse_config(const std::string& text, const std::string& origin);

/// Reads and validates a config file. Throws config_error.
config load_config(const std::string& path);

/// The effective pool config as JSON text, with the config file's key names.
std::string pool_config_json(const pool_config& cfg);

/// The `"control"` section as JSON, with the config file's key names.
std::string control_config_json(const control_config& cfg);

/// The whole effective config as pretty JSON text, as taskforce.json is laid
/// out.
std::string config_json(const config& cfg);

} // namespace taskforce
