// Usage and budgets with a fake agent preset: a script that records the
// arguments and environment it got and reports usage like an agent CLI.
// What it reports is recorded per attempt and turn, shown by `status` (table,
// job log and --json) and at the end of a run; `maxCostUsd` stops the run at
// the task that crosses it, also when the driver was killed with SIGKILL
// before, and a resume goes on only with a raised limit.
#define CAF_SUITE scenarios.usage
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"
#include "src/proc/spawn.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The fake agent: logs its turn, environment and arguments, waits while
/// `$HOLD/<task>` exists, adds the turn's name to `<task>.txt` and reports
/// 120 input and 40 output tokens for $0.01.
const char* usage_agent = R"(#!/bin/sh
{
  echo "task=$TASKFORCE_TASK_ID attempt=$TASKFORCE_ATTEMPT turn=$TASKFORCE_TURN run=$TASKFORCE_RUN_ID repo=$TASKFORCE_REPO"
  echo "args=$*"
} >> "$USAGE_AGENT_LOG"
while [ -e "$USAGE_AGENT_HOLD/$TASKFORCE_TASK_ID" ]; do sleep 0.05; done
echo "$TASKFORCE_TURN" >> "$TASKFORCE_TASK_ID.txt"
echo "working on $TASKFORCE_TASK_ID"
echo '```json'
echo '{"status": "done", "summary": "wrote it", "usage": {"input_tokens": 120, "output_tokens": 40, "cost_usd": 0.01}}'
echo '```'
)";

struct usage_scenario : scenario {
  std::filesystem::path agent_log = dir.path() / "agent.log";
  std::filesystem::path hold = dir.path() / "hold";

  usage_scenario() {
    auto script = dir.write("usage-agent.sh", usage_agent);
    std::filesystem::create_directories(hold);
    // The preset lives in the repository, as a user keeps one.
    write(".taskforce/agents/usage.json",
          R"({"argv": ["sh", ")" + script.string()
            + R"(", "--prompt-file", "{prompt_file}", "--task", "{task_id}"],
              "env": {"USAGE_AGENT_LOG": ")"
            + agent_log.string() + R"(", "USAGE_AGENT_HOLD": ")" + hold.string()
            + R"("}})");
  }

  /// The agent config with `extra` run keys.
  void agent_config(const std::string& extra) {
    set_config(R"({"run": {"worker": "agent", "agentPreset": "usage",
                  "maxConcurrency": 1)"
               + (extra.empty() ? "" : ", " + extra) + "}}");
  }

  /// `n` independent tasks t1..tn, each writing `tN.txt`.
  void independent_tasks(int n) {
    std::string text;
    for (int i = 1; i <= n; ++i)
      text += "- [ ] Task " + std::to_string(i) + "\n  - files: t"
              + std::to_string(i) + ".txt\n";
    tasks(text);
  }

  json status_json() {
    auto r = tf({"status", "--json"});
    CAF_REQUIRE_EQUAL(r.code, 0);
    return json::parse(r.output);
  }

  std::string log() const {
    return read_file(agent_log);
  }
};

json usage_of(int64_t in, int64_t out, double cost) {
  return json{{"input_tokens", in}, {"output_tokens", out}, {"cost_usd", cost}};
}

} // namespace

CAF_TEST(usage is recorded per attempt and turn and shown by status) {
  usage_scenario s;
  s.agent_config("");
  // The gate fails after the first turn: the repair turn reports too.
  s.tasks("- [ ] Cache\n  - files: t1.txt\n  - verify: grep -q repair t1.txt\n"
          "- [ ] Docs\n  - files: t2.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_REQUIRE_EQUAL(r.code, 0);
  // The agent got its turn, environment and the preset's arguments.
  auto log = s.log();
  auto run_id = s.run().id;
  CAF_CHECK(contains(log, "task=t1 attempt=1 turn=start run=" + run_id
                            + " repo=" + s.root.string()));
  CAF_CHECK(contains(log, "task=t1 attempt=1 turn=repair"));
  CAF_CHECK(contains(log, "--task t1"));
  CAF_CHECK(contains(log, "--prompt-file "));
  // Per attempt (the sums) and per turn.
  auto db = s.ledger();
  auto a = db.attempts(run_id, "t1").at(0);
  CAF_CHECK_EQUAL(a.usage.input_tokens, 240);
  CAF_CHECK_EQUAL(a.usage.output_tokens, 80);
  CAF_CHECK_EQUAL(a.usage.cost_usd, 0.02);
  auto turns = db.turn_usage(run_id, "t1");
  CAF_REQUIRE_EQUAL(turns.size(), 2u);
  CAF_CHECK_EQUAL(turns[0].second.kind, "start");
  CAF_CHECK_EQUAL(turns[0].second.turn, 1);
  CAF_CHECK_EQUAL(turns[1].second.kind, "repair");
  CAF_CHECK_EQUAL(turns[1].second.usage.output_tokens, 40);
  CAF_CHECK_EQUAL(db.turn_usage(run_id, "t2").size(), 1u);
  // status --json: tasks[].usage and run.usage.
  auto st = s.status_json();
  CAF_CHECK_EQUAL(st["tasks"][0]["usage"], usage_of(240, 80, 0.02));
  CAF_CHECK_EQUAL(st["tasks"][1]["usage"], usage_of(120, 40, 0.01));
  CAF_CHECK_EQUAL(st["run"]["usage"]["input_tokens"], 360);
  CAF_CHECK_EQUAL(st["run"]["usage"]["output_tokens"], 120);
  CAF_CHECK_LESS(std::abs(st["run"]["usage"]["cost_usd"].get<double>() - 0.03),
                 1e-12);
  // The table: the total, and the job log with the repair and the exit.
  auto human = s.tf({"status"});
  CAF_CHECK(contains(human.output, "usage: 480 tokens (360 in, 120 out), "
                                   "$0.0300"));
  CAF_CHECK(contains(human.output, "TASK  START"));
  auto lines = lines_of(human.output);
  auto line_of = [&](const std::string& id) {
    for (auto& l : lines)
      if (l.rfind(id + " ", 0) == 0 && contains(l, "$0.0"))
        return l;
    return std::string{};
  };
  auto t1 = line_of("t1");
  CAF_MESSAGE("job log line: " << t1);
  // attempts 1, repairs 1, exit 0, 320 tokens, $0.0200
  CAF_CHECK(contains(t1, " 1         1        0     320         $0.0200"));
  CAF_CHECK(contains(human.output, "wall time "));
  CAF_CHECK(contains(s.tf({"list"}).output, "480 tokens, $0.0300"));
  // The end of the run showed the same job log.
  CAF_CHECK(contains(r.output, "TASK  START"));
  CAF_CHECK(contains(r.output, "usage: 480 tokens"));
}

CAF_TEST(a budget stops the run at the crossing task until a resume raises it) {
  usage_scenario s;
  s.agent_config(R"("maxCostUsd": 0.025)");
  s.independent_tasks(4);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_MESSAGE(r.output);
  CAF_CHECK_EQUAL(r.code, 1);
  // t3 took the total from $0.02 to $0.03: it finished and merged, t4
  // never started.
  auto run = s.run();
  CAF_CHECK_EQUAL(to_string(run.state), std::string{"paused"});
  CAF_CHECK_EQUAL(run.reason.value_or(""), "budget");
  for (auto id : {"t1", "t2", "t3"}) {
    CAF_CHECK_EQUAL(to_string(s.task(id).state), std::string{"done"});
    CAF_CHECK(s.task(id).merge_commit.has_value());
  }
  CAF_CHECK_EQUAL(s.task("t4").attempts, 0);
  CAF_CHECK(!contains(s.log(), "task=t4"));
  CAF_CHECK(contains(r.output, "paused: budget"));
  CAF_CHECK(contains(r.output, "the run reached its budget (cost $0.0300 "
                               "reached maxCostUsd 0.025)"));
  auto human = s.tf({"status"});
  CAF_CHECK(contains(human.output, "waiting on you:\n  the run reached its "
                                   "budget"));
  // A resume with the same limit stays paused and starts nothing.
  r = s.tf({"resume"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(s.run().reason.value_or(""), "budget");
  CAF_CHECK_EQUAL(s.task("t4").attempts, 0);
  // So does one whose config does not mention a budget: it is not lifted
  // by leaving it out.
  s.agent_config("");
  r = s.tf({"resume"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(s.task("t4").attempts, 0);
  CAF_CHECK(!contains(s.log(), "task=t4"));
  // A raised limit goes on.
  s.agent_config(R"("maxCostUsd": 0.05)");
  r = s.tf({"resume"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(to_string(s.run().state), std::string{"completed"});
  CAF_CHECK_EQUAL(to_string(s.task("t4").state), std::string{"done"});
}

CAF_TEST(a token budget counts input plus output tokens) {
  usage_scenario s;
  // 160 tokens a task: the second reaches 320.
  s.agent_config(R"("maxTokens": 320)");
  s.independent_tasks(3);
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(s.run().reason.value_or(""), "budget");
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"done"});
  CAF_CHECK_EQUAL(s.task("t3").attempts, 0);
  CAF_CHECK(contains(r.output, "320 tokens reached maxTokens 320"));
}

CAF_TEST(the budget holds across a SIGKILL of the driver and a resume) {
  usage_scenario s;
  s.agent_config(R"("maxCostUsd": 0.025)");
  s.independent_tasks(4);
  // t2's worker waits until the hold is gone: the driver is killed then.
  s.write("../hold/t2", "");
  auto driver = start_taskforce(s, {"run", "TASKS.md", "--plain"});
  CAF_REQUIRE(eventually([&] {
    return contains(s.log(), "task=t2 attempt=1");
  }));
  ::kill(driver.pid, SIGKILL);
  CAF_CHECK_EQUAL(proc::wait_for(driver.pid).signal, SIGKILL);
  // What t1 reported survived the kill.
  auto st = s.status_json();
  CAF_CHECK_EQUAL(st["run"]["usage"], usage_of(120, 40, 0.01));
  std::filesystem::remove(s.hold / "t2");
  auto r = s.tf({"resume"});
  CAF_MESSAGE(r.output);
  CAF_CHECK_EQUAL(r.code, 1);
  // t2 ran again ($0.02), t3 crossed ($0.03), t4 never started.
  CAF_CHECK_EQUAL(s.run().reason.value_or(""), "budget");
  for (auto id : {"t1", "t2", "t3"})
    CAF_CHECK_EQUAL(to_string(s.task(id).state), std::string{"done"});
  CAF_CHECK_EQUAL(s.task("t4").attempts, 0);
  CAF_CHECK(!contains(s.log(), "task=t4"));
  st = s.status_json();
  CAF_CHECK_EQUAL(st["run"]["usage"]["input_tokens"], 360);
  CAF_CHECK_EQUAL(st["run"]["state"], "paused");
  CAF_CHECK_EQUAL(st["run"]["reason"], "budget");
}

CAF_TEST(an absurd usage report neither crashes the worker nor the totals) {
  usage_scenario s;
  s.set_config("{}");
  s.write("big.sh", "echo x > t1.txt\n"
                    "printf '```json\\n{\"status\":\"done\",\"usage\":"
                    "{\"input_tokens\":9223372036855,\"output_tokens\":1,"
                    "\"cost_usd\":1}}\\n```\\n'\n");
  s.write("huge.sh", "echo x > t2.txt\n"
                     "printf '```json\\n{\"status\":\"done\",\"usage\":"
                     "{\"cost_usd\":1e400}}\\n```\\n'\n");
  git_ok(s.root, {"add", "big.sh", "huge.sh"});
  s.tasks("- [ ] Big\n  - files: t1.txt\n  - run: sh big.sh\n"
          "- [ ] Huge\n  - files: t2.txt\n  - run: sh huge.sh\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_MESSAGE(r.output);
  // Kept to a ceiling with a warning: the work counts.
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(s.task("t1").usage.input_tokens, 1000000000000);
  CAF_CHECK(contains(r.output, "usage.input_tokens 9223372036855 is above"));
  // A number beyond a double is a malformed report (before, the worker
  // died with a runtime_error): the task fails with the reason.
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"failed"});
  CAF_CHECK(contains(s.task("t2").reason.value_or(""), "is not valid JSON"));
  auto st = s.status_json();
  CAF_CHECK_EQUAL(st["run"]["usage"]["input_tokens"], 1000000000000);
}
