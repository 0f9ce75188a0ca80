// Several processes sharing one pool through CAF's middleman: one server
// publishes its pool, another joins it (the protocol's modes: global is one
// pool over every process that joins it through the network).
#define CAF_SUITE e2e.serve_join
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

/// The port at the end of a "… HOST:PORT" line on standard error.
uint16_t port_of(const std::optional<std::string>& line, const char* what) {
  CAF_REQUIRE(line.has_value());
  CAF_REQUIRE(line->find(what) != std::string::npos);
  return static_cast<uint16_t>(std::stoi(line->substr(line->rfind(':') + 1)));
}

void stop(serve_process& server) {
  server.signal(SIGTERM);
  try {
    server.wait();
  } catch (const std::runtime_error&) {
  }
}

} // namespace

CAF_TEST(a process that joins a published global pool shares its bound
           and its FIFO queue) {
  temp_dir dir;
  auto file = dir.write("config.json",
                        R"({"pool": {"maxParallel": 1, "mode": "global"}})");
  serve_process owner{TASKFORCE_BINARY,
                      {"--config", file.string(), "serve", "--listen",
                       "127.0.0.1:0", "--publish", "127.0.0.1:0"}};
  auto pool_port = port_of(owner.stderr_line(), "pool published on 127.0.0.1:");
  auto tcp_port = port_of(owner.stderr_line(), "listening on 127.0.0.1:");
  serve_process joined{TASKFORCE_BINARY,
                       {"serve", "--stdio", "--join",
                        "127.0.0.1:" + std::to_string(pool_port)}};
  tcp_peer first{tcp_port};
  auto granted = first.peer.call(acquire(1, "s1", "local"));
  CAF_CHECK_EQUAL(granted["ok"], true);
  // The other process's harness queues behind the one permit.
  auto& second = joined.peer;
  second.send(acquire(1, "s2", "remote"));
  auto queued = second.event("queued", "remote");
  CAF_CHECK_EQUAL(queued["position"], 1);
  CAF_CHECK_EQUAL(queued["running"], 1);
  // Holder names are server-wide across the processes, too.
  auto dup = second.call(acquire(2, "s2", "local"));
  CAF_CHECK_EQUAL(dup["error"]["code"], "duplicate_holder");
  // Releasing in the first process hands the permit to the second.
  first.peer.call(release(2, "local"));
  auto late = second.response(1);
  CAF_CHECK_EQUAL(late["ok"], true);
  CAF_CHECK(late["permit"].is_number());
  // The joined harness dies: its permit comes back to the owner's pool.
  joined.close_input();
  CAF_CHECK_EQUAL(joined.wait(), 0);
  auto again = first.peer.call(acquire(3, "s1", "after"));
  CAF_CHECK_EQUAL(again["ok"], true);
  stop(owner);
}

CAF_TEST(joining an address where no pool is published fails clearly) {
  serve_process joined{TASKFORCE_BINARY,
                       {"serve", "--stdio", "--join", "127.0.0.1:1"}};
  auto rest = joined.drain_stderr();
  CAF_CHECK(rest.find("cannot join the pool at 127.0.0.1:1") != std::string::npos);
  CAF_CHECK_EQUAL(joined.wait(), 1);
}
