// A port in use is one line and exit 2 in every way `serve` listens: TCP
// with an address or the configured one, a published pool, TCP beside a
// published or joined pool, host names and IPv6. Nothing is left behind
// and the server holding the port goes on.
#define CAF_SUITE e2e.port_in_use
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "src/text/join.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

uint16_t port_of(const std::optional<std::string>& line, const char* what) {
  CAF_REQUIRE(line.has_value());
  CAF_REQUIRE(line->find(what) != std::string::npos);
  return static_cast<uint16_t>(std::stoi(line->substr(line->rfind(':') + 1)));
}

/// A server that listens and publishes its pool: it holds two ports.
struct fixture {
  temp_dir dir;
  std::unique_ptr<serve_process> server;
  uint16_t tcp_port = 0;
  uint16_t pool_port = 0;

  fixture() {
    server = std::make_unique<serve_process>(
      TASKFORCE_BINARY,
      std::vector<std::string>{"serve", "--listen", "127.0.0.1:0", "--publish",
                               "127.0.0.1:0", "--token-file",
                               (dir.path() / "endpoint.json").string()});
    pool_port = port_of(server->stderr_line(), "pool published on 127.0.0.1:");
    tcp_port = port_of(server->stderr_line(), "listening on 127.0.0.1:");
  }

  bool still_serving() {
    tcp_peer ok{tcp_port, token_in((dir.path() / "endpoint.json").string())};
    return ok.peer.call({{"id", "check"}, {"op", "status"}})["ok"] == true;
  }

  ~fixture() {
    if (server && server->running()) {
      server->signal(SIGTERM);
      try {
        server->wait();
      } catch (const std::runtime_error&) {
      }
    }
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(port_in_use_tests, fixture)

CAF_TEST(every listening mode says a port in use in one line) {
  auto busy = "127.0.0.1:" + std::to_string(tcp_port);
  auto pool = "127.0.0.1:" + std::to_string(pool_port);
  auto config
    = dir.write("listen.json", R"({"server": {"listen": ")" + busy + R"("}})");
  temp_dir other;
  auto fresh = (other.path() / "endpoint.json").string();
  auto owners = (dir.path() / "endpoint.json").string();
  struct mode {
    std::vector<std::string> args;
    std::string address;
  };
  auto local = "localhost:" + std::to_string(tcp_port);
  std::vector<mode> modes{
    // The configured address (no ADDR after --listen, or no mode at all).
    {{"--config", config.string(), "serve", "--listen", "--token-file", fresh},
     busy},
    {{"--config", config.string(), "serve", "--token-file", fresh}, busy},
    // A host name, and the port alone.
    {{"serve", "--listen", local, "--token-file", fresh}, local},
    {{"serve", "--listen", std::to_string(tcp_port), "--token-file", fresh},
     busy},
    // The published pool's port busy while TCP is free, and the reverse.
    {{"serve", "--listen", "127.0.0.1:0", "--publish", pool, "--token-file",
      fresh},
     pool},
    {{"serve", "--listen", busy, "--publish", "127.0.0.1:0", "--token-file",
      fresh},
     busy},
    // TCP beside a pool joined from the running server.
    {{"serve", "--listen", busy, "--join", pool, "--token-file", owners}, busy},
  };
  for (auto& m : modes) {
    serve_process srv{TASKFORCE_BINARY, m.args};
    auto code = srv.wait(20000ms);
    auto err = srv.drain_stderr();
    CAF_MESSAGE(join(m.args, " ") << " -> " << code << ": " << err);
    CAF_CHECK_EQUAL(code, 2);
    CAF_CHECK_EQUAL(err, "taskforce: cannot listen on " + m.address
                           + ": address in use\n");
    CAF_CHECK(!fs::exists(fresh));
  }
  CAF_CHECK(still_serving());
}

CAF_TEST_FIXTURE_SCOPE_END()
