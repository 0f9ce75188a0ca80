// The prompt of the `agent` backend: the task, its write scope, its gate,
// the failure to repair (on a repair round), the answers and messages of a
// later turn, the worker contract (how to report) and the run's extra
// instructions; and the short follow-up prompt of a turn that continues the
// agent's own session.
#pragma once

#include <string>
#include <vector>

#include "src/worker/turn.hpp"

namespace taskforce {

/// What a prompt is made of.
struct prompt_request {
  /// The task id.
  std::string task_id;
  /// The task title.
  std::string title;
  /// The task body (the text under the task in the task file).
  std::string body;
  /// The declared write scope (paths and globs); empty = none declared.
  std::vector<std::string> files;
  /// The gate command; empty = no gate.
  std::string verify;
  /// Include the worker contract (`workerContract: generic`); false for
  /// `none`.
  bool contract = true;
  /// `run.workerSkills`: skills the worker is told to use, in order.
  std::vector<std::string> skills;
  /// `run.workerInstructions`.
  std::string instructions;
  /// The contents of `run.workerInstructionsFile` (see
  /// read_instructions_file).
  std::string instructions_file_text;
  /// 0 on a first run; k on the k-th repair of a failed gate.
  int repair_round = 0;
  /// On a repair: how the gate ended ("exit 1", "timed out after 600000 ms").
  std::string gate_result;
  /// On a repair: the end of the gate's output (the verifier's reason).
  std::string gate_tail;
  /// On a repair: the verifier rejected the work (not the gate).
  bool by_verifier = false;
  /// On a retry (a new attempt): why the previous attempt failed; empty on
  /// the first attempt.
  std::string previous_failure;
  /// A person's answers to the question the worker asked, oldest first.
  std::vector<std::string> answers;
  /// Messages sent to the task, oldest first.
  std::vector<std::string> messages;
};

/// The most of the gate's output a prompt carries (its end).
constexpr size_t max_prompt_gate_tail = 16 * 1024;

/// Composes the prompt, in markdown.
std::string compose_prompt(const prompt_request& request);

/// The next prompt to an agent that continues its own session: only what
/// the turn adds (the gate's failure, the answer, the messages) and the
/// reminder to report again (in the contract's words, or, without the
/// built-in contract, as the worker's own instructions ask).
std::string compose_follow_up(const turn_input& turn, bool contract = true);

/// The worker contract on its own: how to report (the fenced JSON block,
/// the markers).
std::string worker_contract_text();

/// Reads `run.workerInstructionsFile`: `path` relative to `repo` unless
/// absolute; "" when `path` is empty. Throws std::runtime_error naming the
/// file when it cannot be read.
std::string read_instructions_file(const std::string& path,
                                   const std::string& repo);

} // namespace taskforce
