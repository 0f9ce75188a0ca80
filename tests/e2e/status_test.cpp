// `taskforce status` as a person and a program read it: the reason of every
// state, the tasks waiting on a person with the command each needs, and a
// ledger of the first schema read and upgraded in place.
#define CAF_SUITE e2e.status
#include <caf/test/unit_test.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"
#include "src/store/mailbox.hpp"
#include "src/store/schema.hpp"
#include "src/store/sqlite.hpp"

using namespace taskforce;
using namespace taskforce::test;
using json = nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The `status --json` task with `id`.
json task_of(const json& status, const std::string& id) {
  for (auto& t : status["tasks"])
    if (t["id"] == id)
      return t;
  return json{};
}

} // namespace

CAF_TEST(
  status gives the reason of each waiting task and the command it needs) {
  scenario s;
  s.set_config(R"({"run": {"autoMerge": false, "maxAttempts": 1,
                  "repairOnFailure": false, "continueOnError": true}})");
  s.tasks("- [ ] Gate\n  - files: d.txt\n  - run: echo d > d.txt\n"
          "  - verify: echo GATE-SAYS-NO; exit 1\n"
          "- [ ] Ask\n  - files: b.txt\n"
          "  - run: echo '[task:blocked] which database?'\n"
          "- [ ] Review me\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "- [ ] Decide [NEEDS DECISION: which vendor]\n  - files: c.txt\n"
          "  - run: echo c > c.txt\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  auto r = s.tf({"status", "--json"});
  CAF_REQUIRE_EQUAL(r.code, 0);
  auto j = json::parse(r.output);
  CAF_CHECK_EQUAL(j["run"]["state"], "paused");
  CAF_CHECK(j["run"]["reason"].is_string());
  auto gate = task_of(j, "t1");
  CAF_CHECK_EQUAL(gate["state"], "failed");
  CAF_CHECK(contains(gate["reason"].get<std::string>(), "GATE-SAYS-NO"));
  auto ask = task_of(j, "t2");
  CAF_CHECK_EQUAL(ask["state"], "blocked");
  CAF_CHECK_EQUAL(ask["reason"], "which database?");
  auto review = task_of(j, "t3");
  CAF_CHECK_EQUAL(review["state"], "review");
  CAF_CHECK(review["reason"].is_string());
  auto held = task_of(j, "t4");
  CAF_CHECK_EQUAL(held["state"], "held");
  CAF_CHECK(contains(held["reason"].get<std::string>(), "NEEDS DECISION"));
  // An answer waits for the blocked task.
  {
    auto db = store::ledger::open(s.root / ".taskforce" / "ledger.sqlite");
    store::mailbox{db}.post({j["run"]["id"].get<std::string>(),
                             std::string{"t2"}, store::mail_kind::answer,
                             "postgres", std::nullopt},
                            store::wall_clock_ms());
  }
  auto table = s.tf({"status"});
  CAF_CHECK_EQUAL(table.code, 0);
  CAF_MESSAGE(table.output);
  CAF_CHECK(contains(table.output, "awaiting approval"));
  CAF_CHECK(contains(table.output, "which database?"));
  CAF_CHECK(contains(table.output, "(1 message not read yet)"));
  CAF_CHECK(contains(table.output, "GATE-SAYS-NO"));
  CAF_CHECK(contains(table.output, "waiting on you:\n"));
  CAF_CHECK(contains(table.output, "  t3 awaits approval: taskforce approve t3,"
                                   " or taskforce reject t3 REASON\n"));
  CAF_CHECK(contains(table.output, "taskforce answer t2 TEXT\n"));
  CAF_CHECK(contains(table.output, "  t4 is held: taskforce approve t4 lifts "
                                   "the hold"));
  // Nothing waits on a person for a failed task.
  CAF_CHECK(!contains(table.output, "  t1 "));
}

CAF_TEST(a ledger of the first schema is read as it is and upgraded by the first
           command that writes) {
  scenario s;
  auto file = s.root / ".taskforce" / "ledger.sqlite";
  store::schema::create(file, 1);
  {
    // Rows as the first taskforce wrote them: a paused run, one task
    // blocked on a question.
    store::sqlite::connection raw{file, store::sqlite::open_mode::read_write};
    raw.exec(R"sql(
INSERT INTO runs VALUES ('20260101-000000-abcd', 'TASKS.md', 'h', 'main',
  'paused', 't1 blocked: which database?', 1000, 1900, 2, '{}');
INSERT INTO tasks (run_id, task_id, idx, title, state, attempts, reason,
  updated_ms) VALUES ('20260101-000000-abcd', 't1', 1, 'Ask', 'blocked', 1,
  'which database?', 1100);
INSERT INTO events (run_id, task_id, at_ms, kind, data) VALUES
  ('20260101-000000-abcd', NULL, 1000, 'run.created', '{}');
)sql",
             "version 1 rows");
  }
  auto before = read_file(file);
  auto status = s.tf({"status", "--json"});
  CAF_CHECK_EQUAL(status.code, 0);
  auto j = json::parse(status.output, nullptr, false);
  CAF_REQUIRE(j.is_object());
  CAF_CHECK_EQUAL(j["run"]["id"], "20260101-000000-abcd");
  auto t1 = task_of(j, "t1");
  CAF_CHECK_EQUAL(t1["reason"], "which database?");
  CAF_CHECK_EQUAL(s.tf({"list"}).code, 0);
  CAF_CHECK_EQUAL(s.tf({"logs", "t1"}).code, 0);
  // Reading changed nothing.
  CAF_CHECK_EQUAL(read_file(file), before);
  CAF_CHECK_EQUAL(s.ledger().schema_version(), 1);
  // A worker's report is the first write: the ledger becomes current.
  proc::run_options o;
  o.argv = {TASKFORCE_BINARY, "report", "I", "need", "an", "answer"};
  o.env = {{"TASKFORCE_RUN_ID", "20260101-000000-abcd"},
           {"TASKFORCE_TASK_ID", "t1"},
           {"TASKFORCE_REPO", s.root.string()}};
  o.log_file = (s.dir.path() / "report.log").string();
  CAF_CHECK_EQUAL(proc::run(o).exit_code, 0);
  CAF_CHECK_EQUAL(s.ledger().schema_version(), store::schema::current);
  auto logs = s.tf({"logs", "t1"});
  CAF_CHECK(contains(logs.output, "I need an answer"));
  CAF_CHECK_EQUAL(json::parse(s.tf({"status", "--json"}).output), j);
}
