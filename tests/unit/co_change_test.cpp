// The ledger's side of co-change learning and reruns: pairs counted once
// per task, the learned pairs, what a rerun carries over.
#define CAF_SUITE unit.co_change
#include <caf/test/unit_test.hpp>

#include <string>
#include <utility>
#include <vector>

#include "src/plan/graph.hpp"
#include "src/run/run_setup.hpp"
#include "src/store/ledger.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::store;

namespace {

using pairs = std::vector<std::pair<std::string, std::string>>;

new_run sample_run(const std::string& id, int tasks = 3) {
  new_run r;
  r.id = id;
  r.file = "TASKS.md";
  r.file_hash = content_hash("x");
  r.base_branch = "main";
  r.max_concurrency = 2;
  for (int i = 1; i <= tasks; ++i) {
    new_task t;
    t.id = "t" + std::to_string(i);
    t.index = i;
    t.title = "Task " + std::to_string(i);
    r.tasks.push_back(t);
  }
  return r;
}

template<class F>
bool fails_not_found(F f) {
  try {
    f();
  } catch (const ledger_error& e) {
    return e.code() == ledger_errc::not_found;
  }
  return false;
}

struct fixture {
  test::temp_dir dir;
  ledger db = ledger::open(dir.path() / "ledger.sqlite");

  /// Takes task `id` of `run` through one attempt to done, merged as
  /// `commit`.
  void complete(const std::string& run, const std::string& id,
                const std::string& commit) {
    for (auto s : {task_state::ready, task_state::running,
                   task_state::verifying, task_state::merging}) {
      task_change c;
      c.to = s;
      db.transition(run, id, c, 10);
    }
    task_change done;
    done.to = task_state::done;
    done.fields.merge_commit = commit;
    db.transition(run, id, done, 20);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(co_change_tests, fixture)

CAF_TEST(each pair of a task counts once however often it is recorded) {
  db.create_run(sample_run("r1"), 1);
  CAF_CHECK(db.record_co_change("r1", "t1", {"b.txt", "a.txt", "c.txt"}));
  // Again (a restart recording it twice): nothing changes.
  CAF_CHECK(!db.record_co_change("r1", "t1", {"b.txt", "a.txt"}));
  CAF_CHECK(db.record_co_change("r1", "t2", {"a.txt", "b.txt", "a.txt"}));
  CAF_CHECK(db.co_change_counted("r1", "t1"));
  CAF_CHECK(!db.co_change_counted("r1", "t3"));
  CAF_CHECK_EQUAL(db.co_change_pairs(2), (pairs{{"a.txt", "b.txt"}}));
  CAF_CHECK_EQUAL(
    db.co_change_pairs(1),
    (pairs{{"a.txt", "b.txt"}, {"a.txt", "c.txt"}, {"b.txt", "c.txt"}}));
  CAF_CHECK(db.co_change_pairs(3).empty());
  // A huge count asks for nothing.
  CAF_CHECK(db.co_change_pairs(UINT64_MAX).empty());
  CAF_CHECK(fails_not_found([&] {
    db.record_co_change("r1", "zz", {});
  }));
}

CAF_TEST(a sweeping task is marked but teaches nothing) {
  db.create_run(sample_run("r1"), 1);
  std::vector<std::string> many;
  for (size_t i = 0; i <= co_change_max_files; ++i)
    many.push_back("f" + std::to_string(i));
  CAF_CHECK(!db.record_co_change("r1", "t1", many));
  CAF_CHECK(db.co_change_counted("r1", "t1"));
  CAF_CHECK(db.co_change_pairs(1).empty());
}

CAF_TEST(only tasks that merged work of their own wait to be counted) {
  auto r = sample_run("r1");
  // t3 was carried over from an earlier run: done, merged, no attempt.
  r.tasks[2].state = task_state::done;
  r.tasks[2].reason = "already merged in run r0";
  r.tasks[2].merge_commit = "c0";
  db.create_run(r, 1);
  complete("r1", "t1", "c1");
  complete("r1", "t2", "c2");
  auto waiting = db.co_change_uncounted();
  CAF_REQUIRE_EQUAL(waiting.size(), 2u);
  CAF_CHECK_EQUAL(waiting[0].task_id, "t1");
  CAF_CHECK_EQUAL(waiting[0].merge_commit, "c1");
  CAF_CHECK_EQUAL(waiting[1].task_id, "t2");
  db.record_co_change("r1", "t1", {"a", "b"});
  waiting = db.co_change_uncounted();
  CAF_REQUIRE_EQUAL(waiting.size(), 1u);
  CAF_CHECK_EQUAL(waiting[0].task_id, "t2");
}

CAF_TEST(a new task keeps its content hash and a carried merge commit) {
  auto r = sample_run("r1");
  r.tasks[0].content_hash = "fnv1a64:0123456789abcdef";
  r.tasks[1].state = task_state::done;
  r.tasks[1].merge_commit = "abc";
  db.create_run(r, 1);
  CAF_CHECK_EQUAL(db.find_task("r1", "t1")->content_hash.value_or(""),
                  "fnv1a64:0123456789abcdef");
  CAF_CHECK(!db.find_task("r1", "t3")->content_hash);
  CAF_CHECK_EQUAL(db.find_task("r1", "t2")->merge_commit.value_or(""), "abc");
}

CAF_TEST(the latest run of a file is found whatever its state) {
  auto a = sample_run("r1");
  db.create_run(a, 1);
  auto b = sample_run("r2");
  b.file = "OTHER.md";
  db.create_run(b, 2);
  CAF_CHECK_EQUAL(db.latest_run_of("TASKS.md")->id, "r1");
  CAF_CHECK_EQUAL(db.latest_run_of("OTHER.md")->id, "r2");
  CAF_CHECK(!db.latest_run_of("NONE.md"));
  db.set_run_state("r1", run_state::completed, std::nullopt, 3);
  CAF_CHECK_EQUAL(db.latest_run_of("TASKS.md")->id, "r1");
}

CAF_TEST_FIXTURE_SCOPE_END()

CAF_TEST(the content hash follows what shapes the work not where it is) {
  task_spec t;
  t.id = "t1";
  t.index = 1;
  t.line = 3;
  t.title = "Add cache";
  t.body = "Use an LRU.";
  t.files = {"src/cache.ts"};
  t.verify = "npm test";
  auto base = run::task_content_hash(t);
  auto moved = t;
  moved.index = 4;
  moved.line = 20;
  moved.held = true;
  CAF_CHECK_EQUAL(run::task_content_hash(moved), base);
  auto edits = std::vector<task_spec>(7, t);
  edits[0].title = "Add a cache";
  edits[1].body = "Use an LFU.";
  edits[2].files = {"src/cache.ts", "src/x.ts"};
  edits[3].verify = std::nullopt;
  edits[4].model = "openai/gpt-5";
  edits[5].priority = 1;
  edits[6].id = "t2";
  for (auto& e : edits)
    CAF_CHECK_NOT_EQUAL(run::task_content_hash(e), base);
  // A value that moves from one field to the next is another task.
  auto a = t;
  a.title = "x";
  a.body = "yz";
  auto b = t;
  b.title = "xy";
  b.body = "z";
  CAF_CHECK_NOT_EQUAL(run::task_content_hash(a), run::task_content_hash(b));
}

CAF_TEST(a graph built again with more tasks keeps its learned pairs) {
  plan::graph_options opts;
  opts.co_change = {{"a.txt", "b.txt"}};
  auto make = [](const std::string& id, const std::string& file) {
    task_spec t;
    t.id = id;
    t.files = {file};
    return t;
  };
  plan::task_graph g{{make("p", "a.txt"), make("q", "b.txt")}, opts};
  CAF_CHECK(g.conflict(0, 1));
  auto tasks = g.tasks();
  tasks.push_back(make("r", "a.txt"));
  plan::task_graph again{tasks, g.options()};
  CAF_CHECK(again.conflict(1, 2));
}
