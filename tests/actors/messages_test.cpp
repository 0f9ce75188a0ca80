#define CAF_SUITE actors.messages
#include <caf/test/unit_test.hpp>

#include <caf/all.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "messages/interfaces.hpp"

using namespace taskforce;

namespace {

struct registered_config : caf::actor_system_config {
  registered_config() {
    add_message_types<caf::id_block::taskforce>();
    add_message_types<caf::id_block::taskforce_run>();
  }
};

template<class T>
T round_trip(caf::actor_system& sys, T value) {
  std::vector<char> buffer;
  caf::binary_serializer sink{sys, buffer};
  if (auto err = sink(value))
    CAF_FAIL("serialization failed: " << sys.render(err));
  T copy;
  caf::binary_deserializer source{sys, buffer};
  if (auto err = source(copy))
    CAF_FAIL("deserialization failed: " << sys.render(err));
  return copy;
}

} // namespace

CAF_TEST(every pool message survives serialization) {
  registered_config cfg;
  caf::actor_system sys{cfg};
  acquire_request req{"s1",   "h1", holder_kind::background, "c1", "p",
                      "task", 7};
  CAF_CHECK(round_trip(sys, req) == req);
  pool_event ev;
  ev.kind = pool_event_kind::released;
  ev.holder = "h1";
  ev.reason = release_reason::disconnected;
  CAF_CHECK(round_trip(sys, ev) == ev);
  pool_status st{"global",
                 2,
                 {{"*",
                   {{"h", "s", holder_kind::foreground, 5, true}},
                   {{"q", "s", 1, 3}}}}};
  CAF_CHECK(round_trip(sys, st) == st);
}

CAF_TEST(error codes render with their protocol names) {
  auto err = caf::make_error(errc::pool_full, "no permit free");
  CAF_CHECK_EQUAL(err.category(), caf::atom("taskforce"));
  CAF_CHECK_EQUAL(to_string(static_cast<errc>(err.code())),
                  std::string{"pool_full"});
}

CAF_TEST(every run message survives serialization with its typed fields) {
  registered_config cfg;
  caf::actor_system sys{cfg};
  task_transition tr;
  tr.task_id = "a";
  tr.event = task_event::gate_passed;
  tr.from = task_state::verifying;
  tr.to = task_state::merging;
  tr.attempt = 3;
  tr.reason = "passed";
  tr.facts.branch = "taskforce/r/a";
  tr.facts.conflict_paths = std::vector<std::string>{"x", "y"};
  tr.facts.exit_code = 0;
  tr.facts.spent = {turn_spent{2, "repair", token_usage{10, 20, 0.5}}};
  tr.facts.hold_lifted = true;
  transition_batch batch{"r", {tr, tr}};
  auto copy = round_trip(sys, batch);
  CAF_CHECK(copy == batch);
  CAF_CHECK_EQUAL(copy.changes[1].facts.conflict_paths->size(), 2u);
  CAF_CHECK(!copy.changes[0].facts.worktree);
  transition_ack refused;
  refused.actual = task_state::running;
  refused.refusal = "task a is running, not ready";
  batch_acks acks{{transition_ack{true, 2, caf::none, ""}, refused}};
  CAF_CHECK(round_trip(sys, acks) == acks);
  CAF_CHECK(round_trip(sys, task_update{"r", "a", tr.facts})
            == (task_update{"r", "a", tr.facts}));
  run_transition rt{"r", run_state::paused, "a failed"};
  CAF_CHECK(round_trip(sys, rt) == rt);
  attempt_outcome o;
  o.task_id = "a";
  o.attempt = 2;
  o.end = run::attempt_end::blocked;
  o.reason = "which key?";
  o.session = "s-1";
  o.turns = 3;
  o.spent = {turn_spent{3, "message", token_usage{1, 2, 3}}};
  CAF_CHECK(round_trip(sys, o) == o);
  attempt_progress p{"a",
                     2,
                     attempt_phase::verifying,
                     "",
                     "/w",
                     "b",
                     {turn_spent{1, "start", token_usage{7, 8, 0.5}}}};
  CAF_CHECK(round_trip(sys, p) == p);
  merge_outcome m{run::merge_end::conflict, "", {"f"}, "merge conflict in f"};
  CAF_CHECK(round_trip(sys, m) == m);
  run_event ev;
  ev.run_id = "r";
  ev.task_id = "a";
  ev.state = task_state::review;
  ev.spent = token_usage{4, 5, 0.25};
  CAF_CHECK(round_trip(sys, ev) == ev);
  CAF_CHECK(round_trip(sys, ev).spent == ev.spent);
  CAF_CHECK_EQUAL(std::string{state_name(ev)}, "review");
  steer_reply reply{{task_view{"a", task_state::merging, "approved"}}};
  CAF_CHECK(round_trip(sys, reply) == reply);
}

CAF_TEST(process helper messages survive serialization) {
  registered_config cfg;
  caf::actor_system sys{cfg};
  proc_started s{4242, "r1/t1/#abc-7"};
  CAF_CHECK(round_trip(sys, s) == s);
  proc_output o{"compiling...\n"};
  CAF_CHECK(round_trip(sys, o) == o);
  proc_exited e;
  e.exit_code = -1;
  e.signal = 9;
  e.duration_ms = 1200;
  e.head = "session id: x";
  e.tail = "Killed";
  e.description = "signal 9 (Killed)";
  CAF_CHECK(round_trip(sys, e) == e);
  CAF_CHECK_EQUAL(to_string(turn_kind::message), std::string{"message"});
}

CAF_TEST(tasks to add cross a message with their optional fields) {
  registered_config cfg;
  caf::actor_system sys{cfg};
  task_spec t;
  t.id = "cache";
  t.index = 4;
  t.title = "Add a cache";
  t.deps = {"a"};
  t.files = {"src/cache/**"};
  t.verify = "make test";
  t.risk = "high";
  t.timeout_ms = 5000;
  t.needs_approval = true;
  task_spec bare;
  bare.id = "b";
  task_additions add{"MORE.md", {t, bare}};
  auto copy = round_trip(sys, add);
  CAF_REQUIRE_EQUAL(copy.tasks.size(), 2u);
  auto& c = copy.tasks[0];
  CAF_CHECK_EQUAL(c.id, "cache");
  CAF_CHECK_EQUAL(c.deps, std::vector<std::string>{"a"});
  CAF_CHECK(c.verify == std::optional<std::string>{"make test"});
  CAF_CHECK(c.risk == std::optional<std::string>{"high"});
  CAF_CHECK(c.timeout_ms == std::optional<int64_t>{5000});
  CAF_CHECK(!c.run);
  CAF_CHECK(c.needs_approval);
  CAF_CHECK(!copy.tasks[1].verify);
  CAF_CHECK_EQUAL(copy.file, "MORE.md");
}

CAF_TEST(run errors are their own category and render with their names) {
  registered_config cfg;
  cfg.add_error_category(
    caf::atom(run_errc_category),
    [](uint8_t code, caf::atom_value, const caf::message& ctx) {
      return std::string{to_string(static_cast<run_errc>(code))} + ": "
             + ctx.get_as<std::string>(0);
    });
  caf::actor_system sys{cfg};
  auto err = caf::make_error(run_errc::wrong_state, "task a is running");
  CAF_CHECK_EQUAL(err.category(), caf::atom("run"));
  CAF_CHECK_EQUAL(to_string(static_cast<run_errc>(err.code())),
                  std::string{"wrong_state"});
  CAF_CHECK_EQUAL(what_of(err), "task a is running");
  CAF_CHECK_EQUAL(sys.render(err), "wrong_state: task a is running");
  CAF_CHECK(err.category() != caf::make_error(errc::bad_request).category());
}
