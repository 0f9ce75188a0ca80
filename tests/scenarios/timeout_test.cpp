// Time limits as a user writes them: any safe integer of milliseconds is a
// limit, however far away, never one that wraps into "at once".
#define CAF_SUITE scenarios.timeout
#include <caf/test/unit_test.hpp>

#include "scenarios/scenario.hpp"

using namespace taskforce;
using namespace taskforce::test;

CAF_TEST(a task timeout of 9223372036855 ms lets the task finish) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1}})");
  s.tasks("- [ ] Slow\n  - files: a.txt\n  - timeout: 9223372036855\n"
          "  - run: sleep 0.3 && echo a > a.txt\n"
          "  - verify: grep -q a a.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  auto t = s.task("t1");
  CAF_CHECK_EQUAL(to_string(t.state), std::string{"done"});
  CAF_CHECK_EQUAL(t.reason.value_or("").find("timed out"), std::string::npos);
  CAF_CHECK_EQUAL(read_file(s.root / "a.txt"), "a\n");
}

CAF_TEST(huge configured worker and gate timeouts are limits far away) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1,
                  "taskTimeoutMs": 9223372036855,
                  "verifyTimeoutMs": 9223372036855}})");
  // The first task's worker has the configured timeout; the second's has
  // its own, so only its gate has the configured one.
  s.tasks("- [ ] Slow worker\n  - files: b.txt\n"
          "  - run: sleep 0.3 && echo b > b.txt\n"
          "- [ ] Slow gate\n  - files: c.txt\n  - timeout: 60s\n"
          "  - run: echo c > c.txt\n"
          "  - verify: sleep 0.3 && grep -q c c.txt\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 0);
  if (r.code != 0)
    CAF_MESSAGE(r.output);
  for (auto id : {"t1", "t2"}) {
    auto t = s.task(id);
    CAF_CHECK_EQUAL(to_string(t.state), std::string{"done"});
    CAF_CHECK_EQUAL(t.reason.value_or("").find("timed out"), std::string::npos);
  }
  CAF_CHECK_EQUAL(read_file(s.root / "b.txt"), "b\n");
  CAF_CHECK_EQUAL(read_file(s.root / "c.txt"), "c\n");
}
