// One case run with each real agent CLI through its built-in preset: a task
// whose first turn writes a draft that fails the gate, whose repair turn
// (continuing the same session) fixes it, and whose reports carry usage.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "e2e/harness.hpp"
#include "scenarios/scenario.hpp"

namespace taskforce::test {

/// The marker of the task's first turn; the model server answers a prompt
/// holding it with the first-turn steps.
constexpr const char* first_turn_marker = "REAL-FIRST-TURN";
/// What the gate prints when it fails; the repair turn's text holds it.
constexpr const char* gate_marker = "GATE-WANTS-FIXED";

struct real_worker_case {
  const harness_clis& clis;
  scenario s;
  tf_result result;

  explicit real_worker_case(const harness_clis& c) : clis(c) {
    // The gate lives in a script so that the prompt, which shows the gate's
    // command, does not already hold the gate's failure text.
    s.write("check.sh", std::string{"grep -qx fixed notes.txt || { echo '"}
                          + gate_marker + ": notes.txt must say fixed'; "
                          + "exit 1; }\n");
    git_ok(s.root, {"add", "check.sh"});
    git_ok(s.root, {"commit", "-q", "-m", "gate"});
    s.tasks(std::string{"- [ ] Write the notes "} + first_turn_marker
            + "\n  - files: notes.txt\n  - verify: sh check.sh\n");
  }

  /// The final words of a turn: the report the prompt's contract asks for.
  static std::string report(const std::string& summary, int in, int out) {
    return R"({"text": "Done.\n```json\n{\"status\": \"done\", \"summary\": \")"
           + summary + R"(\", \"files\": [\"notes.txt\"], \"usage\": )"
           + R"({\"input_tokens\": )" + std::to_string(in)
           + R"(, \"output_tokens\": )" + std::to_string(out) + R"(}}\n```"})";
  }

  /// The model server's script: the first turn runs `first_step` (a tool
  /// call writing the draft) then reports; the repair turn, recognised by
  /// the gate's output, runs `repair_step` then reports.
  std::string script(const std::string& first_step,
                     const std::string& repair_step) const {
    return std::string{R"({"rules": [)"} + R"({"name": "repair", "when": ")"
           + gate_marker + R"(", "steps": [)" + repair_step + ", "
           + report("fixed the notes", 7, 3) + "]}, "
           + R"({"name": "first", "when": ")" + first_turn_marker
           + R"(", "steps": [)" + first_step + ", "
           + report("wrote the notes", 11, 5) + "]}]}";
  }

  /// `taskforce run TASKS.md` with the `agent` worker and `preset`, the
  /// CLI's environment in `env`.
  void run(const std::string& preset,
           std::vector<std::pair<std::string, std::string>> env,
           std::chrono::minutes limit = std::chrono::minutes(10)) {
    s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")" + preset
                 + R"(", "maxAttempts": 1, "maxRepairs": 1}})");
    proc::run_options o;
    o.argv = {TASKFORCE_BINARY,  "--repo", s.root.string(), "--config",
              s.config.string(), "run",    "TASKS.md",      "--plain"};
    o.cwd = s.root.string();
    o.env = std::move(env);
    o.env.emplace_back("NO_COLOR", "1");
    o.log_file = (s.dir.path() / "tf.log").string();
    o.timeout = limit;
    auto r = proc::run(o);
    result = {r.exit_code, read_file(o.log_file)};
  }

  /// Whether an event line holds `text`.
  static bool has(const std::string& line, const std::string& text) {
    return line.find(text) != std::string::npos;
  }

  /// The "markers" list of an event line, as its JSON text.
  static std::string markers_of(const std::string& line) {
    auto at = line.find("\"markers\":[");
    if (at == std::string::npos)
      return {};
    return line.substr(at, line.find(']', at) - at + 1);
  }

  /// What a user checks after the run: it succeeded, the gate's wish is on
  /// main, the repair turn went to the session of the first turn (its
  /// request carried the first turn's conversation), and both turns' usage
  /// was counted.
  void check(const model_server& model) {
    CAF_CHECK_EQUAL(result.code, 0);
    if (result.code != 0)
      CAF_MESSAGE("taskforce said:\n" << result.output);
    CAF_CHECK_EQUAL(git_ok(s.root, {"show", "main:notes.txt"}), "fixed\n");
    auto t = s.task("t1");
    CAF_CHECK(t.state == task_state::done);
    CAF_CHECK_EQUAL(t.usage.input_tokens, 18u);
    CAF_CHECK_EQUAL(t.usage.output_tokens, 8u);
    bool first = false, repair = false, repair_in_session = false;
    for (auto& line : model.events()) {
      if (!has(line, "\"event\":\"request\""))
        continue;
      first = first || has(line, "\"rule\":\"first\"");
      if (has(line, "\"rule\":\"repair\"")) {
        repair = true;
        repair_in_session
          = repair_in_session || has(markers_of(line), first_turn_marker);
      }
    }
    CAF_CHECK(first);
    CAF_CHECK(repair);
    CAF_CHECK(repair_in_session);
    if (!repair_in_session)
      CAF_MESSAGE("model server events:\n" << read_file(model.log()));
  }
};

} // namespace taskforce::test
