#define CAF_SUITE unit.prompt
#include <caf/test/unit_test.hpp>

#include <string>

#include "src/report/report.hpp"
#include "src/worker/prompt.hpp"
#include "test.hpp"

using namespace taskforce;

namespace {

prompt_request sample() {
  prompt_request r;
  r.task_id = "t2";
  r.title = "Add the cache layer";
  r.body = "  Cache tokens for 5 minutes.\n";
  r.files = {"src/auth/cache.ts", "src/auth/**"};
  r.verify = "npm test -- auth";
  r.instructions = "Use 2-space indentation.";
  r.instructions_file_text = "Never touch package-lock.json.\n";
  return r;
}

size_t at(const std::string& text, const std::string& part) {
  auto pos = text.find(part);
  if (pos == std::string::npos)
    CAF_FAIL("missing from the prompt: " << part);
  return pos;
}

} // namespace

CAF_TEST(the prompt carries the task its scope its gate the contract and the
           instructions in order) {
  auto p = compose_prompt(sample());
  auto title = at(p, "# Task t2: Add the cache layer\n\nCache tokens for 5 "
                     "minutes.\n");
  auto scope = at(p, "## Write scope\n");
  at(p, "- `src/auth/cache.ts`\n- `src/auth/**`\n");
  auto gate = at(p, "## Verification\n");
  at(p, "```sh\nnpm test -- auth\n```\n");
  auto contract = at(p, "## How to report\n");
  auto extra = at(p, "## Instructions\n\nUse 2-space indentation.\n\nNever "
                     "touch package-lock.json.\n");
  CAF_CHECK_EQUAL(title, 0u);
  CAF_CHECK_LESS(title, scope);
  CAF_CHECK_LESS(scope, gate);
  CAF_CHECK_LESS(gate, contract);
  CAF_CHECK_LESS(contract, extra);
  CAF_CHECK_EQUAL(p.find("## Repair"), std::string::npos);
  CAF_CHECK_EQUAL(p.back(), '\n');
  CAF_CHECK_NOT_EQUAL(p.substr(p.size() - 2), "\n\n");
}

CAF_TEST(a repair round quotes the failing gate safely) {
  auto r = sample();
  r.repair_round = 2;
  r.gate_result = "exit 1";
  r.gate_tail = "FAIL cache.test.ts\n```\nexpected 1 got 2\n";
  auto p = compose_prompt(r);
  at(p, "## Repair (round 2)\n");
  at(p, "the verification command failed (exit 1)");
  // The quoted output holds a ``` line, so the fence is longer.
  at(p, "````text\nFAIL cache.test.ts\n```\nexpected 1 got 2\n````\n");
  CAF_CHECK_LESS(at(p, "## Repair"), at(p, "## How to report"));
}

CAF_TEST(a long gate output is cut to its end) {
  auto r = sample();
  r.repair_round = 1;
  r.gate_tail = std::string(100000, 'a') + "\nthe last line\n";
  auto p = compose_prompt(r);
  at(p, "earlier bytes cut ...]\n");
  at(p, "the last line\n```");
  CAF_CHECK_LESS(p.size(), max_prompt_gate_tail + 4000);
}

CAF_TEST(a retry says why the previous attempt failed) {
  auto r = sample();
  r.previous_failure = "timed out after 1200000 ms";
  at(compose_prompt(r), "## Previous attempt\n\nAn earlier attempt at this "
                        "task failed: timed out after 1200000 ms\n");
}

CAF_TEST(without files gate contract or instructions the prompt says so
         or leaves them out) {
  prompt_request r;
  r.task_id = "t1";
  r.title = "Tidy up";
  r.contract = false;
  auto p = compose_prompt(r);
  at(p, "No files are declared for this task.");
  CAF_CHECK_EQUAL(p.find("## Verification"), std::string::npos);
  CAF_CHECK_EQUAL(p.find("## How to report"), std::string::npos);
  CAF_CHECK_EQUAL(p.find("## Instructions"), std::string::npos);
}

CAF_TEST(an echoed contract never passes for a report) {
  // Agents that echo their prompt and stop must not look done.
  auto reading = read_report(worker_contract_text());
  CAF_CHECK(!reading.report);
  CAF_CHECK(reading.error.rfind("malformed report", 0) == 0);
  // A real report after the echo is what counts.
  reading = read_report(worker_contract_text()
                        + "\n```json\n{\"status\": \"done\"}\n```\n");
  CAF_REQUIRE(reading.report);
  CAF_CHECK(reading.report->status == report_status::done);
}

CAF_TEST(the instructions file is read relative to the repository) {
  test::temp_dir repo;
  repo.write("docs/worker.md", "Be brief.\n");
  CAF_CHECK_EQUAL(
    read_instructions_file("docs/worker.md", repo.path().string()),
    "Be brief.\n");
  CAF_CHECK_EQUAL(read_instructions_file("", repo.path().string()), "");
  try {
    read_instructions_file("docs/none.md", repo.path().string());
    CAF_FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "run.workerInstructionsFile: cannot read "
                      + (repo.path() / "docs/none.md").string()
                      + ": No such file or directory");
  }
}

CAF_TEST(answers and messages join the whole prompt of a fresh session) {
  auto r = sample();
  r.answers = {"Use an LRU cache."};
  r.messages = {"The README needs a line too.", "```not a fence end"};
  auto p = compose_prompt(r);
  auto answer = p.find("## The answer to your question");
  auto messages = p.find("## Messages");
  auto contract = p.find("## How to report");
  CAF_REQUIRE(answer != std::string::npos);
  CAF_REQUIRE(messages != std::string::npos);
  CAF_CHECK_LESS(answer, messages);
  CAF_CHECK_LESS(messages, contract);
  CAF_CHECK(p.find("Use an LRU cache.") != std::string::npos);
  // Quoted in a fence longer than any run of backticks inside.
  CAF_CHECK(p.find("````text\n```not a fence end\n````") != std::string::npos);
}

CAF_TEST(a follow up carries only the turn and never passes for a report) {
  turn_input turn;
  turn.kind = turn_kind::repair;
  turn.repair_round = 2;
  turn.gate_result = "exit 1";
  turn.gate_tail = "FAIL test_cache\n";
  auto p = compose_follow_up(turn);
  CAF_CHECK(p.rfind("## Repair (round 2)", 0) == 0);
  CAF_CHECK(p.find("FAIL test_cache") != std::string::npos);
  CAF_CHECK(p.find("# Task") == std::string::npos);
  CAF_CHECK(p.find("## How to report") == std::string::npos);
  // An agent that echoes it and stops has not reported.
  CAF_CHECK(read_report(p).none());
  turn = {};
  turn.kind = turn_kind::answer;
  turn.answers = {"Yes, drop the old API."};
  p = compose_follow_up(turn);
  CAF_CHECK(p.rfind("## The answer to your question", 0) == 0);
  CAF_CHECK(read_report(p).none());
}

CAF_TEST(skills are listed after the contract and before the instructions) {
  auto r = sample();
  r.skills = {"test-driven-development", "  ", " git-hygiene\n"};
  auto p = compose_prompt(r);
  auto contract = at(p, "## How to report\n");
  auto skills = at(p, "## Skills\n\nUse these skills while you work on the "
                      "task:\n\n- test-driven-development\n- git-hygiene\n\n");
  auto instructions = at(p, "## Instructions\n");
  CAF_CHECK_LESS(contract, skills);
  CAF_CHECK_LESS(skills, instructions);
  // No skills, no section.
  CAF_CHECK(compose_prompt(sample()).find("## Skills") == std::string::npos);
  r.skills = {" ", ""};
  CAF_CHECK(compose_prompt(r).find("## Skills") == std::string::npos);
}

CAF_TEST(without the contract neither prompt names the report format) {
  auto r = sample();
  r.contract = false;
  auto p = compose_prompt(r);
  CAF_CHECK(p.find("## How to report") == std::string::npos);
  CAF_CHECK(p.find("```json") == std::string::npos);
  turn_input t;
  t.kind = turn_kind::repair;
  t.repair_round = 1;
  t.gate_result = "exit 1";
  t.gate_tail = "boom\n";
  auto f = compose_follow_up(t, false);
  CAF_CHECK(f.find("JSON") == std::string::npos);
  CAF_CHECK(f.find("report again as your instructions ask")
            != std::string::npos);
  CAF_CHECK(compose_follow_up(t).find("JSON") != std::string::npos);
}

CAF_TEST(a rejection by the verifier is quoted as its reason) {
  auto r = sample();
  r.repair_round = 1;
  r.gate_result = "rejected by the verifier";
  r.gate_tail = "the cache never expires ``` really";
  r.by_verifier = true;
  auto p = compose_prompt(r);
  at(p, "## Repair (round 1)\n\nYour changes are still in the working tree, "
        "and the verification command passed, but an independent reviewer "
        "rejected the work:\n\n````text\nthe cache never expires ``` "
        "really\n````\n");
  CAF_CHECK(p.find("verification command failed") == std::string::npos);
  turn_input t;
  t.kind = turn_kind::repair;
  t.repair_round = 1;
  t.gate_tail = "the cache never expires";
  t.by_verifier = true;
  CAF_CHECK_EQUAL(turn_text(t),
                  "the verifier rejected the work\nthe cache never expires\n");
}
