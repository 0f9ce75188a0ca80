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

CAF_TEST(a process that joins a published global pool shares its bound and its
           FIFO queue) {
  temp_dir dir;
  auto file = dir.write("config.json",
                        R"({"pool": {"maxParallel": 1, "mode": "global"}})");
  auto endpoint = (dir.path() / "endpoint.json").string();
  serve_process owner{TASKFORCE_BINARY,
                      {"--config", file.string(), "serve", "--listen",
                       "127.0.0.1:0", "--publish", "127.0.0.1:0",
                       "--token-file", endpoint}};
  auto pool_port = port_of(owner.stderr_line(), "pool published on 127.0.0.1:");
  auto tcp_port = port_of(owner.stderr_line(), "listening on 127.0.0.1:");
  serve_process joined{TASKFORCE_BINARY,
                       {"serve", "--stdio", "--join",
                        "127.0.0.1:" + std::to_string(pool_port),
                        "--token-file", endpoint}};
  tcp_peer first{tcp_port, token_in(endpoint)};
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
  temp_dir dir;
  auto endpoint = dir.write("endpoint.json", R"({"token": "abc"})");
  std::filesystem::permissions(endpoint,
                               std::filesystem::perms::owner_read
                                 | std::filesystem::perms::owner_write);
  serve_process joined{TASKFORCE_BINARY,
                       {"serve", "--stdio", "--join", "127.0.0.1:1",
                        "--token-file", endpoint.string()}};
  auto rest = joined.drain_stderr();
  CAF_CHECK(rest.find("cannot join the pool at 127.0.0.1:1")
            != std::string::npos);
  CAF_CHECK_EQUAL(joined.wait(), 1);
}

CAF_TEST(a published pool is only handed to a process with the token) {
  temp_dir dir;
  auto endpoint = (dir.path() / "endpoint.json").string();
  serve_process owner{
    TASKFORCE_BINARY,
    {"serve", "--stdio", "--publish", "127.0.0.1:0", "--token-file", endpoint}};
  auto pool_port = port_of(owner.stderr_line(), "pool published on 127.0.0.1:");
  auto at = "127.0.0.1:" + std::to_string(pool_port);
  auto info = json::parse(read_file(endpoint));
  CAF_CHECK_EQUAL(info["publish"], at);
  CAF_CHECK(!info.contains("address"));
  // A wrong token: refused, and the owner's pool is untouched.
  auto wrong
    = dir.write("wrong.json", json{{"token", std::string(64, '0')}}.dump());
  std::filesystem::permissions(wrong, std::filesystem::perms::owner_read
                                        | std::filesystem::perms::owner_write);
  serve_process impostor{
    TASKFORCE_BINARY,
    {"serve", "--stdio", "--join", at, "--token-file", wrong.string()}};
  CAF_CHECK_EQUAL(impostor.wait(), 1);
  auto err = impostor.drain_stderr();
  CAF_MESSAGE(err);
  CAF_CHECK(err.find("cannot join the pool at " + at + ": unauthorized")
            != std::string::npos);
  // No token file: refused before connecting.
  serve_process lost{TASKFORCE_BINARY,
                     {"serve", "--stdio", "--join", at, "--token-file",
                      (dir.path() / "none.json").string()}};
  CAF_CHECK_EQUAL(lost.wait(), 2);
  CAF_CHECK(lost.drain_stderr().find("no token") != std::string::npos);
  // A token file others may read is not trusted.
  auto open_file = dir.write("open.json", read_file(endpoint));
  std::filesystem::permissions(open_file,
                               std::filesystem::perms::owner_read
                                 | std::filesystem::perms::owner_write
                                 | std::filesystem::perms::others_read);
  serve_process careless{
    TASKFORCE_BINARY,
    {"serve", "--stdio", "--join", at, "--token-file", open_file.string()}};
  CAF_CHECK_EQUAL(careless.wait(), 2);
  CAF_CHECK(careless.drain_stderr().find("open to others")
            != std::string::npos);
  // The right token joins.
  serve_process joined{
    TASKFORCE_BINARY,
    {"serve", "--stdio", "--join", at, "--token-file", endpoint}};
  auto granted = joined.peer.call(acquire(1, "s", "remote"));
  CAF_CHECK_EQUAL(granted["ok"], true);
  auto st = owner.peer.call({{"id", 1}, {"op", "status"}});
  CAF_REQUIRE_EQUAL(st["pools"].size(), 1u);
  CAF_CHECK_EQUAL(st["pools"][0]["running"][0]["holder"], "remote");
  joined.close_input();
  CAF_CHECK_EQUAL(joined.wait(), 0);
  owner.close_input();
  CAF_CHECK_EQUAL(owner.wait(), 0);
}

CAF_TEST(a joined server that listens admits the token of the publishing
           server and leaves its endpoint file alone) {
  temp_dir dir;
  auto file = dir.write("config.json",
                        R"({"pool": {"maxParallel": 1, "mode": "global"}})");
  auto endpoint = (dir.path() / "endpoint.json").string();
  serve_process owner{TASKFORCE_BINARY,
                      {"--config", file.string(), "serve", "--stdio",
                       "--publish", "127.0.0.1:0", "--token-file", endpoint}};
  auto pool_port = port_of(owner.stderr_line(), "pool published on 127.0.0.1:");
  auto before = read_file(endpoint);
  serve_process joined{TASKFORCE_BINARY,
                       {"serve", "--listen", "127.0.0.1:0", "--join",
                        "127.0.0.1:" + std::to_string(pool_port),
                        "--token-file", endpoint}};
  auto tcp_port = port_of(joined.stderr_line(), "listening on 127.0.0.1:");
  CAF_CHECK_EQUAL(read_file(endpoint), before);
  tcp_peer client{tcp_port, token_in(endpoint)};
  auto granted = client.peer.call(acquire(1, "s", "via-joined"));
  CAF_CHECK_EQUAL(granted["ok"], true);
  tcp_peer stranger{tcp_port};
  auto refused = stranger.peer.call({{"id", 1}, {"op", "hello"}});
  CAF_CHECK_EQUAL(refused["error"]["code"], "unauthorized");
  // The owner's pool holds the permit.
  auto st = owner.peer.call({{"id", 1}, {"op", "status"}});
  CAF_REQUIRE_EQUAL(st["pools"].size(), 1u);
  CAF_CHECK_EQUAL(st["pools"][0]["running"][0]["holder"], "via-joined");
  stop(joined);
  CAF_CHECK_EQUAL(read_file(endpoint), before);
  owner.close_input();
  CAF_CHECK_EQUAL(owner.wait(), 0);
}
