#define CAF_SUITE unit.task_state
#include <caf/test/unit_test.hpp>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "src/run/task_state.hpp"

using namespace taskforce;
using s = task_state;
using e = task_event;

namespace {

const std::vector<task_state> states{
  s::pending, s::ready,    s::running,     s::verifying, s::merging,
  s::done,    s::failed,   s::blocked,     s::skipped,   s::held,
  s::review,  s::conflict, s::interrupted,
};

const std::vector<task_event> events{
  e::deps_done, e::hold,        e::release, e::start,     e::work_done,
  e::repair,    e::gate_passed, e::merge,   e::merged,    e::keep_for_review,
  e::conflict,  e::fail,        e::block,   e::interrupt, e::retry,
  e::skip,      e::reset,       e::reject,
};

} // namespace

CAF_TEST(state names are exactly the ones of the command line contract) {
  std::vector<std::string> names;
  for (auto x : states)
    names.emplace_back(to_string(x));
  std::vector<std::string> expected{
    "pending", "ready",    "running",    "verifying", "merging",
    "done",    "failed",   "blocked",    "skipped",   "held",
    "review",  "conflict", "interrupted"};
  CAF_CHECK_EQUAL(names, expected);
  for (auto x : states) {
    task_state back = s::done;
    CAF_CHECK(from_string(to_string(x), back));
    CAF_CHECK_EQUAL(back, x);
  }
  task_state untouched = s::held;
  CAF_CHECK(!from_string("Running", untouched));
  CAF_CHECK(!from_string("", untouched));
  CAF_CHECK_EQUAL(untouched, s::held);
}

CAF_TEST(run state and event names round trip) {
  for (auto x : {run_state::running, run_state::paused, run_state::completed,
                 run_state::aborted}) {
    run_state back = run_state::aborted;
    CAF_CHECK(from_string(to_string(x), back));
    CAF_CHECK_EQUAL(back, x);
  }
  CAF_CHECK_EQUAL(std::string{to_string(run_state::paused)}, "paused");
  for (auto x : events) {
    task_event back = e::reset;
    CAF_CHECK(from_string(to_string(x), back));
    CAF_CHECK_EQUAL(back, x);
  }
}

CAF_TEST(the transition table is exactly the documented lifecycle) {
  // Every legal move; anything not listed must be refused.
  std::set<std::pair<std::pair<s, e>, s>> table{
    {{s::pending, e::deps_done}, s::ready},
    {{s::pending, e::hold}, s::held},
    {{s::ready, e::hold}, s::held},
    {{s::held, e::release}, s::pending},
    {{s::ready, e::start}, s::running},
    {{s::interrupted, e::start}, s::running},
    {{s::running, e::work_done}, s::verifying},
    {{s::verifying, e::repair}, s::running},
    {{s::verifying, e::gate_passed}, s::merging},
    {{s::review, e::merge}, s::merging},
    {{s::conflict, e::merge}, s::merging},
    {{s::interrupted, e::merge}, s::merging},
    {{s::merging, e::merged}, s::done},
    {{s::review, e::merged}, s::done},
    {{s::conflict, e::merged}, s::done},
    {{s::interrupted, e::merged}, s::done},
    {{s::merging, e::keep_for_review}, s::review},
    {{s::merging, e::conflict}, s::conflict},
    {{s::running, e::fail}, s::failed},
    {{s::verifying, e::fail}, s::failed},
    {{s::merging, e::fail}, s::failed},
    {{s::running, e::block}, s::blocked},
    {{s::verifying, e::block}, s::blocked},
    {{s::running, e::interrupt}, s::interrupted},
    {{s::verifying, e::interrupt}, s::interrupted},
    {{s::merging, e::interrupt}, s::interrupted},
    {{s::running, e::retry}, s::ready},
    {{s::verifying, e::retry}, s::ready},
    {{s::merging, e::retry}, s::ready},
    {{s::failed, e::retry}, s::ready},
    {{s::blocked, e::retry}, s::ready},
    {{s::conflict, e::retry}, s::ready},
    {{s::interrupted, e::retry}, s::ready},
    {{s::pending, e::skip}, s::skipped},
    {{s::ready, e::skip}, s::skipped},
    {{s::held, e::skip}, s::skipped},
    {{s::ready, e::reset}, s::pending},
    {{s::failed, e::reset}, s::pending},
    {{s::blocked, e::reset}, s::pending},
    {{s::skipped, e::reset}, s::pending},
    {{s::conflict, e::reset}, s::pending},
    {{s::interrupted, e::reset}, s::pending},
    {{s::review, e::reset}, s::pending},
    {{s::review, e::reject}, s::blocked},
    {{s::held, e::reject}, s::blocked},
  };
  size_t legal = 0;
  for (auto from : states)
    for (auto ev : events) {
      auto to = transition(from, ev);
      if (to) {
        ++legal;
        if (table.count({{from, ev}, *to}) == 0)
          CAF_FAIL("unexpected move " << to_string(from) << " --"
                                      << to_string(ev) << "--> "
                                      << to_string(*to));
      }
    }
  CAF_CHECK_EQUAL(legal, table.size());
}

CAF_TEST(the main line leads from pending to done) {
  auto x = s::pending;
  for (auto ev : {e::deps_done, e::start, e::work_done, e::repair, e::work_done,
                  e::gate_passed, e::merged}) {
    auto next = transition(x, ev);
    CAF_REQUIRE(next.has_value());
    x = *next;
  }
  CAF_CHECK_EQUAL(x, s::done);
}

CAF_TEST(done is final and nothing leaves it) {
  for (auto ev : events)
    CAF_CHECK(!transition(s::done, ev).has_value());
  for (auto to : states)
    CAF_CHECK(!allowed(s::done, to));
}

CAF_TEST(allowed follows the events and never allows staying put) {
  CAF_CHECK(allowed(s::running, s::verifying));
  CAF_CHECK(allowed(s::interrupted, s::running));
  CAF_CHECK(allowed(s::failed, s::ready));
  CAF_CHECK(allowed(s::conflict, s::pending));
  CAF_CHECK(!allowed(s::pending, s::running));
  CAF_CHECK(!allowed(s::running, s::done));
  CAF_CHECK(!allowed(s::skipped, s::ready));
  for (auto x : states)
    CAF_CHECK(!allowed(x, x));
  CAF_CHECK_EQUAL(event_between(s::verifying, s::running), e::repair);
  CAF_CHECK_EQUAL(event_between(s::conflict, s::done), e::merged);
  CAF_CHECK(!event_between(s::pending, s::done).has_value());
}

CAF_TEST(state classes match the scheduler and recovery rules) {
  CAF_CHECK(in_attempt(s::running));
  CAF_CHECK(in_attempt(s::verifying));
  CAF_CHECK(!in_attempt(s::merging));
  CAF_CHECK(is_active(s::merging));
  CAF_CHECK(!is_active(s::interrupted));
  CAF_CHECK(is_final(s::done));
  CAF_CHECK(is_final(s::skipped));
  CAF_CHECK(!is_final(s::failed));
  CAF_CHECK(needs_attention(s::conflict));
  CAF_CHECK(!needs_attention(s::ready));
}

CAF_TEST(the run lifecycle ends in completed or aborted) {
  using r = run_state;
  CAF_CHECK(allowed(r::running, r::paused));
  CAF_CHECK(allowed(r::paused, r::running));
  CAF_CHECK(allowed(r::running, r::completed));
  CAF_CHECK(allowed(r::paused, r::aborted));
  CAF_CHECK(!allowed(r::completed, r::running));
  CAF_CHECK(!allowed(r::aborted, r::paused));
  CAF_CHECK(!allowed(r::running, r::running));
  CAF_CHECK(is_finished(r::completed));
  CAF_CHECK(!is_finished(r::paused));
}
