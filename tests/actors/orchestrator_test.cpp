// The orchestrator on the deterministic scheduler, with a ledger, a git
// service and workers played by the test: what it launches, in which order,
// and what it does with each outcome.
#define CAF_SUITE actors.orchestrator
#define FAIL(m) CAF_FAIL(m)
#include <caf/test/dsl.hpp>

#include <memory>

#include "actors/orchestrator.hpp"

using namespace taskforce;

namespace {

struct run_cfg : caf::actor_system_config {
  run_cfg() {
    add_message_types<caf::id_block::taskforce>();
    add_message_types<caf::id_block::taskforce_run>();
  }
};

/// What the test's fakes saw.
struct record {
  std::vector<std::string> launched;
  std::vector<task_transition> transitions;
  std::vector<run_state> run_states;
  std::vector<run_state> finished;
  std::vector<std::string> merged;
};

uint64_t note(record& rec, const task_transition& t) {
  rec.transitions.push_back(t);
  uint64_t n = 0;
  for (auto& x : rec.transitions)
    if (x.task_id == t.task_id && x.to == task_state::running)
      ++n;
  return n;
}

ledger_actor::behavior_type fake_ledger(std::shared_ptr<record> rec) {
  return {
    [rec](record_atom, transition_batch& b) {
      batch_acks acks;
      for (auto& t : b.changes) {
        transition_ack ack;
        ack.durable = true;
        ack.attempt = note(*rec, t);
        acks.acks.push_back(ack);
      }
      return acks;
    },
    [](record_atom, task_update&) {
      return true;
    },
    [rec](record_atom, run_transition& t) {
      rec->run_states.push_back(t.to);
      return true;
    },
    [](add_atom, std::string&, task_additions&) {
      return true;
    },
    [rec](caf::get_atom, std::string& id) {
      return run_transition{id,
                            rec->run_states.empty() ? run_state::running
                                                    : rec->run_states.back(),
                            ""};
    },
  };
}

git_actor::behavior_type fake_git(std::shared_ptr<record> rec) {
  return {
    [](lease_atom, worktree_request&) {
      return worktree_lease{};
    },
    [](snapshot_atom, std::string&) {
      return std::string{};
    },
    [](changed_atom, scope_request&) {
      return scope_report{};
    },
    [rec](merge_atom, merge_request& r) {
      rec->merged.push_back(r.task_id);
      merge_outcome m;
      m.end = run::merge_end::merged;
      m.merge_commit = "c-" + r.task_id;
      return m;
    },
    [](check_atom, merge_request&) {
      return merge_outcome{};
    },
    [](discard_atom, std::string&, std::string&) {
      return true;
    },
    [](finished_atom) {
      return true;
    },
  };
}

caf::behavior fake_watcher(std::shared_ptr<record> rec) {
  return {
    [](run_event&) {},
    [rec](finished_atom, run_state state, std::string&) {
      rec->finished.push_back(state);
    },
  };
}

caf::behavior idle_worker() {
  return {[](int) {}};
}

run_task make_task(const std::string& id, size_t index,
                   std::vector<size_t> deps = {},
                   std::vector<size_t> conflicts = {}, int64_t priority = 0) {
  run_task t;
  t.id = id;
  t.title = "task " + id;
  t.index = index;
  t.deps = std::move(deps);
  t.conflicts = std::move(conflicts);
  t.priority = priority;
  return t;
}

struct fixture : test_coordinator_fixture<run_cfg> {
  std::shared_ptr<record> rec = std::make_shared<record>();
  orchestrator_actor orch;

  void start(std::vector<run_task> tasks, run_config cfg = {}) {
    orchestrator_setup s;
    s.run_id = "r1";
    s.file = "TASKS.md";
    s.cfg = cfg;
    s.tasks = std::move(tasks);
    s.ledger = sys.spawn(fake_ledger, rec);
    s.git = sys.spawn(fake_git, rec);
    s.watcher = sys.spawn(fake_watcher, rec);
    auto r = rec;
    auto* system = &sys;
    s.launch = [r, system](const run_task& t, uint64_t, bool, caf::actor) {
      r->launched.push_back(t.id);
      return worker_handle{system->spawn(idle_worker), [] {}};
    };
    orch = spawn_orchestrator(sys, std::move(s));
    self->send(orch, start_atom::value);
    sched.run();
  }

  void outcome(const std::string& id, run::attempt_end st, uint64_t attempt = 1,
               std::string reason = "") {
    attempt_outcome o;
    o.task_id = id;
    o.attempt = attempt;
    o.end = st;
    o.reason = std::move(reason);
    self->send(orch, outcome_atom::value, o);
    sched.run();
  }

  std::string last_state(const std::string& id) {
    std::string s;
    for (auto& t : rec->transitions)
      if (t.task_id == id)
        s = to_string(t.to);
    return s;
  }

  ~fixture() {
    self->send_exit(orch, caf::exit_reason::kill);
    sched.run();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(orchestrator_tests, fixture)

CAF_TEST(it launches ready tasks by priority up to the concurrency limit) {
  run_config cfg;
  cfg.max_concurrency = 2;
  start({make_task("a", 0), make_task("b", 1), make_task("c", 2, {}, {}, 5)},
        cfg);
  CAF_CHECK_EQUAL(rec->launched, (std::vector<std::string>{"c", "a"}));
  outcome("c", run::attempt_end::done);
  CAF_CHECK_EQUAL(rec->launched, (std::vector<std::string>{"c", "a", "b"}));
  CAF_CHECK_EQUAL(rec->merged, std::vector<std::string>{"c"});
  CAF_CHECK_EQUAL(last_state("c"), "done");
}

CAF_TEST(conflicting tasks never run together and dependents wait) {
  // b conflicts with a; c depends on a.
  start({make_task("a", 0, {}, {1}), make_task("b", 1, {}, {0}),
         make_task("c", 2, {0})});
  CAF_CHECK_EQUAL(rec->launched, std::vector<std::string>{"a"});
  outcome("a", run::attempt_end::done);
  CAF_CHECK_EQUAL(rec->launched, (std::vector<std::string>{"a", "b", "c"}));
  outcome("b", run::attempt_end::done);
  outcome("c", run::attempt_end::done);
  CAF_CHECK_EQUAL(rec->finished, std::vector<run_state>{run_state::completed});
  CAF_CHECK_EQUAL(rec->run_states.back(), run_state::completed);
}

CAF_TEST(a failure is retried then pauses the run with dependents pending) {
  run_config cfg;
  cfg.max_attempts = 2;
  start({make_task("a", 0), make_task("b", 1, {0})}, cfg);
  outcome("a", run::attempt_end::failed, 1, "gate failed");
  CAF_CHECK_EQUAL(rec->launched, (std::vector<std::string>{"a", "a"}));
  outcome("a", run::attempt_end::failed, 2, "gate failed");
  CAF_CHECK_EQUAL(last_state("a"), "failed");
  CAF_CHECK_EQUAL(last_state("b"), "");
  CAF_CHECK_EQUAL(rec->finished, std::vector<run_state>{run_state::paused});
}

CAF_TEST(continue on error skips dependents and finishes the rest) {
  run_config cfg;
  cfg.max_attempts = 1;
  cfg.continue_on_error = true;
  start({make_task("a", 0), make_task("b", 1, {0}), make_task("c", 2)}, cfg);
  outcome("a", run::attempt_end::blocked, 1, "needs a key");
  CAF_CHECK_EQUAL(last_state("a"), "blocked");
  CAF_CHECK_EQUAL(last_state("b"), "skipped");
  outcome("c", run::attempt_end::done);
  // a is blocked, not final: the run waits on it.
  CAF_CHECK_EQUAL(rec->finished, std::vector<run_state>{run_state::paused});
}

CAF_TEST(an interrupted attempt does not count and the pause holds) {
  start({make_task("a", 0), make_task("b", 1)});
  self->send(orch, pause_atom::value, std::string{"Ctrl-C"}, true);
  sched.run();
  outcome("a", run::attempt_end::interrupted);
  outcome("b", run::attempt_end::interrupted);
  CAF_CHECK_EQUAL(last_state("a"), "interrupted");
  CAF_CHECK_EQUAL(rec->run_states.back(), run_state::paused);
  CAF_CHECK_EQUAL(rec->finished, std::vector<run_state>{run_state::paused});
  CAF_CHECK_EQUAL(rec->launched.size(), 2u);
}

CAF_TEST_FIXTURE_SCOPE_END()
