#define CAF_SUITE unit.plan_report
#include <caf/test/unit_test.hpp>

#include <nlohmann/json.hpp>

#include "src/plan/report.hpp"
#include "src/taskfile/task_json.hpp"

using namespace taskforce;
using nlohmann::json;

namespace {

plan::plan_result plan_of(const std::string& text, size_t limit = 3) {
  taskfile::parse_options opts;
  return plan::make_plan(taskfile::parse(text, "T.md", opts), limit);
}

} // namespace

CAF_TEST(the plan JSON holds every task as task_to_json renders it) {
  auto plan = plan_of("- [ ] Quote \"this\" and \\ that\n"
                      "  files: a b.txt, src/*.ts\n"
                      "  verify: echo \"ok\"\n"
                      "  timeout: 2s\n"
                      "  risk: high\n"
                      "- [x] Done\n  files: x\n"
                      "- [ ] Last\n  deps: 1, 2\n  locks: db\n");
  CAF_REQUIRE(plan.graph);
  auto doc = json::parse(plan::plan_json(plan));
  CAF_REQUIRE_EQUAL(doc["tasks"].size(), 3u);
  for (size_t i = 0; i < 3; ++i)
    CAF_CHECK_EQUAL(
      doc["tasks"][i],
      json::parse(taskfile::task_to_json(plan.graph->task(i)).dump()));
  CAF_CHECK_EQUAL(doc["tasks"][0]["title"], "Quote \"this\" and \\ that");
  CAF_CHECK_EQUAL(doc["tasks"][0]["timeout_ms"], 2000);
  CAF_CHECK_EQUAL(doc["conflicts"], json::parse(R"([["t1", "t3"]])"));
  CAF_CHECK_EQUAL(doc["waves"], json::parse(R"([["t1"], ["t3"]])"));
  CAF_CHECK(doc["errors"].empty());
}

CAF_TEST(bytes that are not UTF - 8 still print as valid JSON) {
  auto plan = plan_of("- [ ] Bad \xFF byte and \x01 control \xE2\x82\n"
                      "  files: a\n");
  auto doc = json::parse(plan::plan_json(plan));
  CAF_CHECK_EQUAL(doc["tasks"][0]["title"],
                  "Bad \xEF\xBF\xBD byte and \x01 control \xEF\xBF\xBD"
                  "\xEF\xBF\xBD");
}

CAF_TEST(errors print with empty tasks conflicts and waves) {
  auto plan = plan_of("- [ ] A\n  priority: x\n");
  auto doc = json::parse(plan::plan_json(plan));
  CAF_CHECK(doc["tasks"].empty());
  CAF_CHECK(doc["conflicts"].empty());
  CAF_CHECK(doc["waves"].empty());
  CAF_CHECK_EQUAL(doc["errors"], json::parse(R"([{"line": 2,
                    "message": "priority: \"x\" is not an integer"}])"));
}

CAF_TEST(the table fits narrow widths and keeps ids whole) {
  auto plan = plan_of("- [ ] A rather long title that will not fit in a "
                      "narrow terminal at all\n"
                      "  id: first-task\n"
                      "  files: src/some/deeply/nested/path/file.ts, docs/\n"
                      "  verify: npm test -- --runInBand something long\n");
  auto text = plan::plan_text(plan, 60);
  size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    auto line = text.substr(start, end - start);
    size_t cols = 0;
    for (unsigned char c : line)
      cols += (c & 0xC0) != 0x80;
    CAF_CHECK_LESS_OR_EQUAL(cols, 60u);
    start = end + 1;
  }
  CAF_CHECK(text.find("first-task ") != std::string::npos);
  CAF_CHECK(text.find("waves:\n  1: first-task\n") != std::string::npos);
}

CAF_TEST(the table shows each command and a block by its first line) {
  auto plan = plan_of("- [ ] One\n"
                      "  files: a\n"
                      "  run: echo one > a\n"
                      "- [ ] Two\n"
                      "  files: b\n"
                      "  run: |\n"
                      "    echo two > b\n"
                      "    echo more >> b\n"
                      "  verify: grep -q two b\n"
                      "- [ ] Three\n"
                      "  files: c\n");
  CAF_REQUIRE(plan.graph);
  auto text = plan::plan_text(plan, 200);
  CAF_CHECK(text.find("RUN") != std::string::npos);
  CAF_CHECK(text.find("echo one > a") != std::string::npos);
  CAF_CHECK(text.find("echo two > b (+1 line)") != std::string::npos);
  CAF_CHECK(text.find("echo more") == std::string::npos);
  CAF_CHECK(text.find("grep -q two b") != std::string::npos);
  auto doc = json::parse(plan::plan_json(plan));
  CAF_CHECK_EQUAL(doc["tasks"][1]["run"], "echo two > b\necho more >> b");
}
