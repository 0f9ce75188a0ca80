// Agent policies as a user's agents see them, with the real binary in a
// temporary repository and a fake agent CLI (a script that records the
// arguments and environment it got and prints a report with usage): model
// routing (each level of the chain, fallbacks on retries, the model in
// `logs`), workerSkills and workerContract in the prompt, and the verifier
// (a rejection repaired like a failed gate, a verifier that writes files in
// its read-only copy).
#define CAF_SUITE scenarios.agent_policy
#include <caf/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"

using namespace taskforce;
using namespace taskforce::test;

namespace {

/// The fake agent: `sh agent.sh ROLE MODE PROMPT_FILE [--model M]`.
///
/// It appends one line to `agent.log` (outside the repository):
/// `ROLE MODEL TURN ATTEMPT TASK PWD` (MODEL `-` when it got none) and
/// keeps a copy of each prompt as `prompts/ROLE-N.md`.
///
/// As a worker (ROLE worker) it writes every plain path of the prompt's
/// write scope; a task whose body says `FAIL-UNLESS-MODEL X` fails (exit 1,
/// no report) unless its model is X. It reports done with usage.
///
/// As the verifier (ROLE verifier), MODE says what it does: `accept`;
/// `reject-once` (rejects the first time it runs for a task, then
/// accepts); `reject` (always); `write` (overwrites out/t1.txt, adds
/// stray.txt, then accepts); `silent` (prints no verdict).
std::string agent_script(const std::filesystem::path& dir) {
  auto d = dir.string();
  return "role=$1; mode=$2; prompt_file=$3; shift 3\n"
         "model=-\n"
         "if [ \"$1\" = --model ]; then model=$2; fi\n"
         "prompt=$(cat \"$prompt_file\")\n"
         "echo \"$role $model $TASKFORCE_TURN $TASKFORCE_ATTEMPT "
         "$TASKFORCE_TASK_ID $(pwd)\" >> '"
         + d
         + "/agent.log'\n"
           "mkdir -p '"
         + d
         + "/prompts'\n"
           "n=$(ls '"
         + d
         + "/prompts' | grep -c \"^$role-\")\n"
           "cp \"$prompt_file\" '"
         + d
         + "/prompts/'\"$role-$((n + 1)).md\"\n"
           "usage='\"usage\": {\"input_tokens\": 100, \"output_tokens\": 20, "
           "\"cost_usd\": 0.01}'\n"
           "if [ \"$role\" = verifier ]; then\n"
           "  seen='"
         + d
         + "/seen-'\"$TASKFORCE_TASK_ID\"\n"
           "  cat out/t1.txt 2>/dev/null | sed 's/^/seen: /' >> '"
         + d
         + "/agent.log'\n"
           "  case \"$mode\" in\n"
           "    silent) echo 'I looked at it.'; exit 0 ;;\n"
           "    reject) printf '```json\\n{\"status\": \"blocked\", "
           "\"summary\": \"the file says nothing useful\"}\\n```\\n'; "
           "exit 0 ;;\n"
           "    reject-once) if [ ! -e \"$seen\" ]; then touch \"$seen\";\n"
           "      printf '```json\\n{\"status\": \"blocked\", \"summary\": "
           "\"out/t1.txt must end with REPAIRED\", %s}\\n```\\n' \"$usage\";\n"
           "      exit 0; fi ;;\n"
           "    write) echo 'verifier was here' > out/t1.txt;\n"
           "      echo stray > stray.txt ;;\n"
           "  esac\n"
           "  printf '```json\\n{\"status\": \"done\", \"summary\": "
           "\"looks right\", %s}\\n```\\n' \"$usage\"\n"
           "  exit 0\n"
           "fi\n"
           "case \"$prompt\" in *FAIL-UNLESS-MODEL*)\n"
           "  want=$(printf '%s\\n' \"$prompt\" | sed -n "
           "'s/.*FAIL-UNLESS-MODEL \\([^ ]*\\).*/\\1/p' | head -1)\n"
           "  if [ \"$model\" != \"$want\" ]; then echo 'model too weak'; "
           "exit 1; fi ;;\n"
           "esac\n"
           "files=$(printf '%s\\n' \"$prompt\" | sed -n "
           "'s/^- `\\([^`*?]*\\)`$/\\1/p')\n"
           "for f in $files; do\n"
           "  mkdir -p \"$(dirname \"$f\")\"\n"
           "  echo \"by $model\" > \"$f\"\n"
           "  case \"$prompt\" in *'must end with REPAIRED'*) echo REPAIRED >> "
           "\"$f\" ;; esac\n"
           "done\n"
           "printf 'Done.\\n```json\\n{\"status\": \"done\", \"summary\": "
           "\"wrote it\", %s}\\n```\\n' \"$usage\"\n";
}

/// A preset running the fake agent in `role` and `mode`.
std::string preset_json(const std::filesystem::path& script,
                        const std::string& role, const std::string& mode) {
  return R"({"argv": ["sh", ")" + script.string() + R"(", ")" + role + R"(", ")"
         + mode + R"(", "{prompt_file}", ["--model", "{model}"]]})";
}

/// A scenario with the fake agent and its presets outside the repository.
struct agents {
  scenario s;
  std::filesystem::path script
    = s.dir.write("agent.sh", agent_script(s.dir.path()));
  std::filesystem::path worker
    = s.dir.write("worker.json", preset_json(script, "worker", "ok"));

  /// A verifier preset in `mode`.
  std::string verifier(const std::string& mode) {
    return s.dir
      .write("verifier-" + mode + ".json",
             preset_json(script, "verifier", mode))
      .string();
  }

  /// The fake agent's log lines.
  std::vector<std::string> log() const {
    return lines_of(read_file(s.dir.path() / "agent.log"));
  }

  /// The log lines of `role` without the working directory.
  std::vector<std::string> calls(const std::string& role) const {
    std::vector<std::string> out;
    for (auto& l : log())
      if (l.rfind(role + " ", 0) == 0)
        out.push_back(l.substr(0, l.rfind(' ')));
    return out;
  }

  /// The n-th prompt of `role` (1-based).
  std::string prompt(const std::string& role, int n) const {
    return read_file(s.dir.path() / "prompts"
                     / (role + "-" + std::to_string(n) + ".md"));
  }

  /// `logs TASK --json`, parsed.
  nlohmann::json logs_json(const std::string& task) {
    auto r = s.tf({"logs", task, "--json"});
    CAF_CHECK_EQUAL(r.code, 0);
    return nlohmann::json::parse(r.output);
  }
};

/// A JSON value as text: a string as it is, anything else dumped.
std::string str(const nlohmann::json& j) {
  return j.is_string() ? j.get<std::string>() : j.dump();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

CAF_TEST(each level of the model chain reaches the agent and the ledger) {
  agents a;
  // A task naming agent "reviewer" runs the repository's preset of that
  // name, with roleModels.reviewer.
  a.s.write(".taskforce/agents/reviewer.json",
            preset_json(a.script, "worker", "ok"));
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"(", "workerModel": "w/worker",
                 "roleModels": {"reviewer": "r/reviewer"}}})");
  a.s.tasks("- [ ] Own model\n  - files: out/t1.txt\n  - model: t/own\n"
            "- [ ] Reviewer role\n  - files: out/t2.txt\n"
            "  - agent: reviewer\n"
            "- [ ] Run default\n  - files: out/t3.txt\n");
  auto r = a.s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  auto calls = a.calls("worker");
  std::sort(calls.begin(), calls.end());
  CAF_CHECK_EQUAL(calls,
                  (std::vector<std::string>{"worker r/reviewer start 1 t2",
                                            "worker t/own start 1 t1",
                                            "worker w/worker start 1 t3"}));
  // The model is recorded per attempt and shown by logs.
  CAF_CHECK_EQUAL(str(a.logs_json("t1")["attempts"][0]["model"]), "t/own");
  CAF_CHECK_EQUAL(str(a.logs_json("t2")["attempts"][0]["model"]), "r/reviewer");
  CAF_CHECK_EQUAL(str(a.logs_json("t3")["attempts"][0]["model"]), "w/worker");
  auto human = a.s.tf({"logs", "t2"});
  CAF_CHECK(contains(human.output, "attempt 1: passed"));
  CAF_CHECK(contains(human.output, "model r/reviewer"));
  // The merged work was written on that model.
  CAF_CHECK_EQUAL(read_file(a.s.root / "out/t1.txt"), "by t/own\n");
}

CAF_TEST(without any model the agent keeps its default and none is recorded) {
  agents a;
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"("}})");
  a.s.tasks("- [ ] Plain\n  - files: out/t1.txt\n");
  auto r = a.s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(a.calls("worker"),
                  (std::vector<std::string>{"worker - start 1 t1"}));
  CAF_CHECK(a.logs_json("t1")["attempts"][0]["model"].is_null());
  CAF_CHECK(!contains(a.s.tf({"logs", "t1"}).output, "model"));
}

CAF_TEST(retries after failures run on the fallback models in order) {
  agents a;
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"(", "workerModel": "a/primary",
                 "fallbackModels": ["b/first", "c/last"],
                 "maxAttempts": 4}})");
  a.s.tasks("- [ ] Hard\n  - files: out/t1.txt\n\n"
            "  FAIL-UNLESS-MODEL c/last\n");
  auto r = a.s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(a.calls("worker"),
                  (std::vector<std::string>{"worker a/primary start 1 t1",
                                            "worker b/first start 2 t1",
                                            "worker c/last start 3 t1"}));
  auto attempts = a.logs_json("t1")["attempts"];
  CAF_REQUIRE_EQUAL(attempts.size(), 3u);
  CAF_CHECK_EQUAL(str(attempts[0]["model"]), "a/primary");
  CAF_CHECK_EQUAL(str(attempts[0]["state"]), "failed");
  CAF_CHECK_EQUAL(str(attempts[1]["model"]), "b/first");
  CAF_CHECK_EQUAL(str(attempts[2]["model"]), "c/last");
  CAF_CHECK_EQUAL(str(attempts[2]["state"]), "passed");
  auto human = a.s.tf({"logs", "t1"}).output;
  CAF_CHECK(contains(human, "attempt 2: failed (exit 1), model b/first"));
  CAF_CHECK_EQUAL(read_file(a.s.root / "out/t1.txt"), "by c/last\n");
}

CAF_TEST(the fallback a resume retries on follows the failures before it) {
  agents a;
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"(", "workerModel": "a/primary",
                 "fallbackModels": ["b/first", "c/last"],
                 "maxAttempts": 1}})");
  a.s.tasks("- [ ] Hard\n  - files: out/t1.txt\n\n"
            "  FAIL-UNLESS-MODEL c/last\n");
  // Each run or resume gives the task one attempt; the run pauses after it.
  CAF_CHECK_NOT_EQUAL(a.s.tf({"run", "TASKS.md"}).code, 0);
  CAF_CHECK_NOT_EQUAL(a.s.tf({"resume"}).code, 0);
  CAF_CHECK_EQUAL(a.s.tf({"resume"}).code, 0);
  CAF_CHECK_EQUAL(a.calls("worker"),
                  (std::vector<std::string>{"worker a/primary start 1 t1",
                                            "worker b/first start 2 t1",
                                            "worker c/last start 3 t1"}));
  CAF_CHECK_EQUAL(std::string{to_string(a.s.task("t1").state)}, "done");
}

CAF_TEST(skills are listed in the prompt and contract none leaves it out) {
  agents a;
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"(",
                 "workerSkills": ["test-driven-development", "  git-hygiene "],
                 "workerContract": "none",
                 "workerInstructions": "Report our way."}})");
  a.s.tasks("- [ ] Skilled\n  - files: out/t1.txt\n");
  auto r = a.s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  auto prompt = a.prompt("worker", 1);
  CAF_CHECK(contains(prompt, "## Skills\n\nUse these skills while you work "
                             "on the task:\n\n- test-driven-development\n"
                             "- git-hygiene\n"));
  CAF_CHECK(!contains(prompt, "## How to report"));
  CAF_CHECK(!contains(prompt, "```json"));
  CAF_CHECK(contains(prompt, "Report our way."));
}

CAF_TEST(the generic contract stays in the prompt by default) {
  agents a;
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"("}})");
  a.s.tasks("- [ ] Plain\n  - files: out/t1.txt\n");
  CAF_CHECK_EQUAL(a.s.tf({"run", "TASKS.md"}).code, 0);
  auto prompt = a.prompt("worker", 1);
  CAF_CHECK(contains(prompt, "## How to report"));
  CAF_CHECK(!contains(prompt, "## Skills"));
}

CAF_TEST(a verifier rejection is repaired like a failed gate) {
  agents a;
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"(", "verifierEnabled": true,
                 "verifierPreset": ")"
                 + a.verifier("reject-once") + R"(",
                 "verifierPrompt": "Be strict about endings."}})");
  a.s.tasks("- [ ] Write it\n  - files: out/t1.txt\n"
            "  - verify: test -s out/t1.txt\n");
  auto r = a.s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(
    a.calls("worker"),
    (std::vector<std::string>{"worker - start 1 t1", "worker - repair 1 t1"}));
  CAF_CHECK_EQUAL(a.calls("verifier"),
                  (std::vector<std::string>{"verifier - verify 1 t1",
                                            "verifier - verify 1 t1"}));
  // The verifier saw the task's work, in a checkout that is not the task's.
  auto log = a.log();
  CAF_CHECK(std::find(log.begin(), log.end(), "seen: by -") != log.end());
  CAF_CHECK(std::find(log.begin(), log.end(), "seen: REPAIRED") != log.end());
  for (auto& l : log)
    if (l.rfind("verifier ", 0) == 0)
      CAF_CHECK(contains(l, "/.taskforce/review/"));
  // Its prompt has the task, the diff and the run's verifier instructions.
  auto vp = a.prompt("verifier", 1);
  CAF_CHECK(contains(vp, "# Review of task t1: Write it"));
  CAF_CHECK(contains(vp, "+by -"));
  CAF_CHECK(contains(vp, "Be strict about endings."));
  // The repair turn carried the reason.
  auto repair = a.prompt("worker", 2);
  CAF_CHECK(contains(repair, "an independent reviewer rejected the work"));
  CAF_CHECK(contains(repair, "out/t1.txt must end with REPAIRED"));
  // One attempt, one repair; the repaired work is merged.
  auto attempts = a.logs_json("t1")["attempts"];
  CAF_REQUIRE_EQUAL(attempts.size(), 1u);
  CAF_CHECK_EQUAL(str(attempts[0]["repairs"]), "1");
  CAF_CHECK_EQUAL(std::string{to_string(a.s.task("t1").state)}, "done");
  CAF_CHECK_EQUAL(read_file(a.s.root / "out/t1.txt"), "by -\nREPAIRED\n");
  // No scratch checkout or branch is left.
  CAF_CHECK(!std::filesystem::exists(a.s.root / ".taskforce/review"
                                     / a.s.run().id / "t1"));
  CAF_CHECK_EQUAL(git_ok(a.s.root, {"branch", "--list", "taskforce-review/*"}),
                  "");
}

CAF_TEST(a verifier that keeps rejecting fails the attempt with its reason) {
  agents a;
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"(", "verifierEnabled": true,
                 "verifierPreset": ")"
                 + a.verifier("reject") + R"(", "maxAttempts": 1,
                 "maxRepairs": 1}})");
  a.s.tasks("- [ ] Write it\n  - files: out/t1.txt\n");
  auto r = a.s.tf({"run", "TASKS.md"});
  CAF_CHECK_NOT_EQUAL(r.code, 0);
  auto t = a.s.task("t1");
  CAF_CHECK_EQUAL(std::string{to_string(t.state)}, "failed");
  CAF_CHECK(contains(t.reason.value_or(""),
                     "verifier rejected: the file says nothing useful"));
  CAF_CHECK_EQUAL(a.calls("verifier").size(), 2u);
  // Nothing reached main.
  CAF_CHECK(!std::filesystem::exists(a.s.root / "out/t1.txt"));
}

CAF_TEST(a verifier without a verdict fails the attempt without a repair) {
  agents a;
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"(", "verifierEnabled": true,
                 "verifierPreset": ")"
                 + a.verifier("silent") + R"(", "maxAttempts": 1}})");
  a.s.tasks("- [ ] Write it\n  - files: out/t1.txt\n");
  CAF_CHECK_NOT_EQUAL(a.s.tf({"run", "TASKS.md"}).code, 0);
  auto t = a.s.task("t1");
  CAF_CHECK_EQUAL(std::string{to_string(t.state)}, "failed");
  CAF_CHECK(contains(t.reason.value_or(""), "verifier: the verifier gave no "
                                            "verdict"));
  CAF_CHECK_EQUAL(a.calls("worker").size(), 1u);
}

CAF_TEST(what a verifier writes is discarded and reported) {
  agents a;
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"(", "verifierEnabled": true,
                 "verifierPreset": ")"
                 + a.verifier("write") + R"("}})");
  a.s.tasks("- [ ] Write it\n  - files: out/t1.txt\n"
            "  - verify: test -s out/t1.txt\n");
  auto r = a.s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(std::string{to_string(a.s.task("t1").state)}, "done");
  // The worker's file reached main, the verifier's edits did not.
  CAF_CHECK_EQUAL(read_file(a.s.root / "out/t1.txt"), "by -\n");
  CAF_CHECK(!std::filesystem::exists(a.s.root / "stray.txt"));
  auto show = git_ok(a.s.root, {"show", "--stat", "--format=", "HEAD"});
  CAF_CHECK(!contains(show, "stray.txt"));
  // logs says what was thrown away.
  auto human = a.s.tf({"logs", "t1"}).output;
  CAF_CHECK(contains(human, "verifier.log"));
  CAF_CHECK(contains(human, "verifier changes discarded: out/t1.txt, "
                            "stray.txt"));
  CAF_CHECK_EQUAL(git_ok(a.s.root, {"branch", "--list", "taskforce-review/*"}),
                  "");
}

CAF_TEST(in place the verifier gets the task work in a scratch copy) {
  agents a;
  a.s.set_config(R"({"run": {"worker": "agent", "agentPreset": ")"
                 + a.worker.string() + R"(", "mode": "assist",
                 "verifierEnabled": true, "verifierPreset": ")"
                 + a.verifier("write") + R"("}})");
  a.s.tasks("- [ ] Write it\n  - files: out/t1.txt\n");
  auto r = a.s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(std::string{to_string(a.s.task("t1").state)}, "done");
  // Assist mode leaves the work in the checkout: the worker's, not the
  // verifier's.
  CAF_CHECK_EQUAL(read_file(a.s.root / "out/t1.txt"), "by -\n");
  CAF_CHECK(!std::filesystem::exists(a.s.root / "stray.txt"));
  auto log = a.log();
  CAF_CHECK(std::find(log.begin(), log.end(), "seen: by -") != log.end());
}

CAF_TEST(a shell task is reviewed by the agent verifier all the same) {
  agents a;
  a.s.set_config(R"({"run": {"verifierEnabled": true, "verifierPreset": ")"
                 + a.verifier("reject-once") + R"("}})");
  a.s.tasks("- [ ] Write it\n  - files: out/t1.txt\n"
            "  - run: mkdir -p out && echo shell > out/t1.txt && "
            "{ grep -q REPAIRED && echo REPAIRED >> out/t1.txt; true; }\n");
  auto r = a.s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  // The shell worker read the rejection on its standard input.
  CAF_CHECK_EQUAL(read_file(a.s.root / "out/t1.txt"), "shell\nREPAIRED\n");
  CAF_CHECK_EQUAL(a.calls("verifier"),
                  (std::vector<std::string>{"verifier - verify 1 t1",
                                            "verifier - verify 1 t1"}));
}
