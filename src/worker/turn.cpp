#include "src/worker/turn.hpp"

#include "src/git/base_guard.hpp"

namespace taskforce {

const char* to_string(turn_kind x) {
  switch (x) {
    case turn_kind::start: return "start";
    case turn_kind::repair: return "repair";
    case turn_kind::answer: return "answer";
    case turn_kind::message: return "message";
    case turn_kind::verify: return "verify";
  }
  return "start";
}

std::optional<turn_kind> parse_turn_kind(std::string_view name) {
  for (auto k : {turn_kind::start, turn_kind::repair, turn_kind::answer,
                 turn_kind::message, turn_kind::verify})
    if (name == to_string(k))
      return k;
  return std::nullopt;
}

std::string turn_text(const turn_input& turn) {
  std::string out;
  auto add = [&out](const std::string& part) {
    if (part.empty())
      return;
    if (!out.empty())
      out += out.back() == '\n' ? "\n" : "\n\n";
    out += part;
  };
  if (turn.kind == turn_kind::repair && turn.by_verifier)
    add("the verifier rejected the work\n" + turn.gate_tail);
  else if (turn.kind == turn_kind::repair)
    add("the gate failed"
        + (turn.gate_result.empty() ? "" : " (" + turn.gate_result + ")") + "\n"
        + turn.gate_tail);
  for (auto& a : turn.answers)
    add(a);
  for (auto& m : turn.messages)
    add(m);
  if (!out.empty() && out.back() != '\n')
    out += '\n';
  return out;
}

std::vector<std::pair<std::string, std::string>>
turn_environment(const turn_context& c) {
  return {{"TASKFORCE_RUN_ID", c.run_id},
          {"TASKFORCE_TASK_ID", c.task_id},
          {"TASKFORCE_ATTEMPT", std::to_string(c.attempt)},
          {"TASKFORCE_TURN", to_string(c.turn)},
          {"TASKFORCE_REPO", c.repo},
          // git writes it into the reflog of each ref the process moves:
          // the base branch's reflog then names the task (base_guard.hpp).
          {"GIT_REFLOG_ACTION", git::reflog_tag(c.run_id, c.task_id)}};
}

} // namespace taskforce
