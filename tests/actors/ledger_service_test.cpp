// The ledger service over a real SQLite ledger: typed changes become the
// store's rows, each change of a batch is acknowledged on its own (a
// refused one with the state the ledger has), and failures are run errors.
#define CAF_SUITE actors.ledger_service
#include <caf/test/unit_test.hpp>

#include <caf/all.hpp>

#include "actors/ledger_service.hpp"
#include "actors/runtime_config.hpp"
#include "test.hpp"

using namespace taskforce;

namespace {

store::new_run sample_run(const std::string& id) {
  store::new_run r;
  r.id = id;
  r.file = "TASKS.md";
  r.file_hash = store::content_hash("- [ ] a\n");
  r.base_branch = "main";
  for (auto name : {"a", "b", "c"})
    r.tasks.push_back(store::new_task{name,
                                      static_cast<int>(r.tasks.size() + 1),
                                      name, task_state::pending, std::nullopt});
  return r;
}

task_transition move(const std::string& task, task_event event, task_state from,
                     task_state to, std::string why = {}) {
  task_transition tr;
  tr.task_id = task;
  tr.event = event;
  tr.from = from;
  tr.to = to;
  tr.reason = std::move(why);
  return tr;
}

struct fixture {
  test::temp_dir dir;
  store::ledger db = store::ledger::open(dir.path() / "ledger.sqlite");

  fixture() {
    db.create_run(sample_run("r1"), 1000);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(ledger_service_tests, fixture)

CAF_TEST(a start is written in one batch and opens one attempt) {
  using s = task_state;
  transition_batch b{"r1",
                     {move("a", task_event::deps_done, s::pending, s::ready),
                      move("a", task_event::start, s::ready, s::running)}};
  auto acks = apply_batch(db, b);
  CAF_REQUIRE_EQUAL(acks.size(), 2u);
  CAF_CHECK(acks[0].durable && acks[1].durable);
  CAF_CHECK_EQUAL(acks[1].attempt, 1u);
  CAF_CHECK_EQUAL(db.find_task("r1", "a")->state, s::running);
  CAF_CHECK_EQUAL(db.attempts("r1", "a").size(), 1u);
}

CAF_TEST(a refused change names the ledger state and the others are written) {
  using s = task_state;
  // Another process already moved b on.
  store::task_change hold;
  hold.to = s::held;
  db.transition("r1", "b", hold, 1100);
  transition_batch b{"r1",
                     {move("a", task_event::deps_done, s::pending, s::ready),
                      move("b", task_event::deps_done, s::pending, s::ready),
                      move("b", task_event::start, s::ready, s::running),
                      move("zz", task_event::deps_done, s::pending, s::ready),
                      move("c", task_event::deps_done, s::pending, s::ready)}};
  auto acks = apply_batch(db, b);
  CAF_REQUIRE_EQUAL(acks.size(), 5u);
  CAF_CHECK(acks[0].durable);
  CAF_CHECK(!acks[1].durable);
  CAF_CHECK(acks[1].actual == s::held);
  CAF_CHECK(acks[1].refusal.find("held") != std::string::npos);
  CAF_CHECK(!acks[2].durable);
  CAF_CHECK(acks[2].actual == s::held);
  // No such task: refused, and no state to name.
  CAF_CHECK(!acks[3].durable);
  CAF_CHECK(!acks[3].actual);
  CAF_CHECK(acks[4].durable);
  CAF_CHECK_EQUAL(db.find_task("r1", "a")->state, s::ready);
  CAF_CHECK_EQUAL(db.find_task("r1", "b")->state, s::held);
  CAF_CHECK_EQUAL(db.find_task("r1", "c")->state, s::ready);
  CAF_CHECK(db.attempts("r1", "b").empty());
}

CAF_TEST(a refused change names the state the batch left the task in) {
  using s = task_state;
  // The second change expects a state the first one did not produce.
  transition_batch b{"r1",
                     {move("a", task_event::deps_done, s::pending, s::ready),
                      move("a", task_event::deps_done, s::pending, s::ready)}};
  auto acks = apply_batch(db, b);
  CAF_CHECK(acks[0].durable);
  CAF_CHECK(!acks[1].durable);
  CAF_CHECK(acks[1].actual == s::ready);
}

CAF_TEST(typed facts land in the task row and the attempt) {
  using s = task_state;
  apply_batch(db, {"r1",
                   {move("a", task_event::deps_done, s::pending, s::ready),
                    move("a", task_event::start, s::ready, s::running)}});
  auto done = move("a", task_event::work_done, s::running, s::verifying);
  auto pass = move("a", task_event::gate_passed, s::verifying, s::merging);
  pass.facts.worktree = "/wt/a";
  pass.facts.branch = "taskforce/r1/a";
  pass.facts.gate_tail = "all green";
  pass.facts.exit_code = 0;
  pass.facts.spent = {turn_spent{1, "start", token_usage{100, 20, 0.5}}};
  auto conflict = move("a", task_event::conflict, s::merging, s::conflict,
                       "merge conflict in x");
  conflict.facts.conflict_paths = std::vector<std::string>{"x", "y"};
  auto acks = apply_batch(db, {"r1", {done, pass, conflict}});
  for (auto& ack : acks)
    CAF_CHECK(ack.durable);
  auto t = db.find_task("r1", "a");
  CAF_CHECK_EQUAL(t->worktree.value_or(""), "/wt/a");
  CAF_CHECK_EQUAL(t->branch.value_or(""), "taskforce/r1/a");
  CAF_CHECK_EQUAL(t->gate_tail.value_or(""), "all green");
  CAF_CHECK_EQUAL(t->conflict_paths, (std::vector<std::string>{"x", "y"}));
  CAF_CHECK_EQUAL(t->reason.value_or(""), "merge conflict in x");
  auto attempt = db.attempts("r1", "a").at(0);
  CAF_CHECK_EQUAL(attempt.exit_code.value_or(-1), 0);
  CAF_CHECK_EQUAL(attempt.usage.input_tokens, 100);
  CAF_CHECK_EQUAL(attempt.usage.output_tokens, 20);
}

CAF_TEST(the service answers with run errors in their own category) {
  runtime_config cfg{1, false};
  caf::actor_system sys{cfg};
  auto ledger = spawn_ledger_service(sys, std::move(db));
  caf::scoped_actor self{sys};
  std::string seen;
  auto fail = [&](caf::error& err) {
    seen = sys.render(err);
  };
  self
    ->request(ledger, caf::infinite, caf::get_atom::value, std::string{"nope"})
    .receive(
      [](run_transition&) {
        CAF_FAIL("found a run that is not");
      },
      fail);
  CAF_CHECK_EQUAL(seen, "unknown_run: no run nope");
  self
    ->request(ledger, caf::infinite, record_atom::value,
              run_transition{"r1", run_state::aborted, "by hand"})
    .receive(
      [](bool ok) {
        CAF_CHECK(ok);
      },
      fail);
  self
    ->request(ledger, caf::infinite, record_atom::value,
              run_transition{"r1", run_state::running, ""})
    .receive(
      [](bool) {
        CAF_FAIL("an aborted run ran again");
      },
      fail);
  CAF_CHECK(seen.find("refused_transition: ") == 0);
  task_update up{"r1", "zz", {}};
  up.facts.worktree = "/wt";
  self->request(ledger, caf::infinite, record_atom::value, up)
    .receive(
      [](bool) {
        CAF_FAIL("updated a task that is not");
      },
      fail);
  CAF_CHECK(seen.find("unknown_task: ") == 0);
  self->send_exit(ledger, caf::exit_reason::user_shutdown);
}

CAF_TEST_FIXTURE_SCOPE_END()
