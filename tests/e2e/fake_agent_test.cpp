// The `agent` backend end to end with a fake agent program: prompt
// composition, a preset from the repository, its expansion, the run in the
// worktree, the report and the verdict.
#define CAF_SUITE e2e.fake_agent
#include <caf/test/unit_test.hpp>

#include <chrono>
#include <fstream>
#include <string>

#include "src/proc/run.hpp"
#include "src/report/report.hpp"
#include "src/worker/agent_preset.hpp"
#include "src/worker/prompt.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace std::chrono_literals;

namespace {

const std::string fake_agent
  = std::string{TASKFORCE_SOURCE_DIR} + "/tests/data/fake-agent.sh";

struct fixture {
  test::temp_dir repo;
  std::string worktree;
  std::string agent_log;

  fixture() {
    worktree = (repo.path() / ".taskforce/worktrees/r1/t1").string();
    std::filesystem::create_directories(worktree);
    agent_log = (repo.path() / "agent.log").string();
    // Passing the prompt as an argument, the model as an optional group.
    preset("fake", R"(["sh", ")" + fake_agent
                     + R"(", "-p", "{prompt}", ["--model", "{model}"],
                        "--worktree", "{worktree}"])");
    // Through a file, and through standard input.
    preset("fake-file", R"(["sh", ")" + fake_agent
                          + R"(", "--prompt-file", "{prompt_file}"])");
    preset("fake-stdin", R"(["sh", ")" + fake_agent + R"("])",
           R"(, "stdin": "{prompt_file}")");
  }

  void preset(const std::string& name, const std::string& argv,
              const std::string& extra = "") {
    repo.write(".taskforce/agents/" + name + ".json",
               R"({"argv": )" + argv + R"(, "env": {"FAKE_AGENT_TASK":
               "{task_id}", "FAKE_AGENT_LOG": ")"
                 + agent_log + "\"}" + extra + "}");
  }

  prompt_request request() {
    prompt_request r;
    r.task_id = "t1";
    r.title = "Add the cache";
    r.body = "Write the cache module.";
    r.files = {"src/cache.txt", "src/gen/**", "docs/cache.md"};
    r.verify = "test -f src/cache.txt";
    return r;
  }

  /// Composes, writes the prompt file outside the worktree, expands the
  /// preset and runs it in the worktree, as the worker does.
  verdict run_agent(const std::string& preset_name, const prompt_request& r,
                    const std::string& model = "") {
    agent_values v;
    v.prompt = compose_prompt(r);
    v.prompt_file = (repo.path() / "prompt.md").string();
    std::ofstream(v.prompt_file) << v.prompt;
    v.model = model;
    v.worktree = worktree;
    v.task_id = r.task_id;
    v.title = r.title;
    v.files = r.files;
    auto cmd = expand_agent_preset(
      load_agent_preset(preset_name, repo.path().string()), v);
    proc::run_options o;
    o.argv = cmd.argv;
    o.env = cmd.env;
    o.stdin_file = cmd.stdin_file;
    o.cwd = worktree;
    o.log_file = (repo.path() / "worker.log").string();
    o.timeout = 30s;
    last = proc::run(o);
    return judge_worker(worker_backend::agent, last, read_report(last.tail));
  }

  std::string file(const std::string& path) {
    return test::read_file(std::filesystem::path{worktree} / path);
  }

  proc::run_result last;
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(fake_agent_tests, fixture)

CAF_TEST(the agent gets the prompt model and worktree and its report is read) {
  auto v = run_agent("fake", request(), "test/model-1");
  CAF_CHECK_EQUAL(to_string(v.kind), std::string{"done"});
  CAF_CHECK_EQUAL(v.reason, "wrote 2 files");
  CAF_REQUIRE(v.report && v.report->usage);
  CAF_CHECK_EQUAL(v.report->files,
                  (std::vector<std::string>{"src/cache.txt", "docs/cache.md"}));
  CAF_CHECK_EQUAL(v.report->usage->input_tokens, 100u);
  CAF_CHECK_EQUAL(file("src/cache.txt"),
                  "written by fake-agent (model test/model-1)\n");
  auto log = test::read_file(agent_log);
  CAF_CHECK(log.find("task=t1\nmodel=test/model-1\nworktree=" + worktree)
            != std::string::npos);
  auto real = std::filesystem::canonical(worktree).string();
  CAF_CHECK(log.find("pwd=" + real + "\n") != std::string::npos);
}

CAF_TEST(without a model the optional flag is left out) {
  auto v = run_agent("fake", request());
  CAF_CHECK_EQUAL(to_string(v.kind), std::string{"done"});
  CAF_CHECK_EQUAL(file("docs/cache.md"),
                  "written by fake-agent (model (default))\n");
}

CAF_TEST(the prompt reaches the agent through a file or standard input) {
  auto size = std::to_string(compose_prompt(request()).size());
  for (auto name : {"fake-file", "fake-stdin"}) {
    CAF_MESSAGE("preset " << name);
    std::filesystem::remove(agent_log);
    auto v = run_agent(name, request());
    CAF_CHECK_EQUAL(to_string(v.kind), std::string{"done"});
    // $(cat) drops the prompt's final newline.
    auto log = test::read_file(agent_log);
    CAF_CHECK(log.find("prompt-bytes=" + std::to_string(std::stoul(size) - 1))
              != std::string::npos);
  }
}

CAF_TEST(a repair round reaches the agent with the gate output) {
  auto r = request();
  r.repair_round = 1;
  r.gate_result = "exit 1";
  r.gate_tail = "src/cache.txt: missing\n";
  auto v = run_agent("fake", r);
  CAF_CHECK_EQUAL(to_string(v.kind), std::string{"done"});
  CAF_CHECK_EQUAL(file("src/cache.txt"),
                  "written by fake-agent (model (default))\nrepaired\n");
}

CAF_TEST(an agent that blocks is blocked with its reason) {
  auto r = request();
  r.body = "FAKE-BLOCK: stop here.";
  auto v = run_agent("fake", r);
  CAF_CHECK_EQUAL(to_string(v.kind), std::string{"blocked"});
  CAF_CHECK_EQUAL(v.reason, "the task asked me to block");
}

CAF_TEST(an agent that does not report fails with no report) {
  auto r = request();
  r.contract = false;
  auto v = run_agent("fake", r);
  CAF_CHECK(last.success());
  CAF_CHECK_EQUAL(to_string(v.kind), std::string{"failed"});
  CAF_CHECK_EQUAL(v.reason, "no report (exit 0)");
}

CAF_TEST_FIXTURE_SCOPE_END()
