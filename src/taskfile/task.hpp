// One task of a task file, as both parsers (and a custom parser) produce it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace taskforce {

/// A parsed, validated task. Field names follow the plan JSON.
struct task_spec {
  /// `id:`, else `t<index>` (checklist) or the heading number (headings).
  std::string id;
  /// 1-based position among the file's tasks.
  size_t index = 0;
  /// The line of the task's checkbox or heading.
  size_t line = 0;
  std::string title;
  /// The worker's prompt: the lines under the task that are not metadata.
  std::string body;
  /// `[x]`: satisfies dependents and is never scheduled.
  bool done = false;
  /// Resolved dependency ids, in the order written.
  std::vector<std::string> deps;
  /// Normalised write scope (literals, globs, `dir/`); empty = never
  /// parallel with anything.
  std::vector<std::string> files;
  /// Exclusive named resources.
  std::vector<std::string> locks;
  /// Higher runs first among ready tasks.
  int64_t priority = 0;
  /// The gate command; nullopt when absent or disabled.
  std::optional<std::string> verify;
  /// The shell worker's command.
  std::optional<std::string> run;
  std::optional<std::string> agent;
  /// The line of the `agent:` value (0 when absent).
  size_t agent_line = 0;
  /// `provider/model[#variant]`.
  std::optional<std::string> model;
  std::optional<std::string> risk;
  std::optional<int64_t> timeout_ms;
  /// The body matched `run.holdPattern`: the task waits when it would start.
  bool held = false;
  /// The text the hold pattern matched.
  std::optional<std::string> hold_reason;
  /// `risk` is listed in `run.approvalRisks`: integrate only once approved.
  bool needs_approval = false;
  /// Headings format: the `[design]` marker (a visual subtask).
  bool design = false;
};

} // namespace taskforce
