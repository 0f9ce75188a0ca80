// Pool limits too long for the clock, through the real `taskforce serve`:
// a safe integer of milliseconds whose nanoseconds overflow int64 must mean
// "practically never", not "at once".
#define CAF_SUITE e2e.serve_limits
#include <caf/test/unit_test.hpp>

#include <string>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

/// 9223372036855 ms: a safe integer; times 10^6 it overflows int64.
const std::string huge = "9223372036855";

std::vector<std::string> serve_with(temp_dir& dir, const std::string& pool) {
  auto file = dir.write("config.json", "{\"pool\": " + pool + "}");
  return {"--config", file.string(), "serve", "--stdio"};
}

} // namespace

CAF_TEST(a permit held under a huge maxHoldMs survives a wait that times out
           after it) {
  temp_dir dir;
  // Timers fire in deadline order: the 1 ms queue timeout of the second
  // acquire is due after the hold timer of the first, had it wrapped into
  // the past.
  serve_process srv{TASKFORCE_BINARY,
                    serve_with(dir, R"({"maxParallel": 1, "maxHoldMs": )" + huge
                                      + R"(, "queueTimeoutMs": 1})")};
  auto& p = srv.peer;
  auto r0 = p.call(acquire(1, "s", "held"));
  CAF_CHECK_EQUAL(r0["ok"], true);
  auto late = p.call(acquire(2, "s", "late"));
  CAF_CHECK_EQUAL(late["ok"], false);
  CAF_CHECK_EQUAL(late["error"]["code"], "queue_timeout");
  auto st = p.call({{"id", 3}, {"op", "status"}});
  CAF_REQUIRE_EQUAL(st["pools"].size(), 1u);
  CAF_REQUIRE_EQUAL(st["pools"][0]["running"].size(), 1u);
  CAF_CHECK_EQUAL(st["pools"][0]["running"][0]["holder"], "held");
  auto r1 = p.call(release(4, "held"));
  CAF_CHECK_EQUAL(r1["released"], true);
  for (auto& line : p.raw)
    CAF_CHECK(line.find("force_released") == std::string::npos);
  srv.close_input();
  auto code2 = srv.wait();
  CAF_CHECK_EQUAL(code2, 0);
}

CAF_TEST(a wait under a huge queueTimeoutMs is not timed out) {
  temp_dir dir;
  // The wait's timer is armed after the first holder's 1 s hold timer; had
  // it wrapped into the past it would fire first.
  serve_process srv{TASKFORCE_BINARY,
                    serve_with(dir, R"({"maxParallel": 1, "maxHoldMs": 1000,)"
                                    R"( "queueTimeoutMs": )"
                                      + huge + "}")};
  auto& p = srv.peer;
  auto r3 = p.call(acquire(1, "s", "leaky"));
  CAF_CHECK_EQUAL(r3["ok"], true);
  p.send(acquire(2, "s", "patient"));
  auto granted = p.response(2, 10000ms);
  CAF_CHECK_EQUAL(granted["ok"], true);
  auto r4 = p.event("force_released", "leaky");
  CAF_CHECK_EQUAL(r4["holder"], "leaky");
  for (auto& line : p.raw)
    CAF_CHECK(line.find("timed_out") == std::string::npos);
  srv.close_input();
  auto code5 = srv.wait();
  CAF_CHECK_EQUAL(code5, 0);
}
