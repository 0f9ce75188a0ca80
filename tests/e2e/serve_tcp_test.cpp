// `taskforce serve --listen` as harnesses drive it: the real binary on
// loopback TCP, several connections sharing one server, as the protocol says.
#define CAF_SUITE e2e.serve_tcp
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

/// A server on a free loopback port, with `pool_json` as its pool section.
struct fixture {
  temp_dir dir;
  std::unique_ptr<serve_process> server;
  uint16_t port = 0;
  /// The server's token, from its endpoint file.
  std::string token;

  void start(const std::string& pool_json,
             const std::string& address = "127.0.0.1:0") {
    auto file = dir.write("config.json", "{\"pool\": " + pool_json + "}");
    server = std::make_unique<serve_process>(
      TASKFORCE_BINARY,
      std::vector<std::string>{"--config", file.string(), "serve", "--listen",
                               address, "--token-file", endpoint()});
    // The bound address is the first thing on standard error.
    auto line = server->stderr_line();
    CAF_REQUIRE(line.has_value());
    auto colon = line->rfind(':');
    CAF_REQUIRE(line->find("listening on 127.0.0.1:") != std::string::npos);
    port = static_cast<uint16_t>(std::stoi(line->substr(colon + 1)));
    CAF_REQUIRE(port != 0);
    token = token_in(endpoint());
  }

  /// Where the server writes its address and token.
  std::string endpoint() const {
    return (dir.path() / "endpoint.json").string();
  }

  ~fixture() {
    if (server) {
      server->signal(SIGTERM);
      try {
        server->wait();
      } catch (const std::runtime_error&) {
      }
    }
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(serve_tcp_tests, fixture)

CAF_TEST(port 0 binds a free loopback port and hello answers over TCP) {
  start(R"({"maxParallel": 4})");
  tcp_peer a{port, token};
  auto r = a.peer.call({{"id", 1}, {"op", "hello"}});
  CAF_CHECK_EQUAL(r["ok"], true);
  CAF_CHECK_EQUAL(r["protocol"], 2);
  CAF_CHECK_EQUAL(r["config"]["maxParallel"], 4);
  tcp_peer b{port, token};
  auto again = b.peer.call({{"id", "x"}, {"op", "hello"}});
  CAF_CHECK_EQUAL(again["id"], "x");
}

CAF_TEST(a harness that disconnects while holding permits hands them to the next
           waiter on another connection and its waits are cancelled) {
  start(R"({"maxParallel": 2, "mode": "global"})");
  auto a = std::make_unique<tcp_peer>(port, token);
  tcp_peer b{port, token};
  a->peer.call(acquire(1, "sa", "a1"));
  a->peer.call(acquire(2, "sa", "a2"));
  a->peer.send(acquire(3, "sa", "a3"));
  a->peer.event("queued", "a3");
  b.peer.send(acquire(1, "sb", "b1"));
  auto queued = b.peer.event("queued", "b1");
  CAF_CHECK_EQUAL(queued["position"], 2);
  CAF_CHECK_EQUAL(queued["of"], 2);
  CAF_CHECK_EQUAL(queued["running"], 2);
  // The harness dies: its permits go on, its own wait never runs.
  a->close();
  auto granted = b.peer.response(1);
  CAF_CHECK_EQUAL(granted["ok"], true);
  CAF_CHECK(granted["permit"].is_number());
  auto started = b.peer.event("started", "b1");
  CAF_CHECK_EQUAL(started["session"], "sb");
  auto st = b.peer.call({{"id", 2}, {"op", "status"}});
  CAF_REQUIRE_EQUAL(st["pools"].size(), 1u);
  auto pool = st["pools"][0];
  CAF_REQUIRE_EQUAL(pool["running"].size(), 1u);
  CAF_CHECK_EQUAL(pool["running"][0]["holder"], "b1");
  CAF_CHECK_EQUAL(pool["queued"].size(), 0u);
  // The dead harness's holder names are free again.
  auto reuse = b.peer.call(acquire(3, "sb", "a1"));
  CAF_CHECK_EQUAL(reuse["ok"], true);
}

CAF_TEST(holder names are server wide across connections) {
  start(R"({"maxParallel": 2})");
  tcp_peer a{port, token};
  tcp_peer b{port, token};
  a.peer.call(acquire(1, "sa", "same"));
  auto dup = b.peer.call(acquire(1, "sb", "same"));
  CAF_CHECK_EQUAL(dup["ok"], false);
  CAF_CHECK_EQUAL(dup["error"]["code"], "duplicate_holder");
}

CAF_TEST(a connection gets its own holders events and after subscribe every
           event once) {
  start(R"({"maxParallel": 2})");
  tcp_peer a{port, token};
  tcp_peer b{port, token};
  a.peer.call(acquire(1, "s", "a1"));
  a.peer.event("started", "a1");
  // b is not subscribed yet: nothing of a's reaches it.
  CAF_CHECK(b.peer.silent(200ms));
  auto sub = b.peer.call({{"id", 1}, {"op", "subscribe"}});
  CAF_CHECK_EQUAL(sub["ok"], true);
  a.peer.call(release(2, "a1"));
  auto ev = b.peer.event("released", "a1");
  CAF_CHECK_EQUAL(ev["reason"], "completed");
  // Its own holder's events come once, not twice.
  b.peer.call(acquire(2, "t", "b1"));
  b.peer.silent(200ms);
  int started = 0;
  for (auto& line : b.peer.raw) {
    auto x = json::parse(line);
    if (x.value("event", "") == "started" && x["holder"] == "b1")
      ++started;
  }
  CAF_CHECK_EQUAL(started, 1);
}

CAF_TEST(a request nested 100000 deep over TCP is refused and the other
           connections keep their permits) {
  start(R"({"maxParallel": 2, "mode": "global"})");
  tcp_peer a{port, token};
  tcp_peer b{port, token};
  b.peer.call(acquire(1, "sb", "b1"));
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  a.peer.send_line("{\"id\":" + deep + ",\"op\":\"hello\"}");
  auto r = a.peer.next();
  CAF_CHECK_EQUAL(r["id"], nullptr);
  CAF_CHECK_EQUAL(r["error"]["code"], "bad_request");
  CAF_CHECK(r["error"]["message"].get<std::string>().find("64")
            != std::string::npos);
  a.peer.send_line("{\"id\":2,\"op\":\"hello\",\"x\":1e400}");
  auto overflow = a.peer.next();
  CAF_CHECK_EQUAL(overflow["error"]["code"], "bad_request");
  auto st = b.peer.call({{"id", 2}, {"op", "status"}});
  CAF_REQUIRE_EQUAL(st["pools"].size(), 1u);
  CAF_REQUIRE_EQUAL(st["pools"][0]["running"].size(), 1u);
  CAF_CHECK_EQUAL(st["pools"][0]["running"][0]["holder"], "b1");
  auto again = a.peer.call({{"id", 3}, {"op", "hello"}});
  CAF_CHECK_EQUAL(again["ok"], true);
  CAF_CHECK(server->running());
}

CAF_TEST(a client that pipelines without reading stops being read with bounded
           memory while another client is answered) {
  start(R"({"maxParallel": 2, "mode": "global"})");
  tcp_peer a{port, token, 4096};
  tcp_peer b{port, token};
  b.peer.call(acquire(1, "sb", "b1"));
  auto before = vm_rss_kib(server->pid());
  std::string burst;
  constexpr int per_burst = 10000;
  for (int i = 0; i < per_burst; ++i)
    burst += "{\"id\":" + std::to_string(i)
             + ",\"op\":\"release\",\"holder\":\"nobody\","
               "\"reason\":\"completed\"}\n";
  constexpr size_t cap = 64 << 20;
  size_t sent = 0;
  size_t from = 0;
  while (sent < cap) {
    auto part = burst.substr(from);
    auto n = write_until_stalled(a.peer.out_fd(), part, 2000ms);
    sent += n;
    from = (from + n) % burst.size();
    if (n < part.size())
      break;
  }
  auto during = vm_rss_kib(server->pid());
  CAF_MESSAGE("input taken before the server stopped reading: "
              << sent << " bytes; VmRSS " << before << " -> " << during
              << " KiB");
  CAF_CHECK_LESS(sent, cap);
  CAF_CHECK_LESS(during, before + 64 * 1024);
  // The other client is served meanwhile.
  auto hello = b.peer.call({{"id", 2}, {"op", "hello"}}, 10000ms);
  CAF_CHECK_EQUAL(hello["ok"], true);
  auto st = b.peer.call({{"id", 3}, {"op", "status"}}, 10000ms);
  CAF_REQUIRE_EQUAL(st["pools"].size(), 1u);
  CAF_CHECK_EQUAL(st["pools"][0]["running"][0]["holder"], "b1");
  // Once the client reads, every complete line it sent has its answer.
  size_t lines = 0;
  for (size_t i = 0; i < sent; ++i)
    if (burst[i % burst.size()] == '\n')
      ++lines;
  std::string rest;
  if (from != 0 && burst[from - 1] != '\n') {
    rest = burst.substr(from, burst.find('\n', from) + 1 - from);
    ++lines;
  }
  a.peer.send_line(rest.empty() ? std::string{}
                                : rest.substr(0, rest.size() - 1));
  CAF_CHECK_EQUAL(a.peer.count_responses(lines, 10000ms), lines);
  auto last = a.peer.call({{"id", "last"}, {"op", "hello"}});
  CAF_CHECK_EQUAL(last["ok"], true);
  CAF_CHECK(a.peer.silent(200ms));
}

CAF_TEST(subscribers that do not read are dropped with an unsubscribed event
         and keep their own answers and events) {
  start(R"({"maxParallel": 4, "mode": "global"})");
  std::vector<std::unique_ptr<tcp_peer>> subs;
  for (int i = 0; i < 5; ++i) {
    subs.emplace_back(std::make_unique<tcp_peer>(port, token, 4096));
    auto r = subs.back()->peer.call({{"id", 1}, {"op", "subscribe"}});
    CAF_REQUIRE_EQUAL(r["ok"], true);
  }
  auto before = vm_rss_kib(server->pid());
  // A busy harness: acquire/release pairs, each a started and a released
  // event for every subscriber.
  tcp_peer driver{port, token};
  constexpr int rounds = 80;
  constexpr int pairs = 1000;
  for (int round = 0; round < rounds; ++round) {
    std::string batch;
    for (int k = 0; k < pairs; ++k) {
      auto holder = "d" + std::to_string(k);
      auto id = std::to_string(round * pairs + k);
      batch += acquire("a" + id, "driver", holder).dump() + "\n"
               + release("r" + id, holder).dump() + "\n";
    }
    batch.pop_back();
    driver.peer.send_line(batch);
    driver.peer.count_responses(2 * pairs, 20000ms);
  }
  auto during = vm_rss_kib(server->pid());
  CAF_MESSAGE("VmRSS with 5 subscribers that do not read: "
              << before << " -> " << during << " KiB");
  // Without the drop each subscriber kept every event: over 50 MB here.
  CAF_CHECK_LESS(during, before + 40 * 1024);
  for (auto& sub : subs) {
    auto& p = sub->peer;
    auto last = p.skip_until("\"event\":\"unsubscribed\"", 20000ms);
    CAF_CHECK_EQUAL(last["reason"], "slow_reader");
    CAF_CHECK(last["pending_bytes"].get<uint64_t>()
              >= last["limit_bytes"].get<uint64_t>());
    // Its own requests and its own holders' events still come.
    auto holder = "own-" + std::to_string(&sub - &subs[0]);
    auto own = p.call(acquire(2, "mine", holder));
    CAF_CHECK_EQUAL(own["ok"], true);
    p.event("started", holder);
    p.call(release(3, holder));
    p.event("released", holder);
  }
  driver.peer.call(acquire("x", "driver", "late"));
  driver.peer.call(release("y", "late"));
  for (auto& sub : subs) {
    CAF_CHECK(sub->peer.silent(200ms));
    for (auto& line : sub->peer.raw)
      CAF_CHECK(line.find("\"late\"") == std::string::npos);
  }
}

CAF_TEST(pipelined status requests with a huge holder name in the pool stay
           within the output bound) {
  start(R"({"maxParallel": 2, "mode": "global"})");
  tcp_peer a{port, token, 4096};
  tcp_peer watcher{port, token};
  // A legal but huge name makes every status answer about 900 KB.
  auto huge = std::string(900000, 'n');
  auto granted = a.peer.call(acquire(1, "s", huge));
  CAF_REQUIRE_EQUAL(granted["ok"], true);
  auto before = vm_rss_kib(server->pid());
  std::string burst;
  for (int i = 0; i < 500; ++i)
    burst += R"({"id":2,"op":"status"})"
             "\n";
  write_until_stalled(a.peer.out_fd(), burst, 1000ms);
  // Let the server take what it will; the watcher is answered meanwhile.
  std::this_thread::sleep_for(1000ms);
  auto st = watcher.peer.call({{"id", 1}, {"op", "hello"}}, 10000ms);
  CAF_CHECK_EQUAL(st["ok"], true);
  auto during = vm_rss_kib(server->pid());
  CAF_MESSAGE("VmRSS with 500 status requests of 900 KB answers pending: "
              << before << " -> " << during << " KiB");
  // Sixty-four answers in flight at once would be over 50 MB.
  CAF_CHECK_LESS(during, before + 24 * 1024);
}

CAF_TEST(SIGTERM stops a listening server with exit 0) {
  start("{}");
  tcp_peer a{port, token};
  a.peer.call(acquire(1, "s", "h"));
  server->signal(SIGTERM);
  auto code = server->wait();
  CAF_CHECK_EQUAL(code, 0);
  server.reset();
}

CAF_TEST(SIGTERM stops a listening server whose clients do not read) {
  start(R"({"maxParallel": 2, "mode": "global"})");
  tcp_peer mute{port, token, 4096};
  mute.peer.send_line(R"({"id":1,"op":"subscribe"})");
  tcp_peer busy{port, token};
  busy.peer.call(acquire(1, "s", "h"));
  std::string burst;
  for (int i = 0; i < 2000; ++i)
    burst += R"({"id":2,"op":"status"})"
             "\n";
  size_t sent = 0;
  while (sent < (32u << 20)) {
    auto n = write_until_stalled(mute.peer.out_fd(), burst, 1000ms);
    sent += n;
    if (n < burst.size())
      break;
  }
  server->signal(SIGTERM);
  CAF_CHECK_EQUAL(server->wait(10000ms), 0);
  server.reset();
}

CAF_TEST(a bad listen address exits 2) {
  serve_process proc(TASKFORCE_BINARY, {"serve", "--listen", "nowhere:99999"});
  auto code = proc.wait();
  CAF_CHECK_EQUAL(code, 2);
  auto err = proc.drain_stderr();
  CAF_CHECK(err.find("99999") != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
