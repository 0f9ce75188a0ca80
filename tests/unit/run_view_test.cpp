// What the command line shows of a run: the reason of every state in
// `status --json`, what a task waits for, and the command that unblocks it.
#define CAF_SUITE unit.run_view
#include <caf/test/unit_test.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "src/cli/run_view.hpp"

using namespace taskforce;
using namespace taskforce::cli;
using json = nlohmann::json;

namespace {

store::task_row task(const std::string& id, task_state s,
                     std::optional<std::string> reason = std::nullopt) {
  store::task_row t;
  t.run_id = "r1";
  t.id = id;
  t.state = s;
  t.reason = std::move(reason);
  return t;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

CAF_TEST(status json gives the reason of every state that has one) {
  store::run_status st;
  st.run.id = "r1";
  st.run.file = "TASKS.md";
  st.run.state = run_state::paused;
  st.run.reason = "waiting on you: t1 awaits approval";
  st.tasks.push_back(
    task("t1", task_state::review, "risk high needs approval"));
  st.tasks.push_back(task("t2", task_state::blocked, "which database?"));
  st.tasks.push_back(
    task("t3", task_state::held, "- [ ] Pick [NEEDS DECISION: vendor]"));
  auto failed = task("t4", task_state::failed, "gate failed (exit 1)");
  std::string tail;
  for (int i = 1; i <= 30; ++i)
    tail += "line " + std::to_string(i) + "\n";
  failed.gate_tail = tail;
  st.tasks.push_back(failed);
  st.tasks.push_back(task("t5", task_state::review));
  auto done = task("t6", task_state::done);
  done.gate_tail = "all tests passed\n";
  done.merge_commit = "abc";
  st.tasks.push_back(done);
  auto j = json::parse(to_status_json(st));
  CAF_CHECK_EQUAL(j["run"]["state"], "paused");
  CAF_CHECK_EQUAL(j["run"]["reason"], "waiting on you: t1 awaits approval");
  auto& ts = j["tasks"];
  CAF_CHECK_EQUAL(ts[0]["reason"], "risk high needs approval");
  CAF_CHECK_EQUAL(ts[1]["reason"], "which database?");
  CAF_CHECK_EQUAL(ts[2]["reason"], "- [ ] Pick [NEEDS DECISION: vendor]");
  // The failing output's last 20 lines follow the reason.
  auto r4 = ts[3]["reason"].get<std::string>();
  CAF_CHECK(contains(r4, "gate failed (exit 1)\nline 11\n"));
  CAF_CHECK(contains(r4, "line 30"));
  CAF_CHECK(!contains(r4, "line 10\n"));
  CAF_CHECK_EQUAL(r4.back(), '0');
  CAF_CHECK_EQUAL(ts[4]["reason"], "awaiting approval");
  // A done task's output is no reason.
  CAF_CHECK(ts[5]["reason"].is_null());
  // Exactly the keys the command line promises, in order.
  std::vector<std::string> keys;
  for (auto& [k, v] : ts[0].items())
    keys.push_back(k);
  // (sorted: the parsed object does not keep the order)
  CAF_CHECK_EQUAL(keys, (std::vector<std::string>{
                          "attempts", "branch", "id", "merge_commit",
                          "merge_on_base", "reason", "state", "usage"}));
  CAF_CHECK_EQUAL(ts[0]["usage"]["input_tokens"], 0);
}

CAF_TEST(a failed task keeps the end of a huge single line output) {
  auto t = task("t1", task_state::failed, "worker: exit 2");
  t.gate_tail = std::string(10000, 'x') + "THE END";
  auto r = shown_reason(t).value_or("");
  CAF_CHECK_LESS_OR_EQUAL(r.size(), 2100u);
  CAF_CHECK(contains(r, "worker: exit 2\n"));
  CAF_CHECK(contains(r, "THE END"));
  // Without a recorded reason the output alone is the reason.
  t.reason.reset();
  CAF_CHECK_EQUAL(shown_reason(t).value_or("").substr(0, 1), "x");
}

CAF_TEST(each waiting task names the command a person needs) {
  CAF_CHECK_EQUAL(next_step(task("t1", task_state::review), false),
                  "t1 awaits approval: taskforce approve t1, or taskforce "
                  "reject t1 REASON");
  CAF_CHECK_EQUAL(next_step(task("t2", task_state::blocked, "q?"), true),
                  "t2 awaits an answer: taskforce answer t2 TEXT");
  CAF_CHECK(contains(next_step(task("t2", task_state::blocked, "q?"), false),
                     "taskforce answer t2 TEXT"));
  CAF_CHECK(contains(next_step(task("t3", task_state::held), false),
                     "taskforce approve t3 lifts the hold"));
  for (auto s : {task_state::pending, task_state::running, task_state::done,
                 task_state::failed, task_state::conflict})
    CAF_CHECK_EQUAL(next_step(task("t4", s), true), "");
  CAF_CHECK_EQUAL(awaiting_of(task("t1", task_state::review)),
                  awaiting::approval);
  CAF_CHECK_EQUAL(awaiting_of(task("t1", task_state::blocked)),
                  awaiting::answer);
  CAF_CHECK_EQUAL(awaiting_of(task("t1", task_state::held)),
                  awaiting::decision);
}

CAF_TEST(the run records whether blocked workers wait for an answer) {
  store::run_row run;
  run.config_json = R"({"askUserOnBlocked": true, "maxConcurrency": 2})";
  CAF_CHECK(asks_user_on_blocked(run));
  run.config_json = R"({"askUserOnBlocked": false})";
  CAF_CHECK(!asks_user_on_blocked(run));
  run.config_json = "{}";
  CAF_CHECK(!asks_user_on_blocked(run));
  run.config_json = "not json";
  CAF_CHECK(!asks_user_on_blocked(run));
}

CAF_TEST(mail and events read as json lines) {
  store::mail_row m;
  m.id = 7;
  m.run_id = "r1";
  m.task_id = "t1";
  m.kind = store::mail_kind::answer;
  m.direction = store::mail_direction::down;
  m.text = "use \"sqlite\"\nplease";
  m.created_ms = 1000;
  m.attempt = 2;
  auto j = json::parse(to_json_line(m));
  CAF_CHECK_EQUAL(j["kind"], "answer");
  CAF_CHECK_EQUAL(j["direction"], "down");
  CAF_CHECK_EQUAL(j["text"], "use \"sqlite\"\nplease");
  CAF_CHECK(j["delivered_ms"].is_null());
  CAF_CHECK_EQUAL(j["attempt"], 2);
  CAF_CHECK_EQUAL(format_time(1795972042000), "2026-11-29 17:07:22Z");
}
