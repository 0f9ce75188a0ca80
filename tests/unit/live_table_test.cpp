#define CAF_SUITE unit.live_table
#include <caf/test/unit_test.hpp>

#include <sstream>

#include "messages/run.hpp"
#include "src/cli/live_table.hpp"

using namespace taskforce;
using namespace taskforce::cli;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

run_event task_event_of(const std::string& id, task_state s,
                        const std::string& reason) {
  run_event ev;
  ev.run_id = "r";
  ev.task_id = id;
  ev.state = s;
  ev.attempt = 1;
  ev.reason = reason;
  return ev;
}

} // namespace

CAF_TEST(the table shows what a waiting task needs and the command for it) {
  std::ostringstream out;
  live_table table{out, view_mode::plain, false};
  table.apply(task_event_of("t1", task_state::review, "kept for review"));
  table.apply(task_event_of("t2", task_state::blocked, "which key?"));
  table.apply(task_event_of("t3", task_state::held, "[NEEDS DECISION: x]"));
  table.apply(task_event_of("t4", task_state::done, ""));
  auto text = out.str();
  CAF_CHECK(contains(text, "t1: review (attempt 1) - kept for review "
                           "[awaiting approval: taskforce approve t1]"));
  CAF_CHECK(contains(text, "taskforce answer t2 TEXT"));
  CAF_CHECK(contains(text, "held: taskforce approve t3"));
  CAF_CHECK(!contains(text, "t4: done (attempt 1) ["));
  std::ostringstream asking;
  live_table kept{asking, view_mode::table, false};
  kept.set_ask_user_on_blocked(true);
  kept.set_rows({table_row{"t2", "Ask", "blocked", 1, 0, 0, "which key?"}});
  kept.redraw(0);
  CAF_CHECK(contains(asking.str(), "awaiting answer: taskforce answer t2"));
}
