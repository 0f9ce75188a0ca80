// The worker on the deterministic scheduler, with the git service, the
// mailbox, the orchestrator and the process helpers played by the test:
// which commands it starts for which turn, what it asks the git service,
// how cancel, a dying helper or a dying git service end the attempt.
#define CAF_SUITE actors.worker
#define FAIL(m) CAF_FAIL(m)
#include <caf/test/dsl.hpp>

#include <deque>
#include <memory>

#include "actors/worker.hpp"
#include "test.hpp"

using namespace taskforce;

namespace {

struct run_cfg : caf::actor_system_config {
  run_cfg() {
    add_message_types<caf::id_block::taskforce>();
    add_message_types<caf::id_block::taskforce_run>();
  }
};

/// What the test's fakes saw and will answer.
struct record {
  /// Every command the worker asked a helper to run, with the helper.
  std::vector<std::pair<process_job, caf::actor>> commands;
  /// The git service's next answers to `changed`.
  std::deque<scope_report> reports;
  /// The scope requests it got.
  std::vector<scope_request> checks;
  /// The git service answers `changed` only when told (promises kept here).
  bool hold_checks = false;
  /// Mail the mailbox hands out, one batch per take.
  std::deque<std::pair<std::vector<std::string>, std::vector<std::string>>>
    mail;
  /// How often the worker took mail.
  size_t takes = 0;
  /// The mailbox answers only when told (promises kept here).
  bool hold_mail = false;
  /// The mailbox says no mail waits (else it says some may).
  bool says_none = false;
  size_t questions = 0;
  std::vector<attempt_progress> progress;
  std::vector<attempt_outcome> outcomes;
};

git_actor::behavior_type fake_git(git_actor::pointer self,
                                  std::shared_ptr<record> rec,
                                  std::string worktree) {
  return {
    [worktree](lease_atom, worktree_request&) {
      return worktree_lease{worktree, "taskforce/r1/t1", false, "c0"};
    },
    [](snapshot_atom, scope_request&) {
      return std::string{"c0"};
    },
    [](release_atom, scope_request&) {
      // The attempt in place is over.
    },
    [self, rec](changed_atom, scope_request& req) -> caf::result<scope_report> {
      rec->checks.push_back(req);
      if (rec->hold_checks)
        return self->make_response_promise<scope_report>();
      if (rec->reports.empty())
        return scope_report{};
      auto r = rec->reports.front();
      rec->reports.pop_front();
      return r;
    },
    [](merge_atom, merge_request&) {
      return merge_outcome{};
    },
    [](check_atom, merge_request&) {
      return merge_outcome{};
    },
    [](review_atom, scope_request&, std::vector<std::string>&) {
      return caf::result<std::string, std::string>{std::string{},
                                                   std::string{}};
    },
    [](reviewed_atom, scope_request&, std::string&) {
      return std::vector<std::string>{};
    },
    [](discard_atom, std::string&, std::string&) {
      return true;
    },
    [](finished_atom) {
      return true;
    },
  };
}

worker_mail_actor::behavior_type fake_mail(worker_mail_actor::pointer self,
                                           std::shared_ptr<record> rec) {
  return {
    [self, rec](take_atom, std::string&, std::string&)
      -> caf::result<std::vector<std::string>, std::vector<std::string>> {
      ++rec->takes;
      if (rec->hold_mail)
        return self->make_response_promise<std::vector<std::string>,
                                           std::vector<std::string>>();
      if (rec->mail.empty())
        return {std::vector<std::string>{}, std::vector<std::string>{}};
      auto m = rec->mail.front();
      rec->mail.pop_front();
      return {m.first, m.second};
    },
    [rec](check_atom, std::string&, std::string&) {
      ++rec->questions;
      return !rec->says_none;
    },
  };
}

caf::behavior fake_orchestrator(std::shared_ptr<record> rec) {
  return {
    [rec](progress_atom, attempt_progress& p) {
      rec->progress.push_back(p);
    },
    [rec](outcome_atom, attempt_outcome& o) {
      rec->outcomes.push_back(o);
    },
  };
}

caf::behavior idle_helper() {
  return {[](int) {}};
}

/// The value of `name` in a command's environment.
std::string env_of(const process_job& job, const std::string& name) {
  for (auto& [k, v] : job.run.env)
    if (k == name)
      return v;
  return "(unset)";
}

/// What a command wrote before it ran, at a path ending in `suffix`.
std::string input_of(const process_job& job, const std::string& suffix) {
  for (auto& [path, text] : job.inputs)
    if (path.size() >= suffix.size()
        && path.compare(path.size() - suffix.size(), suffix.size(), suffix)
             == 0)
      return text;
  return "(none)";
}

proc_exited exited(int code, std::string tail) {
  proc_exited e;
  e.exit_code = code;
  e.tail = std::move(tail);
  e.description = "exit " + std::to_string(code);
  return e;
}

struct fixture : test_coordinator_fixture<run_cfg> {
  std::shared_ptr<record> rec = std::make_shared<record>();
  test::temp_dir root;
  test::temp_dir worktree;
  git_actor git;
  worker_mail_actor mail;
  caf::actor orch;
  caf::actor worker;

  ~fixture() {
    // The recorded jobs hold the worker (their owner): let go, then stop
    // whatever still runs.
    rec->commands.clear();
    for (auto& a : {worker, caf::actor_cast<caf::actor>(git),
                    caf::actor_cast<caf::actor>(mail), orch})
      if (a)
        anon_send_exit(a, caf::exit_reason::kill);
    run();
  }

  worker_job job() {
    worker_job j;
    j.run_id = "r1";
    j.task.id = "t1";
    j.task.title = "Add the cache";
    j.task.files = {"src/**"};
    j.task.run = "make cache";
    j.task.verify = "make test";
    j.cfg.worker = "shell";
    j.root = root.path();
    j.self_exe = "/usr/bin/taskforce";
    return j;
  }

  void start(worker_job j) {
    git = sys.spawn(fake_git, rec, worktree.path().string());
    mail = sys.spawn(fake_mail, rec);
    orch = sys.spawn(fake_orchestrator, rec);
    j.git = git;
    j.mail = mail;
    j.orchestrator = orch;
    auto r = rec;
    j.processes = [r](caf::actor_system& s, process_job pj) {
      auto helper = s.spawn(idle_helper);
      r->commands.emplace_back(std::move(pj), helper);
      return helper;
    };
    worker = spawn_worker(sys, std::move(j));
    run();
  }

  /// The last command the worker started.
  const process_job& command() {
    if (rec->commands.empty())
      CAF_FAIL("no command was started");
    return rec->commands.back().first;
  }

  caf::actor helper() {
    return rec->commands.back().second;
  }

  /// The last command starts and ends with `exit`.
  void finish_command(proc_exited exit) {
    auto h = helper();
    caf::send_as(h, worker, proc_started{4242, "r1/t1/#test-1"});
    caf::send_as(h, worker, std::move(exit));
    run();
  }

  const attempt_outcome& outcome() {
    if (rec->outcomes.size() != 1)
      CAF_FAIL("expected one outcome, got " << rec->outcomes.size());
    return rec->outcomes.front();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(worker_tests, fixture)

CAF_TEST(a passing attempt leases runs checks gates checks and reports done) {
  git = sys.spawn(fake_git, rec, worktree.path().string());
  mail = sys.spawn(fake_mail, rec);
  orch = sys.spawn(fake_orchestrator, rec);
  sched.run(); // the fakes' starts
  auto j = job();
  j.git = git;
  j.mail = mail;
  j.orchestrator = orch;
  auto r = rec;
  j.processes = [r](caf::actor_system& s, process_job pj) {
    auto helper = s.spawn(idle_helper);
    r->commands.emplace_back(std::move(pj), helper);
    return helper;
  };
  worker = spawn_worker(sys, std::move(j));
  sched.run_once(); // the worker's start
  expect((lease_atom, worktree_request), from(worker).to(git));
  expect((worktree_lease), from(git).to(worker));
  expect((progress_atom, attempt_progress), from(worker).to(orch));
  // Asked at the start, whether mail waits; the take follows the answer.
  expect((check_atom, std::string, std::string),
         from(worker).to(mail).with(_, "r1", "t1"));
  expect((bool), from(mail).to(worker));
  expect((take_atom, std::string, std::string),
         from(worker).to(mail).with(_, "r1", "t1"));
  expect((std::vector<std::string>, std::vector<std::string>),
         from(mail).to(worker));
  CAF_REQUIRE_EQUAL(rec->commands.size(), 1u);
  auto& turn = command();
  CAF_CHECK_EQUAL(turn.run.argv,
                  (std::vector<std::string>{"/bin/sh", "-c", "make cache"}));
  CAF_CHECK_EQUAL(turn.run.cwd, worktree.path().string());
  CAF_CHECK_EQUAL(env_of(turn, "TASKFORCE_RUN_ID"), "r1");
  CAF_CHECK_EQUAL(env_of(turn, "TASKFORCE_TASK_ID"), "t1");
  CAF_CHECK_EQUAL(env_of(turn, "TASKFORCE_ATTEMPT"), "1");
  CAF_CHECK_EQUAL(env_of(turn, "TASKFORCE_TURN"), "start");
  CAF_CHECK_EQUAL(env_of(turn, "TASKFORCE_REPO"), root.path().string());
  CAF_CHECK(turn.run.stdin_file.empty());
  CAF_CHECK_EQUAL(turn.run.label, "r1/t1/");
  CAF_CHECK_EQUAL(turn.run.record_folder,
                  (root.path() / ".taskforce" / "procs").string());
  rec->reports.push_back({{"src/cache.cpp"}, ""});
  rec->reports.push_back({{"src/cache.cpp"}, ""});
  auto h = helper();
  caf::send_as(h, worker, proc_started{4242, "r1/t1/#test-1"});
  caf::send_as(h, worker, exited(0, "[task:done] cache added"));
  expect((proc_started), from(h).to(worker));
  expect((proc_exited), from(h).to(worker));
  expect((progress_atom, attempt_progress), from(worker).to(orch));
  expect((changed_atom, scope_request), from(worker).to(git));
  expect((scope_report), from(git).to(worker));
  // The gate runs where the worker ran, told which turn it checks.
  CAF_REQUIRE_EQUAL(rec->commands.size(), 2u);
  auto& gate = command();
  CAF_CHECK_EQUAL(gate.run.argv,
                  (std::vector<std::string>{"/bin/sh", "-c", "make test"}));
  CAF_CHECK_EQUAL(env_of(gate, "TASKFORCE_TURN"), "start");
  finish_command(exited(0, "ok"));
  CAF_REQUIRE_EQUAL(rec->checks.size(), 2u);
  CAF_CHECK_EQUAL(rec->checks[1].checkout, worktree.path().string());
  CAF_CHECK_EQUAL(rec->checks[1].branch, "taskforce/r1/t1");
  CAF_CHECK_EQUAL(rec->checks[1].start, "c0");
  auto& o = outcome();
  CAF_CHECK(o.end == run::attempt_end::done);
  CAF_CHECK_EQUAL(o.reason, "cache added");
  CAF_CHECK_EQUAL(o.turns, 1u);
  CAF_CHECK_EQUAL(o.repairs, 0u);
  CAF_CHECK_EQUAL(o.worktree, worktree.path().string());
  CAF_CHECK_EQUAL(rec->takes, 2u);
  CAF_REQUIRE_EQUAL(rec->progress.size(), 2u);
  CAF_CHECK(rec->progress[0].phase == attempt_phase::leased);
  CAF_CHECK(rec->progress[1].phase == attempt_phase::verifying);
}

CAF_TEST(a failed gate becomes a repair turn with the gate output on stdin) {
  start(job());
  finish_command(exited(0, "[task:done] first try"));
  finish_command(exited(1, "FAIL: cache_test\n"));
  auto& repair = command();
  CAF_CHECK_EQUAL(env_of(repair, "TASKFORCE_TURN"), "repair");
  CAF_CHECK(!repair.run.stdin_file.empty());
  CAF_CHECK_EQUAL(input_of(repair, ".txt"),
                  "the gate failed (exit 1)\nFAIL: cache_test\n");
  CAF_CHECK(repair.run.append_log);
  finish_command(exited(0, "[task:done] fixed"));
  CAF_CHECK_EQUAL(env_of(command(), "TASKFORCE_TURN"), "repair");
  finish_command(exited(0, "ok"));
  auto& o = outcome();
  CAF_CHECK(o.end == run::attempt_end::done);
  CAF_CHECK_EQUAL(o.reason, "fixed");
  CAF_CHECK_EQUAL(o.repairs, 1u);
  CAF_CHECK_EQUAL(o.turns, 2u);
}

CAF_TEST(without repairs left a failed gate fails the attempt) {
  auto j = job();
  j.cfg.max_repairs = 0;
  start(std::move(j));
  finish_command(exited(0, "[task:done] first try"));
  finish_command(exited(2, "FAIL"));
  auto& o = outcome();
  CAF_CHECK(o.end == run::attempt_end::failed);
  CAF_CHECK_EQUAL(o.reason, "gate failed (exit 2)");
  CAF_CHECK_EQUAL(o.exit_code, 2);
}

CAF_TEST(an answer waiting for the task makes the first turn an answer) {
  rec->mail.push_back({{"Use an LRU cache."}, {}});
  start(job());
  auto& first = command();
  CAF_CHECK_EQUAL(env_of(first, "TASKFORCE_TURN"), "answer");
  CAF_CHECK_EQUAL(input_of(first, ".txt"), "Use an LRU cache.\n");
  CAF_CHECK_EQUAL(first.run.stdin_file, first.inputs.at(0).first);
}

CAF_TEST(mail that arrived meanwhile is a message turn checked and gated) {
  rec->mail.push_back({{}, {}}); // before the first turn
  rec->mail.push_back({{}, {"Also log cache misses."}}); // after the gate
  start(job());
  finish_command(exited(0, "[task:done] first"));
  finish_command(exited(0, "gate ok"));
  auto& message = command();
  CAF_CHECK_EQUAL(env_of(message, "TASKFORCE_TURN"), "message");
  CAF_CHECK_EQUAL(input_of(message, ".txt"), "Also log cache misses.\n");
  CAF_CHECK(rec->outcomes.empty());
  finish_command(exited(0, "[task:done] with logging"));
  // Checked and gated again, as the gate of a message turn.
  CAF_CHECK_EQUAL(command().run.argv.back(), "make test");
  CAF_CHECK_EQUAL(env_of(command(), "TASKFORCE_TURN"), "message");
  finish_command(exited(0, "gate ok"));
  auto& o = outcome();
  CAF_CHECK(o.end == run::attempt_end::done);
  CAF_CHECK_EQUAL(o.reason, "with logging");
  CAF_CHECK_EQUAL(o.turns, 2u);
  CAF_CHECK_EQUAL(rec->checks.size(), 4u);
  CAF_CHECK_EQUAL(rec->takes, 3u);
}

CAF_TEST(no mail is taken when the mailbox says none waits) {
  rec->says_none = true;
  start(job());
  finish_command(exited(0, "[task:done] first"));
  finish_command(exited(0, "gate ok"));
  CAF_CHECK(outcome().end == run::attempt_end::done);
  CAF_CHECK_EQUAL(rec->takes, 0u);
  // At the start, and after each command.
  CAF_CHECK_EQUAL(rec->questions, 3u);
}

CAF_TEST(a blocked report ends the attempt blocked with its question) {
  start(job());
  finish_command(exited(0, "[task:blocked] which eviction policy?"));
  auto& o = outcome();
  CAF_CHECK(o.end == run::attempt_end::blocked);
  CAF_CHECK_EQUAL(o.reason, "which eviction policy?");
  CAF_CHECK(rec->checks.empty());
}

CAF_TEST(changes outside the scope fail the attempt before the gate) {
  rec->reports.push_back({{"README.md", "src/cache.cpp"}, ""});
  start(job());
  finish_command(exited(0, "[task:done] x"));
  CAF_CHECK_EQUAL(outcome().reason,
                  "changed files outside its scope: README.md");
  CAF_CHECK_EQUAL(rec->commands.size(), 1u); // no gate ran
}

CAF_TEST(a moved HEAD after the gate fails the attempt naming the gate) {
  rec->reports.push_back({{"src/cache.cpp"}, ""});
  rec->reports.push_back({{}, "HEAD of wt left taskforce/r1/t1 for main"});
  start(job());
  finish_command(exited(0, "[task:done] x"));
  finish_command(exited(0, "gate ok"));
  CAF_CHECK(outcome().end == run::attempt_end::failed);
  CAF_CHECK_EQUAL(outcome().reason, "after the gate ran, HEAD of wt left "
                                    "taskforce/r1/t1 for main");
}

CAF_TEST(on standby a worker makes no worktree and runs nothing until told) {
  auto j = job();
  j.standby = true;
  start(std::move(j));
  // Waiting: no lease (a worktree is made only for a recorded start).
  CAF_CHECK(rec->commands.empty());
  CAF_CHECK(rec->progress.empty());
  self->send(worker, start_atom::value);
  run();
  CAF_REQUIRE_EQUAL(rec->commands.size(), 1u);
  CAF_CHECK_EQUAL(env_of(command(), "TASKFORCE_TURN"), "start");
  finish_command(exited(0, "[task:done] x"));
  finish_command(exited(0, "gate ok"));
  CAF_CHECK(outcome().end == run::attempt_end::done);
}

CAF_TEST(in place on standby the turn waits and a cancel ends it at once) {
  auto j = job();
  j.standby = true;
  j.cfg.use_worktrees = false;
  start(std::move(j));
  CAF_CHECK(rec->commands.empty());
  // A cancel now ends it at once: nothing runs, nothing waits.
  self->send(worker, cancel_atom::value);
  run();
  CAF_CHECK(rec->commands.empty());
  CAF_CHECK(outcome().end == run::attempt_end::interrupted);
}

CAF_TEST(a cancel before the start is honoured at the start) {
  start(job());
  self->send(worker, cancel_atom::value);
  run();
  CAF_CHECK(rec->outcomes.empty()); // the command may still be running
  finish_command(exited(-1, ""));
  auto& o = outcome();
  CAF_CHECK(o.end == run::attempt_end::interrupted);
  CAF_CHECK_EQUAL(o.reason, "interrupted");
  CAF_CHECK_EQUAL(rec->commands.size(), 1u);
}

CAF_TEST(
  a cancel during a git request ends the attempt interrupted not failed) {
  rec->hold_checks = true;
  start(job());
  auto h = helper();
  caf::send_as(h, worker, proc_started{4242, "r1/t1/#test-1"});
  caf::send_as(h, worker, exited(0, "[task:done] x"));
  run();
  CAF_REQUIRE_EQUAL(rec->checks.size(), 1u);
  self->send(worker, cancel_atom::value);
  expect((cancel_atom), from(self).to(worker));
  CAF_CHECK(rec->outcomes.empty());
  // The git service stops without answering: cancelled, the attempt is
  // interrupted (without the cancel it failed, see below).
  anon_send_exit(git, caf::exit_reason::kill);
  run();
  CAF_CHECK(outcome().end == run::attempt_end::interrupted);
}

CAF_TEST(a git service that stops while checking fails the attempt) {
  rec->hold_checks = true;
  start(job());
  finish_command(exited(0, "[task:done] x"));
  anon_send_exit(git, caf::exit_reason::kill);
  run();
  CAF_CHECK(outcome().end == run::attempt_end::failed);
  CAF_CHECK(outcome().reason.rfind("the git service stopped", 0) == 0);
}

CAF_TEST(a helper that dies without its exit fails the attempt) {
  start(job());
  anon_send_exit(helper(), caf::exit_reason::kill);
  run();
  CAF_CHECK(outcome().end == run::attempt_end::failed);
  CAF_CHECK(outcome().reason.rfind("the process helper stopped", 0) == 0);
}

CAF_TEST(a mailbox that stops leaves the attempt going without mail) {
  rec->hold_mail = true;
  start(job());
  CAF_CHECK(rec->commands.empty());
  anon_send_exit(mail, caf::exit_reason::kill);
  run();
  // Once, whatever else the mailbox's end brings.
  CAF_REQUIRE_EQUAL(rec->commands.size(), 1u);
  CAF_CHECK_EQUAL(env_of(command(), "TASKFORCE_TURN"), "start");
  finish_command(exited(0, "[task:done] x"));
  finish_command(exited(0, "gate ok"));
  CAF_CHECK(outcome().end == run::attempt_end::done);
  CAF_CHECK_EQUAL(rec->commands.size(), 2u);
}

CAF_TEST(messages of a helper that is not the current one are ignored) {
  start(job());
  auto stranger = sys.spawn(idle_helper);
  caf::send_as(stranger, worker, exited(0, "[task:done] not mine"));
  run();
  CAF_CHECK(rec->outcomes.empty());
  CAF_CHECK(rec->checks.empty());
}

CAF_TEST(claude names a session and a repair resumes it) {
  auto j = job();
  j.cfg.worker = "agent";
  j.cfg.agent_preset = "claude";
  start(std::move(j));
  auto first = command();
  auto& argv = first.run.argv;
  auto at = std::find(argv.begin(), argv.end(), "--session-id");
  CAF_REQUIRE(at != argv.end());
  auto session = *(at + 1);
  CAF_CHECK_EQUAL(session.size(), 36u);
  CAF_CHECK(input_of(first, ".md").rfind("# Task t1: Add the cache", 0) == 0);
  finish_command(exited(0, "```json\n{\"status\": \"done\"}\n```\n"));
  finish_command(exited(1, "FAIL: cache_test\n"));
  auto repair = command();
  CAF_CHECK_EQUAL(repair.run.argv[1], "-p");
  CAF_CHECK(repair.run.argv[2].rfind("## Repair (round 1)", 0) == 0);
  CAF_CHECK_EQUAL(repair.run.argv[3], "--resume");
  CAF_CHECK_EQUAL(repair.run.argv[4], session);
  // claude cannot find the session: the same turn runs fresh, once.
  finish_command(exited(1, "No conversation found with session ID: x\n"));
  auto fresh = command();
  CAF_CHECK_EQUAL(env_of(fresh, "TASKFORCE_TURN"), "repair");
  auto f
    = std::find(fresh.run.argv.begin(), fresh.run.argv.end(), "--session-id");
  CAF_REQUIRE(f != fresh.run.argv.end());
  auto second = *(f + 1);
  CAF_CHECK_NOT_EQUAL(second, session);
  CAF_CHECK(fresh.run.argv[2].rfind("# Task t1", 0) == 0);
  CAF_CHECK(fresh.run.argv[2].find("FAIL: cache_test") != std::string::npos);
  finish_command(exited(0, "```json\n{\"status\": \"done\"}\n```\n"));
  finish_command(exited(0, "gate ok"));
  auto& o = outcome();
  CAF_CHECK(o.end == run::attempt_end::done);
  CAF_CHECK_EQUAL(o.session, second);
  CAF_CHECK_EQUAL(o.turns, 3u);
}

CAF_TEST(an answer continues the session of the blocked attempt) {
  rec->mail.push_back({{"LRU, 100 entries."}, {}});
  auto j = job();
  j.cfg.worker = "agent";
  j.cfg.agent_preset = "codex";
  j.session = "01a232de-04ac-7d61-89a3-f9d6644b03ab";
  start(std::move(j));
  auto& first = command().run.argv;
  CAF_CHECK_EQUAL(first[2], "resume");
  CAF_CHECK_EQUAL(first[first.size() - 2],
                  "01a232de-04ac-7d61-89a3-f9d6644b03ab");
  CAF_CHECK(first.back().find("LRU, 100 entries.") != std::string::npos);
  CAF_CHECK_EQUAL(env_of(command(), "TASKFORCE_TURN"), "answer");
  // Its banner names the session; the outcome keeps it.
  proc_exited e = exited(0, "[task:blocked] still unsure");
  e.head = "session id: 01a232de-04ac-7d61-89a3-f9d6644b03ab\n";
  finish_command(e);
  CAF_CHECK_EQUAL(outcome().session, "01a232de-04ac-7d61-89a3-f9d6644b03ab");
}

CAF_TEST_FIXTURE_SCOPE_END()
