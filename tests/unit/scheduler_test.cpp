#define CAF_SUITE unit.scheduler
#include <caf/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "src/run/scheduler.hpp"

using namespace taskforce;
using namespace taskforce::run;

namespace {

task_spec make(std::string id, std::vector<std::string> files,
               std::vector<std::string> deps = {}, int64_t priority = 0) {
  task_spec t;
  t.id = std::move(id);
  t.title = t.id;
  t.files = std::move(files);
  t.deps = std::move(deps);
  t.priority = priority;
  return t;
}

plan::task_graph graph_of(std::vector<task_spec> tasks) {
  for (size_t i = 0; i < tasks.size(); ++i)
    tasks[i].index = i + 1;
  return plan::task_graph{std::move(tasks)};
}

scheduler make_scheduler(std::vector<task_spec> tasks, rules r = {},
                         std::vector<task_record> records = {}) {
  auto g = graph_of(std::move(tasks));
  records.resize(g.size());
  return scheduler{std::move(g), std::move(records), r};
}

/// "id:from>to" for each change, "+launch"/"+merge" for follow-ups.
std::string show(const scheduler& s, const decision& d) {
  std::string out;
  for (auto& c : d.changes) {
    if (!out.empty())
      out += ' ';
    out += s.graph().task(c.task).id + ":" + to_string(c.from) + ">"
           + to_string(c.to);
    if (c.then != follow_up::none)
      out += std::string{"+"} + to_string(c.then);
  }
  for (auto& o : d.now) {
    if (!out.empty())
      out += ' ';
    out += s.graph().task(o.task).id + "!" + to_string(o.what);
  }
  if (d.run) {
    if (!out.empty())
      out += ' ';
    out += std::string{"run:"} + to_string(d.run->to);
  }
  return out;
}

std::vector<std::string> launched(const scheduler& s, const decision& d) {
  std::vector<std::string> ids;
  for (auto& c : d.changes)
    if (c.then == follow_up::launch)
      ids.push_back(s.graph().task(c.task).id);
  return ids;
}

size_t at(const scheduler& s, const char* id) {
  return *s.find(id);
}

using ids = std::vector<std::string>;

} // namespace

CAF_TEST(a fresh run starts ready tasks up to the concurrency in order) {
  rules r;
  r.max_concurrency = 2;
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"}, {}, 5),
                           make("c", {"c"}), make("d", {"d"}, {"a"})},
                          r);
  CAF_CHECK_EQUAL(show(s, s.start()), "run:running");
  auto d = s.next();
  // a, b and c become ready; the higher priority b and then a start.
  CAF_CHECK_EQUAL(show(s, d), "a:pending>ready b:pending>ready "
                              "c:pending>ready b:ready>running+launch "
                              "a:ready>running+launch");
  CAF_CHECK_EQUAL(s.attempts_open(), 2u);
  CAF_CHECK(s.next().empty());
}

CAF_TEST(passing work is merged and unlocks its dependents) {
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"}, {"a"})});
  s.start();
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
  auto a = at(s, "a");
  CAF_CHECK_EQUAL(show(s, s.worker_phase(a, task_event::work_done)),
                  "a:running>verifying");
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(a, attempt_end::done, "")),
                  "a:verifying>merging+merge");
  CAF_CHECK(s.next().empty()); // b waits for the merge
  CAF_CHECK_EQUAL(show(s, s.merge_ended(a, merge_end::merged, "")),
                  "a:merging>done");
  CAF_CHECK_EQUAL(show(s, s.next()), "b:pending>ready b:ready>running+launch");
  auto b = at(s, "b");
  // A worker that reports done without a phase message is verified too.
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(b, attempt_end::done, "")),
                  "b:running>verifying b:verifying>merging+merge");
  s.merge_ended(b, merge_end::empty, "");
  CAF_CHECK_EQUAL(s.reason(b), "no changes");
  CAF_CHECK_EQUAL(show(s, s.next()), "run:completed");
  CAF_CHECK_EQUAL(s.phase(), run_phase::completed);
}

CAF_TEST(conflicting tasks never run at once and a merge holds the scope) {
  rules r;
  r.max_concurrency = 3;
  auto s = make_scheduler(
    {make("a", {"src/**"}), make("b", {"src/x.ts"}), make("c", {"docs/x.md"})},
    r);
  s.start();
  CAF_CHECK_EQUAL(launched(s, s.next()), (ids{"a", "c"}));
  s.attempt_ended(at(s, "a"), attempt_end::done, "");
  CAF_CHECK(launched(s, s.next()).empty()); // a merges: src/** is taken
  s.merge_ended(at(s, "a"), merge_end::merged, "");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"b"});
}

CAF_TEST(a task without files runs alone) {
  rules r;
  r.max_concurrency = 3;
  auto s
    = make_scheduler({make("a", {}), make("b", {"b"}), make("c", {"c"})}, r);
  s.start();
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
  s.attempt_ended(0, attempt_end::done, "");
  s.merge_ended(0, merge_end::merged, "");
  CAF_CHECK_EQUAL(launched(s, s.next()), (ids{"b", "c"}));
}

CAF_TEST(a failed attempt is retried until the attempts are used up) {
  rules r;
  r.max_attempts = 2;
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"})}, r);
  s.start();
  s.next();
  auto a = at(s, "a");
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(a, attempt_end::failed, "exit 1")),
                  "a:running>ready");
  CAF_CHECK_EQUAL(s.reason(a), "attempt failed: exit 1");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(a, attempt_end::failed, "exit 1")),
                  "a:running>failed run:paused");
  CAF_CHECK_EQUAL(s.phase(), run_phase::pausing); // b still runs
  CAF_CHECK(launched(s, s.next()).empty());
  s.attempt_ended(at(s, "b"), attempt_end::done, "");
  s.merge_ended(at(s, "b"), merge_end::merged, "");
  auto end = s.next();
  CAF_CHECK(!end.run); // recorded paused already
  CAF_CHECK_EQUAL(s.phase(), run_phase::paused);
  CAF_CHECK(s.finished());
}

CAF_TEST(continue on error skips the dependents and completes the rest) {
  rules r;
  r.max_attempts = 1;
  r.continue_on_error = true;
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"}, {"a"}),
                           make("c", {"c"}, {"b"}), make("d", {"d"})},
                          r);
  s.start();
  s.next();
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(0, attempt_end::failed, "boom")),
                  "a:running>failed b:pending>skipped c:pending>skipped");
  CAF_CHECK_EQUAL(s.reason(at(s, "c")), "dependency a failed");
  s.attempt_ended(at(s, "d"), attempt_end::done, "");
  s.merge_ended(at(s, "d"), merge_end::merged, "");
  auto end = s.next();
  CAF_REQUIRE(end.run.has_value());
  CAF_CHECK_EQUAL(end.run->to, run_state::completed);
  CAF_CHECK_EQUAL(end.run->reason, "failed: a");
}

CAF_TEST(a blocked task pauses the run with its question) {
  auto s = make_scheduler({make("a", {"a"})});
  s.start();
  s.next();
  auto d = s.attempt_ended(0, attempt_end::blocked, "which key?");
  CAF_CHECK_EQUAL(show(s, d), "a:running>blocked run:paused");
  CAF_CHECK_EQUAL(d.run->reason, "a blocked: which key?");
  CAF_CHECK_EQUAL(s.reason(0), "which key?");
  s.next();
  CAF_CHECK(s.finished());
  CAF_CHECK(!s.awaiting_answer());
}

CAF_TEST(ask user on blocked keeps the run open for an answer) {
  rules r;
  r.ask_user_on_blocked = true;
  auto s = make_scheduler(
    {make("a", {"a"}), make("b", {"b"}, {"a"}), make("c", {"c"})}, r);
  s.start();
  CAF_CHECK_EQUAL(launched(s, s.next()), (ids{"a", "c"}));
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(0, attempt_end::blocked, "key?")),
                  "a:running>blocked");
  CAF_CHECK(s.next().empty()); // c goes on
  s.attempt_ended(at(s, "c"), attempt_end::done, "");
  s.merge_ended(at(s, "c"), merge_end::merged, "");
  auto pause = s.next();
  CAF_REQUIRE(pause.run.has_value());
  CAF_CHECK_EQUAL(pause.run->to, run_state::paused);
  CAF_CHECK_EQUAL(pause.run->reason, "awaiting answer: a; waiting: b");
  CAF_CHECK(s.awaiting_answer());
  auto answered = s.answer(0);
  CAF_REQUIRE(answered.ok);
  CAF_CHECK_EQUAL(show(s, answered.changes), "a:blocked>ready run:running");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
  CAF_CHECK_EQUAL(s.phase(), run_phase::running);
}

CAF_TEST(a pause a person asks for ends a run that awaits an answer) {
  rules r;
  r.ask_user_on_blocked = true;
  auto s = make_scheduler({make("a", {"a"})}, r);
  s.start();
  s.next();
  s.attempt_ended(0, attempt_end::blocked, "key?");
  s.next();
  CAF_REQUIRE(s.awaiting_answer());
  // Ctrl-C: the driver may stop; the task stays blocked for the answer.
  s.pause("interrupted by Ctrl-C", true);
  CAF_CHECK(s.finished());
  CAF_CHECK(!s.awaiting_answer());
  CAF_CHECK_EQUAL(s.state(0), task_state::blocked);
}

CAF_TEST(risky work waits in review until approved and is never merged before) {
  auto g = graph_of({make("a", {"a"}), make("b", {"b"}, {"a"})});
  std::vector<task_record> records(2);
  records[0].needs_approval = true;
  scheduler s{std::move(g), std::move(records), rules{}};
  s.start();
  s.next();
  auto d = s.attempt_ended(0, attempt_end::done, "");
  CAF_CHECK_EQUAL(show(s, d), "a:running>verifying a:verifying>merging "
                              "a:merging>review");
  for (auto& c : d.changes)
    CAF_CHECK(c.then != follow_up::merge);
  auto pause = s.next();
  CAF_REQUIRE(pause.run.has_value());
  CAF_CHECK_EQUAL(pause.run->reason, "awaiting approval: a; waiting: b");
  // On a live driver a person approves: the run wakes and merges.
  auto ok = s.approve(0);
  CAF_REQUIRE(ok.ok);
  CAF_CHECK_EQUAL(show(s, ok.changes), "a:review>merging+merge run:running");
  s.merge_ended(0, merge_end::merged, "");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"b"});
}

CAF_TEST(approve reject and answer refuse other states and name them) {
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"})});
  s.start();
  s.next();
  auto r = s.approve(0);
  CAF_CHECK(!r.ok);
  CAF_CHECK_EQUAL(r.error, "task a is running; approve applies to a task in "
                           "review or held");
  CAF_CHECK(r.changes.empty());
  CAF_CHECK_EQUAL(s.state(0), task_state::running);
  CAF_CHECK(!s.reject(1, "no").ok);
  auto a = s.answer(1);
  CAF_CHECK(!a.ok);
  CAF_CHECK_EQUAL(a.error, "task b is running; answer applies to a blocked "
                           "task");
}

CAF_TEST(a rejected task waits for its answer at resume a blocked one runs) {
  auto g = graph_of({make("a", {"a"}), make("b", {"b"})});
  std::vector<task_record> records(2);
  records[0].state = task_state::blocked;
  records[0].reason = "rejected: wrong format";
  records[1].state = task_state::blocked;
  records[1].reason = "which key?";
  scheduler s{std::move(g), std::move(records), rules{}};
  auto d = s.start();
  d += s.next();
  CAF_CHECK_EQUAL(s.state(0), task_state::blocked);
  CAF_CHECK_EQUAL(s.reason(0), "rejected: wrong format");
  CAF_CHECK_EQUAL(launched(s, d), ids{"b"});
  // The answer runs it again.
  auto answered = s.answer(0);
  CAF_REQUIRE(answered.ok);
  CAF_CHECK_EQUAL(s.state(0), task_state::ready);
}

CAF_TEST(held tasks never start until approved and reject blocks them) {
  auto g = graph_of({make("a", {"a"}), make("b", {"b"}), make("c", {"c"})});
  std::vector<task_record> records(3);
  records[0].hold = true;
  records[0].hold_reason = "[NEEDS DECISION: which db]";
  records[1].hold = true;
  records[1].hold_reason = "[NEEDS DECISION]";
  scheduler s{std::move(g), std::move(records), rules{}};
  CAF_CHECK_EQUAL(show(s, s.start()),
                  "a:pending>held b:pending>held run:running");
  CAF_CHECK_EQUAL(s.reason(0), "[NEEDS DECISION: which db]");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"c"});
  s.attempt_ended(2, attempt_end::done, "");
  s.merge_ended(2, merge_end::merged, "");
  auto pause = s.next();
  CAF_REQUIRE(pause.run.has_value());
  CAF_CHECK_EQUAL(pause.run->reason, "held: a, b");
  auto lifted = s.approve(0);
  CAF_REQUIRE(lifted.ok);
  CAF_CHECK_EQUAL(show(s, lifted.changes), "a:held>pending run:running");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
  auto no = s.reject(1, "not now");
  CAF_REQUIRE(no.ok);
  // It awaits an answer while a goes on; then the run settles on it.
  CAF_CHECK_EQUAL(show(s, no.changes), "b:held>blocked");
  CAF_CHECK_EQUAL(s.reason(1), "rejected: not now");
  s.attempt_ended(0, attempt_end::done, "");
  s.merge_ended(0, merge_end::merged, "");
  auto settled = s.next();
  CAF_REQUIRE(settled.run.has_value());
  CAF_CHECK_EQUAL(settled.run->to, run_state::paused);
  CAF_CHECK_EQUAL(settled.run->reason, "awaiting answer: b");
}

CAF_TEST(a resume retries what failed and merges what was cut short) {
  auto g = graph_of({make("a", {"a"}), make("b", {"b"}), make("c", {"c"}),
                     make("d", {"d"}), make("e", {"e"}), make("f", {"f"}),
                     make("g", {"g"}, {"a"})});
  std::vector<task_record> records(7);
  records[0].state = task_state::failed;
  records[1].state = task_state::blocked;
  records[2].state = task_state::conflict;
  records[3].state = task_state::merging;
  records[4].state = task_state::review;
  records[5].state = task_state::held; // the file no longer holds it
  records[6].state = task_state::skipped;
  scheduler s{std::move(g), std::move(records), rules{}};
  CAF_CHECK_EQUAL(show(s, s.start()),
                  "a:failed>pending b:blocked>pending "
                  "c:conflict>merging+merge f:held>pending "
                  "g:skipped>pending d!merge e!check_merged run:running");
  CAF_CHECK(!s.quiet()); // merges and the check are out
  // e was merged by hand while it waited.
  CAF_CHECK_EQUAL(show(s, s.merge_ended(4, merge_end::merged, "")),
                  "e:review>done");
  CAF_CHECK_EQUAL(s.reason(4), "merged by hand");
}

CAF_TEST(a late hand merge check after an approval is ignored) {
  auto g = graph_of({make("a", {"a"})});
  std::vector<task_record> records(1);
  records[0].state = task_state::review;
  scheduler s{std::move(g), std::move(records), rules{}};
  s.start();
  CAF_REQUIRE(s.approve(0).ok);
  CAF_CHECK(s.merge_ended(0, merge_end::not_merged, "").empty());
  CAF_CHECK_EQUAL(s.state(0), task_state::merging);
  CAF_CHECK_EQUAL(show(s, s.merge_ended(0, merge_end::merged, "")),
                  "a:merging>done");
}

CAF_TEST(a conflict pauses the run) {
  auto s = make_scheduler({make("a", {"a"})});
  s.start();
  s.next();
  s.attempt_ended(0, attempt_end::done, "");
  auto d = s.merge_ended(0, merge_end::conflict, "merge conflict in a");
  CAF_CHECK_EQUAL(show(s, d), "a:merging>conflict run:paused");
  CAF_CHECK_EQUAL(d.run->reason, "a: merge conflict in a");
}

CAF_TEST(a moved base fails the attempt and pauses even on continue on error) {
  rules r;
  r.max_attempts = 3;
  r.continue_on_error = true;
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"}, {"a"})}, r);
  s.start();
  s.next();
  auto d = s.attempt_ended(0, attempt_end::base_moved, "main moved");
  // No retry, no skipped dependents: the run waits for a person.
  CAF_CHECK_EQUAL(show(s, d), "a:running>failed run:paused");
  CAF_CHECK_EQUAL(d.run->reason, "a failed: main moved");
  s.next();
  CAF_CHECK_EQUAL(s.phase(), run_phase::paused);
}

CAF_TEST(a merge refused for a moved base waits in conflict and pauses) {
  rules r;
  r.continue_on_error = true;
  auto s = make_scheduler({make("a", {"a"})}, r);
  s.start();
  s.next();
  s.attempt_ended(0, attempt_end::done, "");
  auto d = s.merge_ended(0, merge_end::base_moved, "main moved back");
  CAF_CHECK_EQUAL(show(s, d), "a:merging>conflict run:paused");
  CAF_CHECK_EQUAL(d.run->reason, "a: main moved back");
}

CAF_TEST(an interrupting pause cancels the attempts and ends once they stop) {
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"})});
  s.start();
  s.next();
  auto d = s.pause("interrupted by Ctrl-C", true);
  CAF_CHECK_EQUAL(show(s, d), "a!cancel b!cancel run:paused");
  s.attempt_ended(0, attempt_end::interrupted, "interrupted");
  CAF_CHECK(!s.finished());
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(1, attempt_end::interrupted, "x")),
                  "b:running>interrupted");
  CAF_CHECK(s.next().empty());
  CAF_CHECK(s.finished());
  // The interrupted ones start again at the next run's start.
  auto g = s.graph();
  std::vector<task_record> records(2);
  records[0].state = records[1].state = task_state::interrupted;
  scheduler again{g, records, rules{}};
  again.start();
  CAF_CHECK_EQUAL(show(again, again.next()),
                  "a:interrupted>running+launch b:interrupted>running+launch");
}

CAF_TEST(abort cancels the attempts and records the end once they stop) {
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"}, {"a"})});
  s.start();
  s.next();
  CAF_CHECK_EQUAL(show(s, s.abort("by the user")), "a!cancel");
  // A failure during an abort is not retried.
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(0, attempt_end::failed, "killed")),
                  "a:running>failed");
  auto end = s.next();
  CAF_REQUIRE(end.run.has_value());
  CAF_CHECK_EQUAL(end.run->to, run_state::aborted);
  CAF_CHECK_EQUAL(end.run->reason, "by the user");
  CAF_CHECK(launched(s, end).empty());
}

CAF_TEST(a run aborted elsewhere as it completed here ends aborted) {
  auto s = make_scheduler({make("a", {"a"})});
  s.start();
  s.next();
  s.attempt_ended(0, attempt_end::done, "");
  s.merge_ended(0, merge_end::merged, "");
  CAF_CHECK_EQUAL(s.next().run->to, run_state::completed);
  CAF_CHECK(s.abort("too late").empty()); // a completed run stays so
  auto d = s.aborted_elsewhere("aborted by another process");
  CAF_REQUIRE(d.run.has_value());
  CAF_CHECK_EQUAL(d.run->to, run_state::aborted);
  CAF_CHECK_EQUAL(s.phase(), run_phase::aborted);
}

CAF_TEST(events that do not apply to the state of a task are refused) {
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"}, {"a"})});
  s.start();
  s.next();
  // b never started: no outcome, merge or phase applies to it.
  CAF_CHECK(s.attempt_ended(1, attempt_end::done, "").empty());
  CAF_CHECK(s.merge_ended(1, merge_end::merged, "").empty());
  CAF_CHECK(s.worker_phase(1, task_event::repair).empty());
  CAF_CHECK_EQUAL(s.state(1), task_state::pending);
  // a runs: a merge result is not its word.
  CAF_CHECK(s.merge_ended(0, merge_end::merged, "").empty());
  CAF_CHECK_EQUAL(s.state(0), task_state::running);
  // The table itself refuses what the lifecycle forbids.
  CAF_CHECK(!transition(task_state::done, task_event::start));
  CAF_CHECK(!transition(task_state::pending, task_event::merged));
  CAF_CHECK(!transition(task_state::running, task_event::merged));
}

CAF_TEST(the ledger refusing a change puts the task where the ledger says) {
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"})});
  s.start();
  s.next();
  auto d = s.refused(0, task_state::ready, "expected ready, found running");
  CAF_CHECK_EQUAL(s.state(0), task_state::ready);
  CAF_REQUIRE(d.run.has_value());
  CAF_CHECK_EQUAL(d.run->to, run_state::paused);
  CAF_CHECK(launched(s, s.next()).empty());
}

CAF_TEST(added tasks join the run and new ids are required) {
  auto s = make_scheduler({make("a", {"a"})});
  s.start();
  s.next();
  auto dup = s.add({make("a", {"x"})});
  CAF_CHECK(!dup.ok);
  CAF_CHECK_EQUAL(dup.error, "task a is already part of the run");
  auto unknown = s.add({make("z", {"z"}, {"nope"})});
  CAF_CHECK(!unknown.ok);
  CAF_CHECK_EQUAL(s.size(), 1u);
  auto added = s.add({make("b", {"b"}, {"a"}), make("c", {"c"})});
  CAF_REQUIRE(added.ok);
  CAF_CHECK_EQUAL(s.size(), 3u);
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"c"});
  s.attempt_ended(0, attempt_end::done, "");
  s.merge_ended(0, merge_end::merged, "");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"b"});
}

CAF_TEST(assist mode leaves passing work in place and review mode keeps it) {
  rules leave;
  leave.finish = integration::leave;
  auto s = make_scheduler({make("a", {"a"})}, leave);
  s.start();
  s.next();
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(0, attempt_end::done, "")),
                  "a:running>verifying a:verifying>merging a:merging>done");
  rules review;
  review.finish = integration::review;
  auto k = make_scheduler({make("a", {"a"})}, review);
  k.start();
  k.next();
  k.attempt_ended(0, attempt_end::done, "");
  CAF_CHECK_EQUAL(k.state(0), task_state::review);
  CAF_CHECK_EQUAL(k.reason(0), "kept for review");
}

CAF_TEST(random runs keep every rule of the lifecycle and the schedule) {
  // Random graphs, random outcomes, pauses and resumes: every change is a
  // legal move from the state it names, the concurrency and the conflicts
  // hold at every step, and every run ends.
  for (unsigned seed = 1; seed <= 200; ++seed) {
    std::mt19937 rng{seed};
    auto pick = [&](size_t n) {
      return static_cast<size_t>(rng() % n);
    };
    size_t n = 2 + pick(10);
    std::vector<task_spec> specs;
    for (size_t i = 0; i < n; ++i) {
      std::vector<std::string> files;
      if (pick(6) != 0)
        files.push_back("f" + std::to_string(pick(6)));
      std::vector<std::string> deps;
      if (i > 0 && pick(3) == 0)
        deps.push_back("t" + std::to_string(pick(i)));
      specs.push_back(make("t" + std::to_string(i), files, deps,
                           static_cast<int64_t>(pick(3))));
    }
    rules r;
    r.max_concurrency = 1 + pick(3);
    r.max_attempts = 1 + pick(2);
    r.continue_on_error = pick(2) == 0;
    r.ask_user_on_blocked = pick(2) == 0;
    auto g = graph_of(specs);
    std::vector<task_record> records(n);
    scheduler s{g, records, r};
    std::vector<task_state> replay(n, task_state::pending);
    auto apply = [&](const decision& d) {
      for (auto& c : d.changes) {
        CAF_REQUIRE_EQUAL(c.from, replay[c.task]);
        auto to = transition(c.from, c.event);
        CAF_REQUIRE(to.has_value());
        CAF_REQUIRE_EQUAL(*to, c.to);
        replay[c.task] = c.to;
      }
      size_t open = 0;
      std::vector<size_t> active;
      for (size_t i = 0; i < n; ++i) {
        CAF_REQUIRE_EQUAL(replay[i], s.state(i));
        open += in_attempt(replay[i]) ? 1 : 0;
        if (is_active(replay[i]))
          active.push_back(i);
      }
      CAF_REQUIRE(open <= r.max_concurrency);
      for (auto a : active)
        for (auto b : active)
          CAF_REQUIRE(a == b || !s.graph().conflict(a, b));
    };
    apply(s.start());
    size_t steps = 0;
    while (!s.finished() && steps++ < 10000) {
      apply(s.next());
      if (s.finished())
        break;
      std::vector<size_t> busy;
      for (size_t i = 0; i < n; ++i)
        if (is_active(s.state(i)))
          busy.push_back(i);
      if (busy.empty()) {
        // Nothing runs but the run is open: someone answers.
        bool acted = false;
        for (size_t i = 0; i < n && !acted; ++i)
          if (s.state(i) == task_state::blocked) {
            auto a = s.answer(i);
            CAF_REQUIRE(a.ok);
            apply(a.changes);
            acted = true;
          }
        CAF_REQUIRE(acted);
        continue;
      }
      auto t = busy[pick(busy.size())];
      if (s.state(t) == task_state::merging) {
        apply(s.merge_ended(
          t, pick(5) == 0 ? merge_end::conflict : merge_end::merged, "m"));
      } else if (pick(4) == 0 && s.state(t) == task_state::running) {
        apply(s.worker_phase(t, task_event::work_done));
      } else {
        auto end = static_cast<attempt_end>(pick(4));
        apply(s.attempt_ended(t, end, "x"));
      }
      if (pick(30) == 0)
        apply(s.pause("p", pick(2) == 0));
    }
    CAF_REQUIRE(s.finished());
  }
}

CAF_TEST(tasks to add are checked before anything changes) {
  auto s = make_scheduler({make("a", {"a"})});
  s.start();
  s.next();
  auto dup = s.check_add({make("b", {"b"}), make("b", {"c"})});
  CAF_CHECK(!dup.ok);
  CAF_CHECK_EQUAL(dup.why_not, refusal::duplicate);
  auto cycle = s.check_add({make("b", {"b"}, {"c"}), make("c", {"c"}, {"b"}),
                            make("d", {"d"}, {"a"})});
  CAF_CHECK(!cycle.ok);
  CAF_CHECK_EQUAL(cycle.why_not, refusal::invalid);
  CAF_CHECK_EQUAL(cycle.error,
                  "tasks to add depend on each other in a cycle: b, c");
  auto self_dep = s.add({make("e", {"e"}, {"e"})});
  CAF_CHECK(!self_dep.ok);
  CAF_CHECK_EQUAL(self_dep.why_not, refusal::invalid);
  CAF_CHECK(!s.check_add({make("", {"x"})}).ok);
  CAF_CHECK_EQUAL(s.size(), 1u);
  // Added tasks may depend on each other in any order.
  CAF_CHECK(s.check_add({make("c", {"c"}, {"b"}), make("b", {"b"}, {"a"})}).ok);
  CAF_CHECK_EQUAL(s.approve(0).why_not, refusal::wrong_state);
}

CAF_TEST(added tasks keep their hold and their need for approval) {
  auto s = make_scheduler({make("a", {"a"})});
  s.start();
  s.next();
  auto held = make("h", {"h"});
  held.held = true;
  held.hold_reason = "[NEEDS DECISION: which]";
  auto risky = make("r", {"r"});
  risky.risk = "high";
  risky.needs_approval = true;
  auto added = s.add({held, risky});
  CAF_REQUIRE(added.ok);
  CAF_CHECK_EQUAL(show(s, added.changes), "h:pending>held");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"r"});
  auto r = at(s, "r");
  auto d = s.attempt_ended(r, attempt_end::done, "");
  CAF_CHECK_EQUAL(s.state(r), task_state::review);
  for (auto& c : d.changes)
    CAF_CHECK(c.then != follow_up::merge);
}

CAF_TEST(a refused change keeps a completing run from being recorded done) {
  auto s = make_scheduler({make("a", {"a"})});
  s.start();
  s.next();
  s.attempt_ended(0, attempt_end::done, "");
  s.merge_ended(0, merge_end::merged, "");
  auto end = s.next();
  CAF_REQUIRE(end.run.has_value());
  CAF_CHECK_EQUAL(end.run->to, run_state::completed);
  // The ledger refused a:merging>done: it still has a merging.
  auto d = s.refused(0, task_state::merging, "a is verifying");
  CAF_REQUIRE(d.run.has_value());
  CAF_CHECK_EQUAL(d.run->to, run_state::paused);
  CAF_CHECK_EQUAL(s.phase(), run_phase::pausing);
  CAF_CHECK_EQUAL(s.phase_reason(),
                  "the ledger refused a change of a: a is verifying");
}

CAF_TEST(a rejected task holds its dependents until it is answered) {
  rules r;
  r.continue_on_error = true;
  auto g
    = graph_of({make("a", {"a"}), make("b", {"b"}, {"a"}), make("c", {"c"})});
  std::vector<task_record> records(3);
  records[0].needs_approval = true;
  scheduler s{std::move(g), std::move(records), r};
  s.start();
  s.next();
  s.attempt_ended(0, attempt_end::done, "");
  s.attempt_ended(2, attempt_end::done, "");
  s.merge_ended(2, merge_end::merged, "");
  auto paused = s.next();
  CAF_REQUIRE(paused.run.has_value());
  CAF_CHECK_EQUAL(paused.run->reason, "awaiting approval: a; waiting: b");
  // The reject wakes the settled run, which looks again.
  auto no = s.reject(0, "too risky");
  CAF_REQUIRE(no.ok);
  // Not a failure: even under continueOnError its dependents wait.
  CAF_CHECK_EQUAL(show(s, no.changes), "a:review>blocked run:running");
  auto end = s.next();
  CAF_REQUIRE(end.run.has_value());
  CAF_CHECK_EQUAL(end.run->to, run_state::paused);
  CAF_CHECK_EQUAL(end.run->reason, "awaiting answer: a; waiting: b");
  // The answer lets it run again.
  auto answered = s.answer(0);
  CAF_REQUIRE(answered.ok);
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
}

CAF_TEST(a run with tasks joining does not settle before they joined) {
  auto s = make_scheduler({make("a", {"a"})});
  s.start();
  s.next();
  // `add` is on its way to the ledger while the last task ends.
  CAF_REQUIRE(s.check_add({make("b", {"b"})}).ok);
  s.hold_open(true);
  s.attempt_ended(0, attempt_end::done, "");
  s.merge_ended(0, merge_end::merged, "");
  auto held = s.next();
  CAF_CHECK(!held.run.has_value());
  CAF_CHECK_EQUAL(s.phase(), run_phase::running);
  // The rows are written: the task joins and starts.
  s.hold_open(false);
  auto joined = s.add({make("b", {"b"})});
  CAF_REQUIRE(joined.ok);
  CAF_CHECK_EQUAL(launched(s, s.next()), (std::vector<std::string>{"b"}));
  // An addition that did not make it lets the run settle as before.
  s.attempt_ended(1, attempt_end::done, "");
  s.hold_open(true);
  s.merge_ended(1, merge_end::merged, "");
  CAF_CHECK(!s.next().run.has_value());
  s.hold_open(false);
  auto end = s.next();
  CAF_REQUIRE(end.run.has_value());
  CAF_CHECK_EQUAL(end.run->to, run_state::completed);
}

CAF_TEST(tasks cannot join a run that completed or was aborted) {
  auto s = make_scheduler({make("a", {"a"})});
  s.start();
  s.next();
  s.attempt_ended(0, attempt_end::done, "");
  s.merge_ended(0, merge_end::merged, "");
  CAF_CHECK_EQUAL(s.next().run->to, run_state::completed);
  auto late = s.check_add({make("b", {"b"})});
  CAF_CHECK(!late.ok);
  CAF_CHECK_EQUAL(late.why_not, refusal::wrong_state);
  CAF_CHECK_EQUAL(late.error,
                  "the run is completed; tasks join a running or paused run");
  CAF_CHECK(!s.add({make("b", {"b"})}).ok);
  CAF_CHECK_EQUAL(s.size(), 1u);
  auto gone = make_scheduler({make("a", {"a"})});
  gone.start();
  gone.next();
  gone.abort("stop");
  CAF_CHECK(!gone.check_add({make("b", {"b"})}).ok);
}

CAF_TEST(what the ledger says of the run is followed unless it is stale) {
  auto s = make_scheduler({make("a", {"a"})});
  s.start();
  s.next();
  // A pause seen after a run change was decided here is stale.
  CAF_CHECK(s.observed(run_state::paused, "paused", true).empty());
  CAF_CHECK_EQUAL(s.phase(), run_phase::running);
  auto paused = s.observed(run_state::paused, "", false);
  CAF_CHECK_EQUAL(show(s, paused), "a!cancel run:paused");
  CAF_CHECK_EQUAL(s.phase_reason(), "paused");
  // An abort is final: stale or not, and over a pause.
  auto aborted = s.observed(run_state::aborted, "by taskforce abort", true);
  CAF_CHECK_EQUAL(s.phase(), run_phase::aborting);
  CAF_CHECK_EQUAL(s.phase_reason(), "by taskforce abort");
  CAF_CHECK(s.observed(run_state::running, "", false).empty());
  s.attempt_ended(0, attempt_end::interrupted, "interrupted");
  auto end = s.next();
  CAF_REQUIRE(end.run.has_value());
  CAF_CHECK_EQUAL(end.run->to, run_state::aborted);
  CAF_CHECK_EQUAL(s.recorded_end(), run_state::aborted);
}

CAF_TEST(a run this process is done with is recorded as it ended or paused) {
  auto s = make_scheduler({make("a", {"a"})});
  CAF_CHECK_EQUAL(s.recorded_end(), run_state::paused);
  s.start();
  s.next();
  CAF_CHECK_EQUAL(s.recorded_end(), run_state::paused);
  s.attempt_ended(0, attempt_end::done, "");
  s.merge_ended(0, merge_end::merged, "");
  s.next();
  CAF_CHECK_EQUAL(s.recorded_end(), run_state::completed);
  // A completion whose changes did not all reach the ledger is a pause.
  CAF_CHECK_EQUAL(s.recorded_end(true), run_state::paused);
}

// -- the budget ---------------------------------------------------------------

namespace {

spend cost(double usd, uint64_t in = 0, uint64_t out = 0) {
  spend s;
  s.cost_usd = usd;
  s.input_tokens = in;
  s.output_tokens = out;
  return s;
}

task_record in_state(task_state s) {
  task_record r;
  r.state = s;
  return r;
}

/// Task `id` passes and is merged.
void pass(scheduler& s, const char* id) {
  auto i = at(s, id);
  s.worker_phase(i, task_event::work_done);
  s.attempt_ended(i, attempt_end::done, "");
  s.merge_ended(i, merge_end::merged, "");
}

} // namespace

CAF_TEST(once the cost reaches the budget no task starts and the run pauses) {
  rules r;
  r.max_concurrency = 1;
  r.budget.max_cost_usd = 0.03;
  auto s = make_scheduler(
    {make("a", {"a"}), make("b", {"b"}), make("c", {"c"}), make("d", {"d"})},
    r);
  s.start();
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
  s.spent(cost(0.01));
  pass(s, "a");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"b"});
  s.spent(cost(0.01));
  pass(s, "b");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"c"});
  // c crosses the budget while it runs: it finishes and merges ...
  s.spent(cost(0.0100001));
  CAF_CHECK(s.over_budget());
  auto c = at(s, "c");
  s.worker_phase(c, task_event::work_done);
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(c, attempt_end::done, "")),
                  "c:verifying>merging+merge");
  // ... and d never starts: the run pauses with reason budget.
  auto d = s.next();
  CAF_CHECK(launched(s, d).empty());
  CAF_REQUIRE(d.run);
  CAF_CHECK_EQUAL(to_string(d.run->to), std::string{"paused"});
  CAF_CHECK_EQUAL(d.run->reason, "budget");
  CAF_CHECK_EQUAL(to_string(s.phase()), std::string{"pausing"});
  CAF_CHECK_EQUAL(show(s, s.merge_ended(c, merge_end::merged, "")),
                  "c:merging>done");
  CAF_CHECK(launched(s, s.next()).empty());
  CAF_CHECK_EQUAL(to_string(s.phase()), std::string{"paused"});
  CAF_CHECK_EQUAL(to_string(s.state(at(s, "d"))), std::string{"ready"});
}

CAF_TEST(reaching means at or above and tokens are input plus output) {
  budget b;
  b.max_tokens = 100;
  CAF_CHECK(!reached(b, cost(5, 60, 39)));
  CAF_CHECK(reached(b, cost(0, 60, 40)));
  CAF_CHECK(reached(b, cost(0, 100, 0)));
  b = budget{};
  b.max_cost_usd = 0.5;
  CAF_CHECK(!reached(b, cost(0.49, 1000000, 1000000)));
  CAF_CHECK(reached(b, cost(0.5)));
  CAF_CHECK(!reached(budget{}, cost(1e9, 1ull << 62, 1ull << 62)));
  // Sums saturate instead of wrapping around.
  spend total = cost(0, ~0ull - 1, 0);
  total += cost(0, 5, 0);
  CAF_CHECK_EQUAL(total.input_tokens, ~0ull);
  CAF_CHECK_EQUAL(cost(0, ~0ull, 7).tokens(), ~0ull);
  CAF_CHECK_EQUAL(describe_reached(b, cost(0.5)),
                  "cost $0.5000 reached maxCostUsd 0.5");
}

CAF_TEST(a run whose last task crossed the budget completes) {
  rules r;
  r.budget.max_tokens = 10;
  auto s = make_scheduler({make("a", {"a"})}, r);
  s.start();
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
  s.spent(cost(0, 50, 50));
  pass(s, "a");
  auto d = s.next();
  CAF_REQUIRE(d.run);
  CAF_CHECK_EQUAL(to_string(d.run->to), std::string{"completed"});
}

CAF_TEST(a run resumed over its budget starts nothing) {
  rules r;
  r.budget.max_cost_usd = 1;
  auto s = make_scheduler(
    {make("a", {"a"}), make("b", {"b"})}, r,
    {in_state(task_state::done), in_state(task_state::failed)});
  s.spent(cost(1.5)); // the ledger's total at load
  auto d = s.start();
  d += s.next();
  CAF_CHECK(launched(s, d).empty());
  CAF_REQUIRE(d.run);
  CAF_CHECK_EQUAL(to_string(d.run->to), std::string{"paused"});
  CAF_CHECK_EQUAL(d.run->reason, "budget");
  CAF_CHECK(s.finished());
  // A raised limit (a resume with its --config) goes on.
  r.budget.max_cost_usd = 2;
  auto raised = make_scheduler(
    {make("a", {"a"}), make("b", {"b"})}, r,
    {in_state(task_state::done), in_state(task_state::failed)});
  raised.spent(cost(1.5));
  raised.start();
  CAF_CHECK_EQUAL(launched(raised, raised.next()), ids{"b"});
}

CAF_TEST(a retry after the budget was reached does not start) {
  rules r;
  r.max_attempts = 3;
  r.budget.max_cost_usd = 1;
  auto s = make_scheduler({make("a", {"a"})}, r);
  s.start();
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
  s.spent(cost(1));
  s.attempt_ended(at(s, "a"), attempt_end::failed, "exit 1");
  auto d = s.next();
  CAF_CHECK(launched(s, d).empty());
  CAF_REQUIRE(d.run);
  CAF_CHECK_EQUAL(d.run->reason, "budget");
  CAF_CHECK_EQUAL(to_string(s.phase()), std::string{"paused"});
}

CAF_TEST(a resume keeps the recorded budget unless its config sets one) {
  run_config cfg;
  auto recorded = R"({"maxCostUsd": 0.03, "maxTokens": 500})";
  auto b = budget_of(cfg, recorded);
  CAF_CHECK_EQUAL(b.max_cost_usd, 0.03);
  CAF_CHECK_EQUAL(b.max_tokens, 500u);
  cfg.max_cost_usd = 0.06;
  b = budget_of(cfg, recorded);
  CAF_CHECK_EQUAL(b.max_cost_usd, 0.06);
  CAF_CHECK_EQUAL(b.max_tokens, 500u);
  CAF_CHECK(!budget_of(run_config{}, "{}").any());
  CAF_CHECK(!budget_of(run_config{}, "not json").any());
}

CAF_TEST(a merge result that fails its gate goes back for a repair) {
  rules r;
  r.max_concurrency = 1;
  r.max_repairs = 1;
  r.max_attempts = 1;
  auto s = make_scheduler({make("a", {"a"}), make("b", {"b"})}, r);
  s.start();
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
  auto a = at(s, "a");
  s.attempt_ended(a, attempt_end::done, "");
  // While a merges, b takes the slot (a merge holds no attempt).
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"b"});
  // The gate failed on a's merge result: a is ready again, and waits for
  // the slot b holds instead of going over the bound.
  CAF_CHECK_EQUAL(show(s, s.merge_ended(a, merge_end::gate_failed, "red")),
                  "a:merging>ready");
  CAF_CHECK_EQUAL(s.reason(a), "repair: red");
  CAF_CHECK_EQUAL(s.merge_repairs(a), 1u);
  CAF_CHECK(s.next().empty());
  s.attempt_ended(at(s, "b"), attempt_end::done, "");
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
  s.merge_ended(at(s, "b"), merge_end::merged, "");
  // No repair left: the failure counts as a failed attempt, and with none
  // left either the task fails and the run pauses.
  s.attempt_ended(a, attempt_end::done, "");
  CAF_CHECK_EQUAL(show(s, s.merge_ended(a, merge_end::gate_failed, "red")),
                  "a:merging>failed run:paused");
  CAF_CHECK_EQUAL(s.reason(a), "red");
}

CAF_TEST(a merge result that fails with attempts left starts a new attempt) {
  rules r;
  r.max_repairs = 0;
  r.max_attempts = 2;
  auto s = make_scheduler({make("a", {"a"})}, r);
  s.start();
  s.next();
  s.attempt_ended(0, attempt_end::done, "");
  CAF_CHECK_EQUAL(show(s, s.merge_ended(0, merge_end::gate_failed, "red")),
                  "a:merging>failed a:failed>ready");
  CAF_CHECK_EQUAL(s.failures(0), 1u);
  CAF_CHECK_EQUAL(launched(s, s.next()), ids{"a"});
}

CAF_TEST(a repair after a failed merge result needs a new approval) {
  auto risky = make("a", {"a"});
  risky.needs_approval = true;
  std::vector<task_record> records(1);
  records[0].needs_approval = true;
  auto s = make_scheduler({risky}, rules{}, records);
  s.start();
  s.next();
  s.attempt_ended(0, attempt_end::done, "");
  CAF_REQUIRE(s.approve(0).ok);
  CAF_CHECK_EQUAL(show(s, s.merge_ended(0, merge_end::gate_failed, "red")),
                  "a:merging>ready");
  s.next();
  // The repaired work was never approved: it waits in review again.
  CAF_CHECK_EQUAL(show(s, s.attempt_ended(0, attempt_end::done, "")),
                  "a:running>verifying a:verifying>merging a:merging>review");
}
