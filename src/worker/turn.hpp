// Turns: the times a worker runs within one attempt. The first is `start`
// (or `answer` when a person's answer waits for the task); a failed gate
// sends the worker a `repair` turn, mail that arrived while it worked a
// `message` turn; a rejection by the verifier is repaired like a failed
// gate. The verifier's own run is a `verify` turn. Every worker and gate
// process learns which turn it serves from its environment; a turn after the
// first also has a text (the gate's failure, the answer, the messages), given
// on standard input to a shell worker and as the next prompt to an agent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace taskforce {

/// Why the worker runs.
enum class turn_kind : uint8_t {
  /// The task, from the beginning.
  start,
  /// The gate failed: fix it.
  repair,
  /// A person answered the worker's question.
  answer,
  /// Messages arrived for the task.
  message,
  /// The verifier inspects the work (its own run, not the worker's).
  verify,
};

/// "start", "repair", "answer", "message" or "verify".
const char* to_string(turn_kind x);

/// The turn named `name`, if any.
std::optional<turn_kind> parse_turn_kind(std::string_view name);

/// What a turn says beyond the task itself.
struct turn_input {
  /// Which turn.
  turn_kind kind = turn_kind::start;
  /// repair: 1 for the first repair of the attempt, and so on.
  int repair_round = 0;
  /// repair: how the gate ended ("exit 1").
  std::string gate_result;
  /// repair: the end of the gate's output (the verifier's reason, when it
  /// rejected the work).
  std::string gate_tail;
  /// repair: the verifier rejected the work (not the gate).
  bool by_verifier = false;
  /// The person's answers, oldest first.
  std::vector<std::string> answers;
  /// The messages sent to the task, oldest first.
  std::vector<std::string> messages;
};

/// The text of a turn as a shell worker reads it on standard input: the
/// gate's failure and output, the answers, the messages (each separated by
/// a blank line). Empty for a start turn without mail.
std::string turn_text(const turn_input& turn);

/// Who a worker or gate process runs for.
struct turn_context {
  std::string run_id;
  std::string task_id;
  uint64_t attempt = 1;
  turn_kind turn = turn_kind::start;
  /// The main repository's top folder.
  std::string repo;
};

/// TASKFORCE_RUN_ID, TASKFORCE_TASK_ID, TASKFORCE_ATTEMPT, TASKFORCE_TURN,
/// TASKFORCE_REPO and GIT_REFLOG_ACTION (the task's reflog tag), for every
/// worker and gate process.
std::vector<std::pair<std::string, std::string>>
turn_environment(const turn_context& context);

} // namespace taskforce
