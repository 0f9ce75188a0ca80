#define CAF_SUITE unit.worker_script
#include <caf/test/unit_test.hpp>

#include <string>
#include <vector>

#include "src/worker/script.hpp"
#include "test.hpp"

using namespace taskforce;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_worker_script(text, "s.json");
  } catch (const script_error& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

CAF_TEST(a script lists invocations per task and the last one repeats) {
  auto s = parse_worker_script(R"({
    "tasks": {
      "t1": [{"marker": "blocked", "reason": "first"},
             {"write": {"a.txt": "x"}, "append": {"b.txt": "y"},
              "delete": ["c.txt"], "print": "p", "stderr": "e",
              "sleep_ms": 5, "report": {"status": "done"}, "exit": 4}],
      "t2": [{"hang": true, "hang_children": 2, "escape_group": true}]
    },
    "default": [{"crash": true}]
  })",
                               "s.json");
  auto first = s.step_for("t1", 1);
  CAF_REQUIRE(first);
  CAF_CHECK_EQUAL(first->marker, "blocked");
  CAF_CHECK_EQUAL(first->reason, "first");
  auto second = s.step_for("t1", 2);
  CAF_REQUIRE(second);
  CAF_CHECK_EQUAL(second->write.size(), 1u);
  CAF_CHECK_EQUAL(second->write[0].first, "a.txt");
  CAF_CHECK_EQUAL(second->append[0].second, "y");
  CAF_CHECK_EQUAL(second->remove, std::vector<std::string>{"c.txt"});
  CAF_CHECK_EQUAL(second->print, "p");
  CAF_CHECK_EQUAL(second->print_stderr, "e");
  CAF_CHECK_EQUAL(second->sleep_ms, 5u);
  CAF_CHECK_EQUAL(second->report_json, "{\"status\":\"done\"}");
  CAF_CHECK_EQUAL(second->exit_code, 4);
  CAF_CHECK_EQUAL(s.step_for("t1", 9), second);
  auto hang = s.step_for("t2", 1);
  CAF_CHECK(hang->hang && hang->escape_group);
  CAF_CHECK_EQUAL(hang->hang_children, 2u);
  CAF_CHECK(s.step_for("t7", 1)->crash);
  auto no_default = parse_worker_script(R"({"tasks": {"t1": [{}]}})", "x");
  CAF_CHECK(no_default.step_for("t2", 1) == nullptr);
  CAF_CHECK_EQUAL(no_default.step_for("t1", 1)->exit_code, 0);
}

CAF_TEST(bad scripts are refused naming the file the key and the rule) {
  struct bad_case {
    std::string text;
    std::string error;
  };
  std::vector<bad_case> cases = {
    {"{\"tasks\": {\"t1\": [}}",
     "s.json:1:19: [json.exception.parse_error.101]"},
    {"[]", "s.json: a script must be a JSON object"},
    {"{}", "s.json: \"tasks\" is required"},
    {"{\"task\": {}}", "s.json: unknown key \"task\" (did you mean "
                       "\"tasks\"?)"},
    {"{\"tasks\": []}", "s.json: tasks: must be an object"},
    {"{\"tasks\": {\"t1\": []}}",
     "s.json: tasks.t1: must be a non-empty array of invocations"},
    {"{\"tasks\": {\"t1\": [3]}}",
     "s.json: tasks.t1[0]: an invocation must be an object"},
    {"{\"tasks\": {\"t1\": [{\"slep_ms\": 1}]}}",
     "s.json: tasks.t1[0]: unknown key \"slep_ms\" (did you mean "
     "\"sleep_ms\"?)"},
    {"{\"tasks\": {\"t1\": [{\"sleep_ms\": -1}]}}",
     "s.json: tasks.t1[0].sleep_ms: must be an integer from 0 to 86400000"},
    {"{\"tasks\": {\"t1\": [{\"exit\": 256}]}}",
     "s.json: tasks.t1[0].exit: must be an integer from 0 to 255"},
    {"{\"tasks\": {\"t1\": [{\"write\": {\"/etc/x\": \"\"}}]}}",
     "s.json: tasks.t1[0].write./etc/x: \"/etc/x\" must be a relative path"},
    {"{\"tasks\": {\"t1\": [{\"write\": {\"a/../../x\": \"\"}}]}}",
     "s.json: tasks.t1[0].write.a/../../x: \"a/../../x\" must stay inside "
     "the worktree"},
    {"{\"tasks\": {\"t1\": [{\"delete\": [\".git/HEAD\"]}]}}",
     "s.json: tasks.t1[0].delete[0]: \".git/HEAD\" must stay inside"},
    {"{\"tasks\": {\"t1\": [{\"write\": {\"a\": 1}}]}}",
     "s.json: tasks.t1[0].write.a: must be a string"},
    {"{\"tasks\": {\"t1\": [{\"write\": [\"a\"]}]}}",
     "s.json: tasks.t1[0].write: must be an object of path -> text"},
    {"{\"tasks\": {\"t1\": [{\"report\": \"done\"}]}}",
     "s.json: tasks.t1[0].report: must be an object"},
    {"{\"tasks\": {\"t1\": [{\"marker\": \"ok\"}]}}",
     "s.json: tasks.t1[0].marker: must be \"done\" or \"blocked\""},
    {"{\"tasks\": {\"t1\": [{\"reason\": \"x\"}]}}",
     "s.json: tasks.t1[0].reason: needs a \"marker\""},
    {"{\"tasks\": {\"t1\": [{\"hang\": 1}]}}",
     "s.json: tasks.t1[0].hang: must be true or false"},
    {"{\"tasks\": {\"t1\": [{\"hang\": true, \"crash\": true}]}}",
     "s.json: tasks.t1[0]: \"crash\" and \"hang\" exclude each other"},
    {"{\"tasks\": {\"t1\": [{\"escape_group\": true}]}}",
     "s.json: tasks.t1[0].escape_group: needs \"hang_children\""},
    {"{\"tasks\": {\"t1\": [{\"hang_children\": 17}]}}",
     "s.json: tasks.t1[0].hang_children: must be an integer from 0 to 16"},
    {"{\"default\": {}}",
     "s.json: default: must be a non-empty array of invocations"},
  };
  for (auto& c : cases) {
    auto got = error_of(c.text);
    CAF_MESSAGE("case " << c.text << " -> " << got);
    CAF_CHECK_EQUAL(got.rfind(c.error, 0), 0u);
  }
}

CAF_TEST(a script file that cannot be read is named) {
  try {
    load_worker_script("/nonexistent/script.json");
    CAF_FAIL("expected a script_error");
  } catch (const script_error& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "/nonexistent/script.json: cannot read the worker "
                    "script");
  }
}

CAF_TEST(the worker command line names the script the task and the invocation) {
  CAF_CHECK_EQUAL(scripted_worker_argv("/bin/taskforce", "/r/s.json", "t3", 2),
                  (std::vector<std::string>{"/bin/taskforce", "scripted-worker",
                                            "--script", "/r/s.json", "--task",
                                            "t3", "--invocation", "2"}));
}
