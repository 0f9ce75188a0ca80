#define CAF_SUITE unit.waves
#include <caf/test/unit_test.hpp>

#include "src/plan/graph.hpp"
#include "src/run/scheduler.hpp"

using namespace taskforce;
using namespace taskforce::plan;

namespace {

task_spec make(std::string id, std::vector<std::string> files,
               std::vector<std::string> deps = {}, int64_t priority = 0) {
  task_spec t;
  t.id = std::move(id);
  t.files = std::move(files);
  t.deps = std::move(deps);
  t.priority = priority;
  return t;
}

/// The waves as ids, "a b | c" style.
std::string waves_of(std::vector<task_spec> tasks, size_t limit) {
  for (size_t i = 0; i < tasks.size(); ++i)
    tasks[i].index = i + 1;
  task_graph g{std::move(tasks)};
  std::string out;
  for (const auto& wave : run::simulate_waves(g, limit)) {
    if (!out.empty())
      out += " | ";
    for (size_t i = 0; i < wave.size(); ++i)
      out += (i ? " " : "") + g.task(wave[i]).id;
  }
  return out;
}

} // namespace

CAF_TEST(independent tasks share a wave up to the concurrency limit) {
  CAF_CHECK_EQUAL(waves_of({make("a", {"a"}), make("b", {"b"}),
                            make("c", {"c"}), make("d", {"d"})},
                           3),
                  "a b c | d");
}

CAF_TEST(deps wait for the wave after their last dependency) {
  CAF_CHECK_EQUAL(
    waves_of({make("a", {"a"}), make("b", {"b"}), make("c", {"c"}, {"a", "b"})},
             3),
    "a b | c");
}

CAF_TEST(conflicting tasks go to later waves and others fill the slots) {
  CAF_CHECK_EQUAL(waves_of({make("a", {"src/**"}), make("b", {"src/x.ts"}),
                            make("c", {"docs/x.md"})},
                           3),
                  "a c | b");
}

CAF_TEST(higher priority is chosen first and a wave lists the choice order) {
  CAF_CHECK_EQUAL(
    waves_of(
      {make("a", {"x"}), make("b", {"x"}, {}, 2), make("c", {"y"}, {}, 1)}, 3),
    "b c | a");
}

CAF_TEST(a task without files runs alone) {
  CAF_CHECK_EQUAL(
    waves_of({make("a", {"a"}), make("b", {}), make("c", {"c"})}, 3),
    "a c | b");
}

CAF_TEST(done tasks appear in no wave and satisfy dependents) {
  auto a = make("a", {"a"});
  a.done = true;
  CAF_CHECK_EQUAL(waves_of({a, make("b", {"a"}, {"a"}), make("c", {"c"})}, 1),
                  "b | c");
}

CAF_TEST(a chain of thousands of tasks plans in one wave each) {
  std::vector<task_spec> tasks;
  for (int i = 0; i < 3000; ++i)
    tasks.push_back(
      make("t" + std::to_string(i), {"f" + std::to_string(i)},
           i ? std::vector<std::string>{"t" + std::to_string(i - 1)}
             : std::vector<std::string>{}));
  for (size_t i = 0; i < tasks.size(); ++i)
    tasks[i].index = i + 1;
  task_graph g{std::move(tasks)};
  CAF_CHECK_EQUAL(run::simulate_waves(g, 3).size(), 3000u);
}
