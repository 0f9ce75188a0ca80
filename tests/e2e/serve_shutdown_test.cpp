// How holders end when a connection closes or `taskforce serve` stops: every
// holder that held a permit gets exactly one terminal event, and a wait that
// never got a permit gets an error answer and no event.
#define CAF_SUITE e2e.serve_shutdown
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

/// Every line `peer` gets until the server closes its side.
std::vector<json> rest_of(protocol_peer& peer) {
  std::vector<json> result;
  try {
    for (;;)
      result.push_back(peer.next(5000ms));
  } catch (const std::runtime_error&) {
    // end of output
  }
  return result;
}

/// The events of `kind` for `holder` among `lines`.
std::vector<json> events_of(const std::vector<json>& lines,
                            const std::string& kind,
                            const std::string& holder) {
  std::vector<json> result;
  for (auto& x : lines)
    if (x.value("event", "") == kind && x.value("holder", "") == holder)
      result.push_back(x);
  return result;
}

/// The response with `id` among `lines`, or null.
json response_of(const std::vector<json>& lines, const json& id) {
  for (auto& x : lines)
    if (x.contains("id") && x["id"] == id)
      return x;
  return nullptr;
}

/// The port at the end of a "… HOST:PORT" line on standard error.
uint16_t port_of(const std::optional<std::string>& line, const char* what) {
  CAF_REQUIRE(line.has_value());
  CAF_REQUIRE(line->find(what) != std::string::npos);
  return static_cast<uint16_t>(std::stoi(line->substr(line->rfind(':') + 1)));
}

struct fixture {
  temp_dir dir;

  std::string config(const std::string& pool_json) {
    return dir.write("config.json", "{\"pool\": " + pool_json + "}").string();
  }

  /// Where a listening or publishing server writes its address and token.
  std::string endpoint() const {
    return (dir.path() / "endpoint.json").string();
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(serve_shutdown_tests, fixture)

CAF_TEST(a stop signal ends a held permit with released and a wait with an error
           over stdio) {
  serve_process srv{
    TASKFORCE_BINARY,
    {"--config", config(R"({"maxParallel": 1})"), "serve", "--stdio"}};
  auto& p = srv.peer;
  auto r0 = p.call(acquire(1, "s", "held"));
  CAF_CHECK_EQUAL(r0["ok"], true);
  p.send(acquire(2, "s", "waiting"));
  p.event("queued", "waiting");
  srv.signal(SIGTERM);
  auto code1 = srv.wait();
  CAF_CHECK_EQUAL(code1, 0);
  auto lines = rest_of(p);
  auto released = events_of(lines, "released", "held");
  CAF_REQUIRE_EQUAL(released.size(), 1u);
  CAF_CHECK_EQUAL(released[0]["reason"], "disconnected");
  CAF_CHECK(events_of(lines, "force_released", "held").empty());
  // The wait never held a permit: its acquire fails, no event follows.
  auto answer = response_of(lines, 2);
  CAF_REQUIRE(answer.is_object());
  CAF_CHECK_EQUAL(answer["ok"], false);
  CAF_CHECK_EQUAL(answer["error"]["code"], "shutting_down");
  CAF_CHECK(events_of(lines, "released", "waiting").empty());
  CAF_CHECK(events_of(lines, "started", "waiting").empty());
}

CAF_TEST(a stop signal sends every TCP connection the end of its holders) {
  auto file = config(R"({"maxParallel": 1, "mode": "global"})");
  serve_process srv{TASKFORCE_BINARY,
                    {"--config", file, "serve", "--listen", "127.0.0.1:0",
                     "--token-file", endpoint()}};
  auto port = port_of(srv.stderr_line(), "listening on 127.0.0.1:");
  auto token = token_in(endpoint());
  tcp_peer owner{port, token};
  tcp_peer waiter{port, token};
  tcp_peer watcher{port, token};
  watcher.peer.call({{"id", 1}, {"op", "subscribe"}});
  auto r2 = owner.peer.call(acquire(1, "s", "held"));
  CAF_CHECK_EQUAL(r2["ok"], true);
  waiter.peer.send(acquire(1, "t", "waiting"));
  waiter.peer.event("queued", "waiting");
  watcher.peer.event("queued", "waiting");
  srv.signal(SIGTERM);
  auto code3 = srv.wait();
  CAF_CHECK_EQUAL(code3, 0);
  auto own = rest_of(owner.peer);
  auto released = events_of(own, "released", "held");
  CAF_REQUIRE_EQUAL(released.size(), 1u);
  CAF_CHECK_EQUAL(released[0]["reason"], "disconnected");
  auto waited = rest_of(waiter.peer);
  auto answer = response_of(waited, 1);
  CAF_REQUIRE(answer.is_object());
  CAF_CHECK_EQUAL(answer["error"]["code"], "shutting_down");
  CAF_CHECK(events_of(waited, "released", "waiting").empty());
  auto seen = rest_of(watcher.peer);
  CAF_CHECK_EQUAL(events_of(seen, "released", "held").size(), 1u);
  CAF_CHECK(events_of(seen, "released", "waiting").empty());
}

CAF_TEST(a closing connection ends its held permits but not its waits) {
  auto file = config(R"({"maxParallel": 1, "mode": "global"})");
  serve_process srv{TASKFORCE_BINARY,
                    {"--config", file, "serve", "--listen", "127.0.0.1:0",
                     "--token-file", endpoint()}};
  auto port = port_of(srv.stderr_line(), "listening on 127.0.0.1:");
  auto token = token_in(endpoint());
  tcp_peer watcher{port, token};
  watcher.peer.call({{"id", 1}, {"op", "subscribe"}});
  {
    tcp_peer dying{port, token};
    dying.peer.call(acquire(1, "s", "held"));
    dying.peer.send(acquire(2, "s", "waiting"));
    dying.peer.event("queued", "waiting");
    watcher.peer.event("queued", "waiting");
  }
  // The pool cancels the connection's waits before it releases its permits,
  // so a released event for the wait would come first.
  std::vector<json> seen;
  for (;;) {
    auto x = watcher.peer.next();
    seen.push_back(x);
    if (x.value("event", "") == "released" && x.value("holder", "") == "held")
      break;
  }
  CAF_CHECK_EQUAL(seen.back()["reason"], "disconnected");
  CAF_CHECK(events_of(seen, "released", "waiting").empty());
  CAF_CHECK(events_of(seen, "started", "waiting").empty());
  srv.signal(SIGTERM);
  auto code4 = srv.wait();
  CAF_CHECK_EQUAL(code4, 0);
}

CAF_TEST(end of input ends the held permits on the same output) {
  serve_process srv{
    TASKFORCE_BINARY,
    {"--config", config(R"({"maxParallel": 1})"), "serve", "--stdio"}};
  auto& p = srv.peer;
  p.call(acquire(1, "s", "held"));
  p.send(acquire(2, "s", "waiting"));
  p.event("queued", "waiting");
  srv.close_input();
  auto code5 = srv.wait();
  CAF_CHECK_EQUAL(code5, 0);
  auto lines = rest_of(p);
  auto released = events_of(lines, "released", "held");
  CAF_REQUIRE_EQUAL(released.size(), 1u);
  CAF_CHECK_EQUAL(released[0]["reason"], "disconnected");
  auto answer = response_of(lines, 2);
  CAF_REQUIRE(answer.is_object());
  CAF_CHECK_EQUAL(answer["error"]["code"], "cancelled");
  CAF_CHECK(events_of(lines, "released", "waiting").empty());
}

CAF_TEST(a stop signal to a process that joined a pool ends its holders there) {
  auto file = config(R"({"maxParallel": 1, "mode": "global"})");
  serve_process owner{TASKFORCE_BINARY,
                      {"--config", file, "serve", "--listen", "127.0.0.1:0",
                       "--publish", "127.0.0.1:0", "--token-file", endpoint()}};
  auto pool_port = port_of(owner.stderr_line(), "pool published on 127.0.0.1:");
  auto tcp_port = port_of(owner.stderr_line(), "listening on 127.0.0.1:");
  serve_process joined{TASKFORCE_BINARY,
                       {"serve", "--stdio", "--join",
                        "127.0.0.1:" + std::to_string(pool_port),
                        "--token-file", endpoint()}};
  auto r6 = joined.peer.call(acquire(1, "s", "remote"));
  CAF_CHECK_EQUAL(r6["ok"], true);
  tcp_peer local{tcp_port, token_in(endpoint())};
  local.peer.send(acquire(1, "s", "local"));
  local.peer.event("queued", "local");
  joined.signal(SIGTERM);
  auto code7 = joined.wait();
  CAF_CHECK_EQUAL(code7, 0);
  auto lines = rest_of(joined.peer);
  auto released = events_of(lines, "released", "remote");
  CAF_REQUIRE_EQUAL(released.size(), 1u);
  CAF_CHECK_EQUAL(released[0]["reason"], "disconnected");
  // The owner's pool got its permit back and handed it on.
  auto r8 = local.peer.response(1);
  CAF_CHECK_EQUAL(r8["ok"], true);
  owner.signal(SIGTERM);
  auto code9 = owner.wait();
  CAF_CHECK_EQUAL(code9, 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
