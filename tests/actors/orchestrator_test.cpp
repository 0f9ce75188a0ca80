// The orchestrator on the deterministic scheduler, with a ledger that
// refuses what the lifecycle refuses, a git service and workers played by
// the test: what it records, in which batches, what it does only once a
// change is durable, and how it takes failures and a person's commands.
#define CAF_SUITE actors.orchestrator
#define FAIL(m) CAF_FAIL(m)
#include <caf/test/dsl.hpp>

#include <algorithm>
#include <memory>

#include "actors/run_fakes.hpp"

using namespace taskforce;
using namespace taskforce::test;

namespace {

using strings = std::vector<std::string>;

struct fixture : test_coordinator_fixture<run_test_config> {
  std::shared_ptr<ledger_book> book = std::make_shared<ledger_book>();
  std::shared_ptr<git_book> gits = std::make_shared<git_book>();
  std::shared_ptr<run_record> rec = std::make_shared<run_record>();
  ledger_actor ledger;
  git_actor git;
  caf::actor watcher;
  orchestrator_actor orch;
  run_config cfg;
  /// Batches are written at once, so tests can step each exchange; the
  /// test of lingering sets it.
  std::chrono::milliseconds linger{0};
  /// Workers start on standby while their start is recorded.
  bool prepare = false;

  /// Spawns the orchestrator over `specs` (the ledger has them in
  /// `states`, pending by default) without starting it.
  void spawn(std::vector<task_spec> specs, run::rules rules = {},
             std::vector<task_state> states = {}) {
    states.resize(specs.size(), task_state::pending);
    for (size_t i = 0; i < specs.size(); ++i)
      book->add_task(specs[i].id, states[i]);
    ledger = sys.spawn(fake_ledger, book);
    git = sys.spawn(fake_git, gits);
    watcher = sys.spawn(fake_watcher, rec);
    orchestrator_setup s;
    s.run_id = book->run_id;
    s.file = "TASKS.md";
    s.cfg = cfg;
    s.rules = rules;
    s.graph = graph_of(std::move(specs));
    s.records = records_of(s.graph, states, {});
    s.ledger = ledger;
    s.git = git;
    s.watcher = watcher;
    s.linger = linger;
    s.prepare_workers = prepare;
    auto r = rec;
    auto* system = &sys;
    s.launch = [r, system](const run_task& t, uint64_t attempt, bool fresh,
                           caf::actor) {
      if (r->launch_failures > 0) {
        --r->launch_failures;
        throw std::runtime_error("no such backend");
      }
      auto w = system->spawn(fake_worker, r, t.id);
      r->launched.push_back(launched_attempt{t, attempt, fresh, w});
      return worker_handle{w, {}};
    };
    orch = spawn_orchestrator(sys, std::move(s));
    sched.run();
  }

  /// Spawns and starts, running every message.
  void start(std::vector<task_spec> specs, run::rules rules = {},
             std::vector<task_state> states = {}) {
    spawn(std::move(specs), rules, std::move(states));
    self->send(orch, start_atom::value);
    sched.run();
  }

  /// The latest attempt launched for `id`.
  launched_attempt& attempt_of(const std::string& id) {
    for (auto i = rec->launched.rbegin(); i != rec->launched.rend(); ++i)
      if (i->task.id == id)
        return *i;
    CAF_FAIL("no attempt of " << id);
  }

  /// A worker whose attempt was given up says it is done, too late.
  void late_done(const std::string& id, uint64_t attempt) {
    attempt_outcome late;
    late.task_id = id;
    late.attempt = attempt;
    late.end = run::attempt_end::done;
    self->send(orch, outcome_atom::value, late);
    sched.run();
  }

  /// The worker of `id`'s latest attempt reports how it ended.
  void outcome(const std::string& id, run::attempt_end end,
               std::string reason = "") {
    attempt_outcome o;
    o.task_id = id;
    o.attempt = attempt_of(id).attempt;
    o.end = end;
    o.reason = std::move(reason);
    o.worktree = "/wt/" + id;
    o.branch = "taskforce/r1/" + id;
    o.exit_code = end == run::attempt_end::done ? 0 : 1;
    o.turns = 1;
    self->send(orch, outcome_atom::value, o);
    sched.run();
  }

  task_state state(const std::string& id) {
    return book->tasks.at(id).state;
  }

  /// What a person's command got back: the reply's tasks as "id:state",
  /// or "!code: text".
  template<class... Ts>
  std::string steer(Ts... xs) {
    auto req = self->request(orch, caf::infinite, xs...);
    sched.run();
    std::string out;
    req.receive(
      [&](steer_reply& r) {
        for (auto& t : r.tasks)
          out += (out.empty() ? "" : " ") + t.id + ":" + to_string(t.state);
      },
      [&](caf::error& err) {
        out = "!" + sys.render(err);
      });
    return out;
  }

  ~fixture() {
    // Every actor goes: workers and fakes hold the record that holds them.
    self->send_exit(orch, caf::exit_reason::kill);
    for (auto& l : rec->launched)
      self->send_exit(l.worker, caf::exit_reason::kill);
    self->send_exit(ledger, caf::exit_reason::kill);
    self->send_exit(git, caf::exit_reason::kill);
    self->send_exit(watcher, caf::exit_reason::kill);
    sched.run();
    rec->launched.clear();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(orchestrator_tests, fixture)

CAF_TEST(a start is one batch and workers launch only once it is durable) {
  run::rules r;
  r.max_concurrency = 2;
  spawn({spec("a", {"a"}), spec("b", {"b"}), spec("c", {"c"}, {}, 5)}, r);
  self->send(orch, start_atom::value);
  expect((start_atom), from(self).to(orch));
  expect((record_atom, transition_batch), from(orch).to(ledger));
  CAF_REQUIRE_EQUAL(book->batches.size(), 1u);
  // pending -> ready -> running travels in one transaction.
  CAF_CHECK_EQUAL(show(book->batches[0]),
                  "a:pending>ready b:pending>ready c:pending>ready "
                  "c:ready>running a:ready>running");
  CAF_CHECK(rec->launched.empty()); // nothing acted on before the ack
  expect((batch_acks), from(ledger).to(orch));
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"c", "a"}));
  CAF_CHECK_EQUAL(attempt_of("c").attempt, 1u);
  // The run change follows the task changes.
  expect((record_atom, run_transition), from(orch).to(ledger));
  sched.run();
  CAF_CHECK_EQUAL(book->run_changes.at(0).to, run_state::running);
}

CAF_TEST(
  passing work merges once merging is durable and unlocks its dependents) {
  start({spec("a", {"a"}), spec("b", {"b"}, {"a"})});
  CAF_CHECK_EQUAL(rec->launched_ids(), strings{"a"});
  attempt_outcome o;
  o.task_id = "a";
  o.attempt = 1;
  o.end = run::attempt_end::done;
  o.worktree = "/wt/a";
  o.branch = "taskforce/r1/a";
  o.tail = "ok";
  o.exit_code = 0;
  o.spent = {turn_spent{1, "start", token_usage{10, 5, 0.25}}};
  self->send(orch, outcome_atom::value, o);
  expect((outcome_atom, attempt_outcome), from(self).to(orch));
  expect((record_atom, transition_batch), from(orch).to(ledger));
  CAF_CHECK_EQUAL(show(book->batches.back()),
                  "a:running>verifying a:verifying>merging");
  // The facts go with the change that closes the attempt.
  auto& closing = book->batches.back().changes[1].facts;
  CAF_CHECK(closing.worktree == std::string{"/wt/a"});
  CAF_CHECK(closing.exit_code == int64_t{0});
  CAF_CHECK(closing.spent
            == std::vector<turn_spent>{{1, "start", token_usage{10, 5, 0.25}}});
  CAF_CHECK(gits->merges.empty()); // not before merging is durable
  expect((batch_acks), from(ledger).to(orch));
  expect((merge_atom, merge_request), from(orch).to(git));
  expect((merge_outcome), from(git).to(orch));
  expect((record_atom, transition_batch), from(orch).to(ledger));
  CAF_CHECK_EQUAL(show(book->batches.back()),
                  "a:merging>done b:pending>ready b:ready>running");
  CAF_CHECK(book->batches.back().changes[0].facts.merge_commit
            == std::string{"m-a"});
  sched.run();
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "b"}));
  outcome("b", run::attempt_end::done);
  CAF_CHECK_EQUAL(gits->merges, (strings{"a", "b"}));
  CAF_CHECK_EQUAL(book->run, run_state::completed);
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
  CAF_CHECK_EQUAL(rec->finished[0].first, run_state::completed);
  // The watcher saw every durable change, the run's end last.
  CAF_CHECK_EQUAL(rec->events.back().run, run_state::completed);
  CAF_CHECK(rec->events.back().task_id.empty());
}

CAF_TEST(a change that starts nothing shares the next batch while work runs) {
  linger = std::chrono::milliseconds{20};
  run::rules r;
  r.max_concurrency = 2;
  start({spec("a", {"a"}), spec("b", {"b"}), spec("c", {"c"})}, r);
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "b"}));
  // Tasks that work in place (no worktree, no branch).
  auto in_place = [this](const std::string& id) {
    attempt_outcome o;
    o.task_id = id;
    o.attempt = attempt_of(id).attempt;
    o.end = run::attempt_end::done;
    o.exit_code = 0;
    o.turns = 1;
    self->send(orch, outcome_atom::value, o);
    sched.run();
  };
  in_place("a");
  // a is merged, c started: a's done waits, b still runs.
  CAF_CHECK_EQUAL(gits->merges, strings{"a"});
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "b", "c"}));
  CAF_CHECK_EQUAL(state("a"), task_state::merging);
  auto written = book->batches.size();
  in_place("b");
  // One write for a's done and b's end, not two.
  CAF_REQUIRE_EQUAL(book->batches.size(), written + 1);
  CAF_CHECK_EQUAL(show(book->batches[written]),
                  "a:merging>done b:running>verifying b:verifying>merging");
  CAF_CHECK_EQUAL(state("a"), task_state::done);
  // b's done finds no company while c runs: the timer writes it.
  CAF_CHECK_EQUAL(state("b"), task_state::merging);
  sched.advance_time(std::chrono::milliseconds{20});
  sched.run();
  CAF_CHECK_EQUAL(state("b"), task_state::done);
  CAF_CHECK_EQUAL(show(book->batches.back()), "b:merging>done");
  // The last done has nothing to wait for: the run ends at once.
  in_place("c");
  CAF_CHECK_EQUAL(state("c"), task_state::done);
  CAF_CHECK_EQUAL(book->run, run_state::completed);
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
}

CAF_TEST(a task merged from its branch is recorded done at once) {
  linger = std::chrono::milliseconds{20};
  run::rules r;
  r.max_concurrency = 2;
  start({spec("a", {"a"}), spec("b", {"b"})}, r);
  // Its worktree may go to another task now: a resume must find the merge.
  outcome("a", run::attempt_end::done);
  CAF_CHECK_EQUAL(gits->merges, strings{"a"});
  CAF_CHECK_EQUAL(state("a"), task_state::done);
  CAF_CHECK_EQUAL(state("b"), task_state::running);
}

CAF_TEST(
  a merge conflict pauses the run with the paths and keeps dependents waiting) {
  gits->merge_answers["a"]
    = merge_outcome{run::merge_end::conflict,
                    "",
                    {"f.txt"},
                    "merge conflict in f.txt (branch taskforce/r1/a kept)",
                    ""};
  start({spec("a", {"a"}), spec("b", {"b"}, {"a"})});
  outcome("a", run::attempt_end::done);
  CAF_CHECK_EQUAL(state("a"), task_state::conflict);
  CAF_CHECK(book->tasks["a"].facts.conflict_paths == strings{"f.txt"});
  CAF_CHECK_EQUAL(state("b"), task_state::pending);
  CAF_CHECK_EQUAL(book->run, run_state::paused);
  CAF_CHECK_EQUAL(book->run_reason,
                  "a: merge conflict in f.txt (branch taskforce/r1/a kept)");
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
  CAF_CHECK_EQUAL(rec->finished[0].first, run_state::paused);
  CAF_CHECK_EQUAL(rec->launched_ids(), strings{"a"});
}

CAF_TEST(review keeps passing work unmerged until a person approves it) {
  run::rules r;
  r.finish = run::integration::review;
  start({spec("a", {"a"}), spec("b", {"b"})}, r);
  outcome("a", run::attempt_end::done);
  CAF_CHECK_EQUAL(state("a"), task_state::review);
  CAF_CHECK_EQUAL(book->tasks["a"].reason, "kept for review");
  CAF_CHECK(gits->merges.empty());
  // b still runs: the run is live and takes the approval.
  CAF_CHECK_EQUAL(steer(approve_atom::value, std::string{"a"}), "a:merging");
  CAF_CHECK_EQUAL(gits->merges, strings{"a"});
  CAF_CHECK_EQUAL(state("a"), task_state::done);
  CAF_CHECK_EQUAL(book->tasks["a"].reason, "");
  // Approving twice names the state.
  CAF_CHECK_EQUAL(steer(approve_atom::value, std::string{"a"}),
                  "!wrong_state: task a is done; approve applies to a task "
                  "in review or held");
  CAF_CHECK_EQUAL(steer(approve_atom::value, std::string{"zz"}),
                  "!unknown_task: no task zz in run r1");
  outcome("b", run::attempt_end::done);
  CAF_CHECK_EQUAL(state("b"), task_state::review);
  CAF_CHECK_EQUAL(book->run, run_state::paused);
  CAF_CHECK_EQUAL(book->run_reason, "awaiting approval: b");
  // The driver is done: later commands are for the next resume.
  CAF_CHECK_EQUAL(steer(approve_atom::value, std::string{"b"}),
                  "!no_driver: the run is not being driven");
}

CAF_TEST(a risky task is never merged before it is approved) {
  auto risky = spec("a", {"a"});
  risky.risk = "high";
  risky.needs_approval = true;
  start({risky, spec("b", {"b"}, {"a"}), spec("c", {"c"})});
  outcome("a", run::attempt_end::done);
  CAF_CHECK_EQUAL(state("a"), task_state::review);
  CAF_CHECK_EQUAL(book->tasks["a"].reason, "awaiting approval (risk: high)");
  CAF_CHECK(gits->merges.empty());
  CAF_CHECK_EQUAL(state("b"), task_state::pending);
  CAF_CHECK_EQUAL(
    steer(reject_atom::value, std::string{"c"}, std::string{"no"}),
    "!wrong_state: task c is running; reject applies to a task "
    "in review or held");
  CAF_CHECK_EQUAL(steer(approve_atom::value, std::string{"a"}), "a:merging");
  CAF_CHECK_EQUAL(gits->merges, strings{"a"});
  CAF_CHECK_EQUAL(state("a"), task_state::done);
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "c", "b"}));
}

CAF_TEST(a held task waits for approve and reject blocks another) {
  auto h = spec("h", {"h"});
  h.held = true;
  h.hold_reason = "[NEEDS DECISION: which db]";
  auto k = spec("k", {"k"});
  k.held = true;
  k.hold_reason = "[NEEDS DECISION]";
  start({h, k, spec("c", {"c"})});
  CAF_CHECK_EQUAL(state("h"), task_state::held);
  CAF_CHECK_EQUAL(book->tasks["h"].reason, "[NEEDS DECISION: which db]");
  CAF_CHECK_EQUAL(rec->launched_ids(), strings{"c"});
  CAF_CHECK_EQUAL(steer(approve_atom::value, std::string{"h"}), "h:pending");
  // The lift travels with the change, and h starts.
  CAF_CHECK(book->tasks["h"].facts.hold_lifted);
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"c", "h"}));
  CAF_CHECK_EQUAL(
    steer(reject_atom::value, std::string{"k"}, std::string{"not now"}),
    "k:blocked");
  CAF_CHECK_EQUAL(book->tasks["k"].reason, "rejected: not now");
  // A rejected task awaits an answer: the run settles on it once what
  // runs ended.
  outcome("c", run::attempt_end::done);
  CAF_CHECK(rec->finished.empty());
  outcome("h", run::attempt_end::done);
  CAF_CHECK_EQUAL(state("h"), task_state::done);
  CAF_CHECK_EQUAL(book->run, run_state::paused);
  CAF_CHECK_EQUAL(book->run_reason, "awaiting answer: k");
}

CAF_TEST(a blocked task waits for an answer and its next attempt starts
           with it) {
  run::rules r;
  r.ask_user_on_blocked = true;
  start({spec("a", {"a"}), spec("b", {"b"}, {"a"}), spec("c", {"c"})}, r);
  outcome("a", run::attempt_end::blocked, "which key?");
  CAF_CHECK_EQUAL(state("a"), task_state::blocked);
  CAF_CHECK_EQUAL(book->run, run_state::running); // c goes on
  outcome("c", run::attempt_end::done);
  CAF_CHECK_EQUAL(book->run, run_state::paused);
  CAF_CHECK_EQUAL(book->run_reason, "awaiting answer: a; waiting: b");
  // Kept open for the answer: the watcher is not told it is over.
  CAF_CHECK(rec->finished.empty());
  CAF_CHECK_EQUAL(steer(answer_atom::value, std::string{"c"}, std::string{"x"}),
                  "!wrong_state: task c is done; answer applies to a blocked "
                  "task");
  CAF_CHECK_EQUAL(
    steer(answer_atom::value, std::string{"a"}, std::string{"use key K"}),
    "a:ready");
  CAF_CHECK_EQUAL(book->run, run_state::running);
  auto& again = attempt_of("a");
  CAF_CHECK_EQUAL(again.attempt, 2u);
  CAF_CHECK_EQUAL(again.task.first_turn, turn_kind::answer);
  CAF_CHECK_EQUAL(again.task.turn_text, "use key K");
  CAF_CHECK_EQUAL(again.task.worktree, "/wt/a");
  outcome("a", run::attempt_end::done);
  outcome("b", run::attempt_end::done);
  CAF_CHECK_EQUAL(book->run, run_state::completed);
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
  CAF_CHECK_EQUAL(rec->finished[0].first, run_state::completed);
}

CAF_TEST(abort stops the workers and records the end once they stopped) {
  start({spec("a", {"a"}), spec("b", {"b"}), spec("c", {"c"}, {"a"})});
  self->send(orch, abort_atom::value, std::string{"by the user"});
  sched.run();
  CAF_CHECK_EQUAL(rec->cancelled, (strings{"a", "b"}));
  CAF_CHECK_EQUAL(book->run, run_state::running); // they still run
  outcome("a", run::attempt_end::interrupted, "interrupted");
  CAF_CHECK(rec->finished.empty());
  outcome("b", run::attempt_end::interrupted, "interrupted");
  CAF_CHECK_EQUAL(state("a"), task_state::interrupted);
  CAF_CHECK_EQUAL(state("c"), task_state::pending);
  CAF_CHECK_EQUAL(book->run, run_state::aborted);
  CAF_CHECK_EQUAL(book->run_reason, "by the user");
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
  CAF_CHECK_EQUAL(rec->finished[0].first, run_state::aborted);
}

CAF_TEST(an abort by another process is noticed at the next look) {
  start({spec("a", {"a"})});
  book->run = run_state::aborted;
  book->run_reason = "aborted by taskforce abort";
  self->send(orch, caf::tick_atom::value);
  sched.run();
  CAF_CHECK_EQUAL(rec->cancelled, strings{"a"});
  outcome("a", run::attempt_end::interrupted, "interrupted");
  CAF_CHECK_EQUAL(book->run, run_state::aborted);
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
  CAF_CHECK_EQUAL(rec->finished[0].first, run_state::aborted);
  CAF_CHECK_EQUAL(rec->finished[0].second, "aborted by taskforce abort");
}

CAF_TEST(a task waits for a managed tasks reservation and starts at a later
           look once it is gone) {
  prepare = true;
  book->reserved["a"] = "waits for managed task bg-1 (src)";
  start({spec("a", {"src/a.ts"}), spec("b", {"docs/"})});
  auto launches = [this](const std::string& id) {
    auto ids = rec->launched_ids();
    return std::count(ids.begin(), ids.end(), id);
  };
  // The start carries what the task writes, for the ledger to reserve.
  auto& first = book->batches.at(0);
  for (auto& c : first.changes)
    if (c.to == task_state::running && c.task_id == "a")
      CAF_CHECK(c.facts.files == std::vector<std::string>{"src/a.ts"});
  // b runs; a waits, ready, with the reason (its standby worker went), and
  // the run stays running.
  CAF_CHECK_EQUAL(state("b"), task_state::running);
  CAF_CHECK_EQUAL(rec->went, strings{"b"});
  CAF_CHECK_EQUAL(state("a"), task_state::ready);
  CAF_CHECK_EQUAL(book->tasks["a"].reason, "waits for managed task bg-1 (src)");
  CAF_CHECK_EQUAL(book->run, run_state::running);
  auto said = std::find_if(
    rec->events.begin(), rec->events.end(), [](const run_event& ev) {
      return ev.task_id == "a" && ev.state == task_state::ready
             && ev.reason
                  == "waits for managed task bg-1 "
                     "(src)";
    });
  CAF_CHECK(said != rec->events.end());
  // b ends; the run neither pauses nor completes while a waits.
  outcome("b", run::attempt_end::done);
  CAF_CHECK_EQUAL(state("b"), task_state::done);
  CAF_CHECK_EQUAL(book->run, run_state::running);
  CAF_CHECK(rec->finished.empty());
  // At the next look (time as the test moves it) the start is tried
  // again, without a worker on standby; the reservation is still there.
  auto tried = launches("a");
  auto batches = book->batches.size();
  sched.advance_time(std::chrono::milliseconds(500));
  sched.run();
  CAF_CHECK_GREATER(book->batches.size(), batches);
  CAF_CHECK_EQUAL(state("a"), task_state::ready);
  CAF_CHECK_EQUAL(launches("a"), tried);
  // The managed task is done: the next look starts a.
  book->reserved.clear();
  sched.advance_time(std::chrono::milliseconds(500));
  sched.run();
  CAF_CHECK_EQUAL(state("a"), task_state::running);
  CAF_CHECK_EQUAL(launches("a"), tried + 1);
  outcome("a", run::attempt_end::done);
  CAF_CHECK_EQUAL(book->run, run_state::completed);
}

CAF_TEST(a worker that dies ends its attempt and the task is tried again) {
  run::rules r;
  r.max_attempts = 2;
  start({spec("a", {"a"}), spec("b", {"b"})}, r);
  self->send_exit(attempt_of("a").worker, caf::exit_reason::kill);
  sched.run();
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "b", "a"}));
  CAF_CHECK_EQUAL(attempt_of("a").attempt, 2u);
  auto retry = book->batches[1].changes.at(0);
  CAF_CHECK_EQUAL(to_string(retry.to), std::string{"ready"});
  CAF_CHECK(retry.reason.find("attempt failed: the worker stopped") == 0);
  // A worker asked to stop that dies was interrupted, not failed.
  self->send(orch, pause_atom::value, std::string{"Ctrl-C"}, true);
  sched.run();
  self->send_exit(attempt_of("b").worker, caf::exit_reason::kill);
  sched.run();
  CAF_CHECK_EQUAL(state("b"), task_state::interrupted);
  // A late word from the dead attempt changes nothing.
  late_done("a", 1);
  CAF_CHECK_EQUAL(state("a"), task_state::running);
  outcome("a", run::attempt_end::interrupted);
  CAF_CHECK_EQUAL(book->run, run_state::paused);
  CAF_CHECK_EQUAL(book->run_reason, "Ctrl-C");
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
}

CAF_TEST(a worker that cannot start fails its attempt) {
  run::rules r;
  r.max_attempts = 1;
  rec->launch_failures = 1;
  start({spec("a", {"a"})}, r);
  CAF_CHECK_EQUAL(state("a"), task_state::failed);
  CAF_CHECK_EQUAL(book->tasks["a"].reason,
                  "cannot start the worker: no such backend");
  CAF_CHECK_EQUAL(book->run, run_state::paused);
}

CAF_TEST(a ledger failure pauses the run and nothing unrecorded is acted on) {
  start({spec("a", {"a"}), spec("b", {"b"})});
  book->fail_batches = 1;
  outcome("a", run::attempt_end::done);
  // a's move to merging never became durable: no merge.
  CAF_CHECK(gits->merges.empty());
  CAF_CHECK_EQUAL(state("a"), task_state::running);
  // b is stopped; the run ends once it stopped.
  CAF_CHECK_EQUAL(rec->cancelled, strings{"b"});
  CAF_CHECK(rec->finished.empty());
  outcome("b", run::attempt_end::interrupted);
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
  CAF_CHECK_EQUAL(rec->finished[0].first, run_state::paused);
  CAF_CHECK_EQUAL(rec->finished[0].second,
                  "the ledger failed: ledger_io: disk I/O error");
  // Nothing more was sent to the ledger after the failure.
  CAF_CHECK_EQUAL(book->batches.size(), 2u);
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "b"}));
}

CAF_TEST(a ledger that dies pauses the run with the reason) {
  start({spec("a", {"a"})});
  self->send_exit(ledger, caf::exit_reason::kill);
  sched.run();
  CAF_CHECK_EQUAL(rec->cancelled, strings{"a"});
  outcome("a", run::attempt_end::interrupted);
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
  CAF_CHECK_EQUAL(rec->finished[0].first, run_state::paused);
  CAF_CHECK(rec->finished[0].second.find("the ledger failed: it stopped") == 0);
  // A command meets the reason too.
  CAF_CHECK(steer(approve_atom::value, std::string{"a"})
              .find("!ledger_io: the ledger failed")
            == 0);
}

CAF_TEST(a git service that dies ends its merges and pauses the run) {
  start({spec("a", {"a"}), spec("b", {"b"})});
  self->send_exit(git, caf::exit_reason::kill);
  sched.run();
  outcome("a", run::attempt_end::done);
  outcome("b", run::attempt_end::interrupted);
  CAF_CHECK_EQUAL(state("a"), task_state::conflict);
  CAF_CHECK_EQUAL(book->run, run_state::paused);
  CAF_CHECK(book->run_reason.find("the git service stopped") == 0);
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
}

CAF_TEST(a refused change in a batch leaves the durable ones to go on) {
  run::rules r;
  r.max_concurrency = 2;
  // Another process put b on hold in the ledger.
  spawn({spec("a", {"a"}), spec("b", {"b"})}, r);
  book->tasks["b"].state = task_state::held;
  self->send(orch, start_atom::value);
  expect((start_atom), from(self).to(orch));
  expect((record_atom, transition_batch), from(orch).to(ledger));
  CAF_CHECK_EQUAL(show(book->batches[0]), "a:pending>ready b:pending>ready "
                                          "a:ready>running b:ready>running");
  expect((batch_acks), from(ledger).to(orch));
  // a's changes were durable: a launched. b's were refused: not.
  CAF_CHECK_EQUAL(rec->launched_ids(), strings{"a"});
  sched.run();
  CAF_CHECK_EQUAL(state("b"), task_state::held);
  CAF_CHECK_EQUAL(book->run, run_state::paused);
  CAF_CHECK(book->run_reason.find("the ledger refused a change of b") == 0);
  // The run waits for a, which still merges.
  CAF_CHECK(rec->finished.empty());
  outcome("a", run::attempt_end::done);
  CAF_CHECK_EQUAL(state("a"), task_state::done);
  CAF_CHECK_EQUAL(gits->merges, strings{"a"});
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
  CAF_CHECK_EQUAL(rec->finished[0].first, run_state::paused);
}

CAF_TEST(on standby a worker gets ready while its start is recorded) {
  prepare = true;
  run::rules r;
  r.max_concurrency = 2;
  spawn({spec("a", {"a"}), spec("b", {"b"}), spec("c", {"c"})}, r);
  self->send(orch, start_atom::value);
  expect((start_atom), from(self).to(orch));
  // Started with the batch, numbered as the ledger will number them, and
  // told to wait.
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "b"}));
  CAF_CHECK(attempt_of("a").task.standby);
  CAF_CHECK_EQUAL(attempt_of("a").attempt, 1u);
  expect((record_atom, transition_batch), from(orch).to(ledger));
  CAF_CHECK(rec->went.empty());
  expect((batch_acks), from(ledger).to(orch));
  sched.run();
  // Durable: they go, and nobody else starts.
  CAF_CHECK_EQUAL(rec->went, (strings{"a", "b"}));
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "b"}));
  // The next start is prepared with the batch that frees its slot.
  outcome("a", run::attempt_end::done);
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "b", "c"}));
  CAF_CHECK_EQUAL(rec->went, (strings{"a", "b", "c"}));
  CAF_CHECK(rec->cancelled.empty());
}

CAF_TEST(a refused start lets its standby worker go without a word) {
  prepare = true;
  run::rules r;
  r.max_concurrency = 2;
  // Another process put b on hold in the ledger.
  spawn({spec("a", {"a"}), spec("b", {"b"})}, r);
  book->tasks["b"].state = task_state::held;
  self->send(orch, start_atom::value);
  expect((start_atom), from(self).to(orch));
  expect((record_atom, transition_batch), from(orch).to(ledger));
  expect((batch_acks), from(ledger).to(orch));
  sched.run();
  CAF_CHECK_EQUAL(rec->went, strings{"a"});
  CAF_CHECK_EQUAL(rec->cancelled, strings{"b"});
  CAF_CHECK_EQUAL(state("b"), task_state::held);
  // What b's worker says now counts for nothing.
  late_done("b", 1);
  CAF_CHECK_EQUAL(state("b"), task_state::held);
  outcome("a", run::attempt_end::done);
  CAF_CHECK_EQUAL(state("a"), task_state::done);
}

CAF_TEST(changes made while a batch is in flight gather into the next) {
  run::rules r;
  r.max_concurrency = 3;
  start({spec("a", {"a"}), spec("b", {"b"}), spec("c", {"c"})}, r);
  auto before = book->batches.size();
  // Three outcomes arrive before the ledger answers the first batch.
  for (auto id : {"a", "b", "c"}) {
    attempt_outcome o;
    o.task_id = id;
    o.attempt = 1;
    o.end = run::attempt_end::failed;
    o.reason = "boom";
    self->send(orch, outcome_atom::value, o);
  }
  expect((outcome_atom, attempt_outcome), from(self).to(orch));
  expect((outcome_atom, attempt_outcome), from(self).to(orch));
  expect((outcome_atom, attempt_outcome), from(self).to(orch));
  expect((record_atom, transition_batch), from(orch).to(ledger));
  expect((batch_acks), from(ledger).to(orch));
  expect((record_atom, transition_batch), from(orch).to(ledger));
  CAF_CHECK_EQUAL(book->batches.size(), before + 2);
  // The first batch held a's retry; b's and c's went together.
  CAF_CHECK_EQUAL(show(book->batches[before]),
                  "a:running>ready a:ready>running");
  CAF_CHECK_EQUAL(show(book->batches[before + 1]),
                  "b:running>ready b:ready>running c:running>ready "
                  "c:ready>running");
  sched.run();
}

CAF_TEST(tasks added to a live run are recorded first and then scheduled) {
  start({spec("a", {"a"})});
  task_additions more;
  more.file = "MORE.md";
  more.tasks = {spec("c", {"c"}, {"a"}), spec("d", {"d"})};
  CAF_CHECK_EQUAL(steer(add_atom::value, more), "c:pending d:pending");
  CAF_CHECK_EQUAL(book->added, (strings{"c", "d"}));
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "d"}));
  // Ids already in the run, and cycles, are refused and change nothing.
  task_additions dup;
  dup.tasks = {spec("a", {"x"})};
  CAF_CHECK_EQUAL(steer(add_atom::value, dup),
                  "!duplicate_task: task a is already part of the run");
  task_additions cycle;
  cycle.tasks = {spec("e", {"e"}, {"f"}), spec("f", {"f"}, {"e"})};
  CAF_CHECK_EQUAL(steer(add_atom::value, cycle),
                  "!bad_tasks: tasks to add depend on each other in a cycle: "
                  "e, f");
  CAF_CHECK_EQUAL(book->added.size(), 2u);
  outcome("a", run::attempt_end::done);
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "d", "c"}));
  outcome("d", run::attempt_end::done);
  outcome("c", run::attempt_end::done);
  CAF_CHECK_EQUAL(book->run, run_state::completed);
}

CAF_TEST(a resume merges again what was cut short and finds a hand merge) {
  gits->check_answers["r"]
    = merge_outcome{run::merge_end::merged, "h-r", {}, "", ""};
  start({spec("m", {"m"}), spec("r", {"r"}), spec("i", {"i"})}, run::rules{},
        {task_state::merging, task_state::review, task_state::interrupted});
  CAF_CHECK_EQUAL(gits->merges, strings{"m"});
  CAF_CHECK_EQUAL(gits->checks, strings{"r"});
  CAF_CHECK_EQUAL(state("m"), task_state::done);
  CAF_CHECK_EQUAL(state("r"), task_state::done);
  CAF_CHECK_EQUAL(book->tasks["r"].reason, "merged by hand");
  CAF_CHECK(book->tasks["r"].facts.merge_commit == std::string{"h-r"});
  CAF_CHECK_EQUAL(rec->launched_ids(), strings{"i"});
}

CAF_TEST(tasks added as the last task ends join before the run completes) {
  start({spec("a", {"a"})});
  attempt_outcome o;
  o.task_id = "a";
  o.attempt = 1;
  o.end = run::attempt_end::done;
  self->send(orch, outcome_atom::value, o);
  // a is merging and its merge is with git when a person adds c.
  while (!sched.prioritize(git))
    sched.run_once();
  task_additions more;
  more.tasks = {spec("c", {"c"})};
  self->send(orch, add_atom::value, more);
  while (sched.prioritize(orch))
    sched.run_once();
  // a is merged before the ledger wrote c: nothing is left to run, but
  // the run must wait for c.
  while (sched.prioritize(git))
    sched.run_once();
  while (sched.prioritize(orch))
    sched.run_once();
  CAF_CHECK(book->added.empty());
  CAF_CHECK(rec->finished.empty());
  sched.run();
  CAF_CHECK_EQUAL(book->added, strings{"c"});
  CAF_CHECK_EQUAL(state("a"), task_state::done);
  CAF_CHECK_EQUAL(rec->launched_ids(), (strings{"a", "c"}));
  CAF_CHECK(rec->finished.empty());
  CAF_CHECK_EQUAL(book->run, run_state::running);
  outcome("c", run::attempt_end::done);
  CAF_CHECK_EQUAL(state("c"), task_state::done);
  CAF_CHECK_EQUAL(book->run, run_state::completed);
  CAF_REQUIRE_EQUAL(rec->finished.size(), 1u);
}

CAF_TEST_FIXTURE_SCOPE_END()
