#define CAF_SUITE unit.graph
#include <caf/test/unit_test.hpp>

#include <cstdio>

#include "src/plan/graph.hpp"
#include "src/run/scheduler.hpp"
#include "src/scope/glob.hpp"

using namespace taskforce;
using namespace taskforce::plan;

namespace {

task_spec make(std::string id, std::vector<std::string> files,
               std::vector<std::string> locks = {},
               std::vector<std::string> deps = {}) {
  task_spec t;
  t.id = std::move(id);
  t.title = t.id;
  t.files = std::move(files);
  t.locks = std::move(locks);
  t.deps = std::move(deps);
  return t;
}

task_graph graph_of(std::vector<task_spec> tasks,
                    const graph_options& opts = {}) {
  for (size_t i = 0; i < tasks.size(); ++i)
    tasks[i].index = i + 1;
  return task_graph{std::move(tasks), opts};
}

using pairs = std::vector<std::pair<size_t, size_t>>;

} // namespace

CAF_TEST(
  shared files and intersecting globs conflict while disjoint ones do not ) {
  auto g = graph_of({
    make("a", {"src/auth/**"}),
    make("b", {"src/auth/cache.ts"}),
    make("c", {"src/*.ts"}),
    make("d", {"src/router.ts"}),
    make("e", {"docs/a.md"}),
    make("f", {"docs/"}),
  });
  CAF_CHECK(g.conflict(0, 1));
  CAF_CHECK(g.conflict(1, 0));
  CAF_CHECK(!g.conflict(0, 2));
  CAF_CHECK(g.conflict(2, 3));
  CAF_CHECK(!g.conflict(1, 3));
  CAF_CHECK(g.conflict(4, 5));
  CAF_CHECK(!g.conflict(0, 0));
  CAF_CHECK_EQUAL(g.conflict_pairs(), (pairs{{0, 1}, {2, 3}, {4, 5}}));
}

CAF_TEST(shared locks conflict) {
  auto g = graph_of({
    make("a", {"a"}, {"db"}),
    make("b", {"b"}, {"db", "port"}),
    make("c", {"c"}, {"port"}),
    make("d", {"d"}, {"other"}),
  });
  CAF_CHECK_EQUAL(g.conflict_pairs(), (pairs{{0, 1}, {1, 2}}));
}

CAF_TEST(a task without files conflicts with every other not done task) {
  auto a = make("a", {"a"});
  auto b = make("b", {});
  auto c = make("c", {"c"});
  auto d = make("d", {"d"});
  d.done = true;
  auto e = make("e", {});
  auto g = graph_of({a, b, c, d, e});
  CAF_CHECK(g.conflict(0, 1));
  CAF_CHECK(g.conflict(2, 1));
  CAF_CHECK(!g.conflict(3, 1));
  CAF_CHECK_EQUAL(g.conflict_pairs(),
                  (pairs{{0, 1}, {0, 4}, {1, 2}, {1, 4}, {2, 4}}));
}

CAF_TEST(done tasks conflict with nothing) {
  auto a = make("a", {"x"});
  a.done = true;
  auto g = graph_of({a, make("b", {"x"}, {}), make("c", {"x"})});
  CAF_CHECK(!g.conflict(0, 1));
  CAF_CHECK_EQUAL(g.conflict_pairs(), (pairs{{1, 2}}));
}

CAF_TEST(learned co change pairs conflict) {
  graph_options opts;
  opts.co_change = {{"src/api.ts", "src/api.test.ts"}};
  auto g = graph_of({make("a", {"src/api.ts"}), make("b", {"src/*.test.ts"}),
                     make("c", {"src/other.ts"})},
                    opts);
  CAF_CHECK_EQUAL(g.conflict_pairs(), (pairs{{0, 1}}));
}

CAF_TEST(ids deps and dependents are resolved) {
  auto g = graph_of({make("a", {"a"}), make("b", {"b"}, {}, {"a"}),
                     make("c", {"c"}, {}, {"a", "b"})});
  CAF_CHECK_EQUAL(g.find("c").value_or(99), 2u);
  CAF_CHECK(!g.find("zz"));
  CAF_CHECK_EQUAL(g.deps(2), (std::vector<size_t>{0, 1}));
  CAF_CHECK_EQUAL(g.dependents(0), (std::vector<size_t>{1, 2}));
}

CAF_TEST(ready tasks come by priority then file order and avoid running ones) {
  auto low = make("low", {"a"});
  auto high = make("high", {"b"});
  high.priority = 5;
  auto clash = make("clash", {"c"}, {"db"});
  clash.priority = 9;
  auto runner = make("runner", {"d"}, {"db"});
  auto later = make("later", {"e"}, {}, {"low"});
  auto g = graph_of({low, high, clash, runner, later});
  std::vector<bool> finished(5, false);
  std::vector<bool> running(5, false);
  running[3] = true;
  CAF_CHECK_EQUAL(g.ready(finished, running), (std::vector<size_t>{1, 0}));
  running[3] = false;
  CAF_CHECK_EQUAL(g.ready(finished, running),
                  (std::vector<size_t>{2, 1, 0, 3}));
  // pick keeps the chosen ones compatible with each other.
  CAF_CHECK_EQUAL(g.pick(finished, running, 10),
                  (std::vector<size_t>{2, 1, 0}));
  CAF_CHECK_EQUAL(g.pick(finished, running, 2), (std::vector<size_t>{2, 1}));
  finished[0] = true;
  CAF_CHECK_EQUAL(g.ready(finished, running),
                  (std::vector<size_t>{2, 1, 3, 4}));
}

CAF_TEST(the index finds conflicts among many tasks like the naive check) {
  // A mix of literals, globs at several depths and root globs.
  std::vector<task_spec> tasks;
  const char* shapes[]
    = {"m%d/a.ts", "m%d/*.ts", "m%d/**",  "m%d/x/",  "m%d/b/c.ts",
       "*.md",     "m%d/?.ts", "**/c.ts", "m%d/b/*", "m%d/{a,b}.ts"};
  for (int i = 0; i < 60; ++i) {
    char buffer[64];
    std::vector<std::string> files;
    for (int k = 0; k < 2; ++k) {
      std::snprintf(buffer, sizeof buffer, shapes[(i * 3 + k * 7) % 10], i % 4);
      files.emplace_back(buffer);
    }
    tasks.push_back(make("t" + std::to_string(i), files));
  }
  auto g = graph_of(tasks);
  pairs naive;
  for (size_t a = 0; a < tasks.size(); ++a)
    for (size_t b = a + 1; b < tasks.size(); ++b) {
      bool meet = false;
      for (const auto& x : tasks[a].files)
        for (const auto& y : tasks[b].files)
          meet = meet || scope::intersects(x, y);
      if (meet)
        naive.emplace_back(a, b);
    }
  CAF_CHECK_EQUAL(g.conflict_pairs(), naive);
  CAF_CHECK(!naive.empty());
}

CAF_TEST(a lock shared by a thousand tasks serialises all of them) {
  std::vector<task_spec> tasks;
  for (int i = 0; i < 1000; ++i)
    tasks.push_back(make("t" + std::to_string(i), {"f" + std::to_string(i)},
                         {"db", "lock" + std::to_string(i % 7)}));
  auto g = graph_of(tasks);
  CAF_CHECK(g.conflict(0, 999));
  CAF_CHECK(g.conflict(999, 0));
  CAF_CHECK_EQUAL(g.conflict_pairs().size(), 1000u * 999u / 2u);
  CAF_CHECK_EQUAL(run::simulate_waves(g, 3).size(), 1000u);
}
