// Detached permits as a harness whose hooks are short-lived processes uses
// them: every request on a connection of its own, over the real binary's TCP
// listener, each connection closed as soon as it has its answer.
#define CAF_SUITE e2e.serve_detach
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

/// A server on a free loopback port, with `pool_json` as its pool section
/// (or no config file at all: the defaults).
struct fixture {
  temp_dir dir;
  std::unique_ptr<serve_process> server;
  uint16_t port = 0;
  std::string token;

  void start(const std::string& pool_json = "") {
    std::vector<std::string> args;
    if (!pool_json.empty()) {
      auto file = dir.write("config.json", "{\"pool\": " + pool_json + "}");
      args = {"--config", file.string()};
    }
    auto endpoint = (dir.path() / "endpoint.json").string();
    for (auto x : {"serve", "--listen", "127.0.0.1:0", "--token-file"})
      args.emplace_back(x);
    args.push_back(endpoint);
    server = std::make_unique<serve_process>(TASKFORCE_BINARY, args);
    auto line = server->stderr_line();
    CAF_REQUIRE(line.has_value());
    CAF_REQUIRE(line->find("listening on 127.0.0.1:") != std::string::npos);
    port = static_cast<uint16_t>(std::stoi(line->substr(line->rfind(':') + 1)));
    token = token_in(endpoint);
  }

  /// One request on a connection of its own, closed after the answer (a
  /// hook process).
  json once(const json& request) {
    tcp_peer hook{port, token};
    return hook.peer.call(request);
  }

  json detached(const json& id, const std::string& session,
                const std::string& holder,
                const std::string& kind = "foreground") {
    auto x = acquire(id, session, holder, kind);
    x["detach"] = true;
    x["tool"] = "Agent";
    return x;
  }

  /// Asks `status` until no pool has anyone queued (the server has seen a
  /// closed connection); false if that never happens.
  bool queue_empties() {
    for (int i = 0; i < 500; ++i) {
      auto st = once({{"id", "st"}, {"op", "status"}});
      bool queued = false;
      for (auto& pool : st["pools"])
        queued = queued || !pool["queued"].empty();
      if (!queued)
        return true;
      std::this_thread::sleep_for(10ms);
    }
    return false;
  }

  /// The running holders of the only pool in a `status` answer.
  json running() {
    auto st = once({{"id", "st"}, {"op", "status"}});
    if (st["pools"].empty())
      return json::array();
    return st["pools"][0]["running"];
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

CAF_TEST_FIXTURE_SCOPE(serve_detach_tests, fixture)

CAF_TEST(a detached permit outlives the hook that asked for it and a release
           from another hook hands it on) {
  start(R"({"maxParallel": 1})");
  auto granted = once(detached(1, "s", "call-1"));
  CAF_CHECK_EQUAL(granted["ok"], true);
  CAF_CHECK_EQUAL(granted["permit"], 1);
  // Its connection is closed, the permit still held.
  auto held = running();
  CAF_REQUIRE_EQUAL(held.size(), 1u);
  CAF_CHECK_EQUAL(held[0]["holder"], "call-1");
  CAF_CHECK_EQUAL(held[0]["detached"], true);
  // The next subagent waits for it...
  tcp_peer second{port, token};
  second.peer.send(detached(2, "s", "call-2"));
  auto queued = second.peer.event("queued", "call-2");
  CAF_CHECK_EQUAL(queued["position"], 1);
  // ...until a third hook process releases the first.
  auto released = once(release(3, "call-1"));
  CAF_CHECK_EQUAL(released["released"], true);
  auto next = second.peer.response(2);
  CAF_CHECK_EQUAL(next["ok"], true);
  CAF_CHECK_EQUAL(next["permit"], 1);
  // A second release of it is a no-op, as for any holder.
  auto again = once(release(4, "call-1"));
  CAF_CHECK_EQUAL(again["released"], false);
}

CAF_TEST(a hook killed while its detached acquire waits cancels that wait) {
  start(R"({"maxParallel": 1})");
  once(detached(1, "s", "first"));
  {
    tcp_peer waiting{port, token};
    waiting.peer.send(detached(2, "s", "killed"));
    waiting.peer.event("queued", "killed");
  } // the hook's deadline passed: it is killed, its socket closes
  CAF_REQUIRE(queue_empties());
  // Once the first ends, its permit goes to nobody who left.
  auto first = once(release(3, "first"));
  CAF_CHECK_EQUAL(first["released"], true);
  auto st = once({{"id", 4}, {"op", "status"}});
  CAF_CHECK(st["pools"].empty());
  auto later = once(detached(5, "s", "later"));
  CAF_CHECK_EQUAL(later["permit"], 1);
}

CAF_TEST(end of its session and idle of its child release detached permits) {
  start(R"({"maxParallel": 2})");
  once(detached(1, "s", "fg"));
  once(detached(2, "s", "bg", "background"));
  auto bind = once({{"id", 3},
                    {"op", "bind"},
                    {"holder", "bg"},
                    {"child_session", "agent-7"}});
  CAF_CHECK_EQUAL(bind["released"], false);
  auto idle = once({{"id", 4}, {"op", "idle"}, {"session", "agent-7"}});
  CAF_CHECK_EQUAL(idle["released"], json::array({"bg"}));
  auto end = once({{"id", 5}, {"op", "end"}, {"session", "s"}});
  CAF_CHECK_EQUAL(end["released"], json::array({"fg"}));
  CAF_CHECK(running().empty());
}

CAF_TEST(a subscriber sees an orphaned detached permit end) {
  start(R"({"maxParallel": 1})");
  tcp_peer watcher{port, token};
  auto sub = watcher.peer.call({{"id", 1}, {"op", "subscribe"}});
  CAF_CHECK_EQUAL(sub["ok"], true);
  once(detached(1, "s", "h"));
  watcher.peer.event("started", "h");
  once(release(2, "h", "error"));
  auto ended = watcher.peer.event("released", "h");
  CAF_CHECK_EQUAL(ended["reason"], "error");
}

CAF_TEST(a detach that is not a boolean is a bad request naming the field) {
  start(R"({"maxParallel": 1})");
  tcp_peer hook{port, token};
  auto x = acquire(1, "s", "h");
  x["detach"] = "yes";
  auto r = hook.peer.call(x);
  CAF_CHECK_EQUAL(r["ok"], false);
  CAF_CHECK_EQUAL(r["error"]["code"], "bad_request");
  CAF_CHECK(r["error"]["message"].get<std::string>().find("\"detach\"")
            != std::string::npos);
  // Nothing was taken, and the connection still answers.
  auto ok = hook.peer.call(acquire(2, "s", "h"));
  CAF_CHECK_EQUAL(ok["permit"], 1);
}

CAF_TEST(
  the default tool names count Claude Code and OpenCode subagents in any case) {
  start();
  tcp_peer hook{port, token};
  auto call = [&](const json& id, const std::string& tool) {
    auto x = acquire(id, "s", "h-" + tool);
    x["tool"] = tool;
    return hook.peer.call(x);
  };
  for (auto tool : {"Agent", "Task", "task", "AGENT"}) {
    auto r = call(tool, tool);
    CAF_MESSAGE("tool " << tool);
    CAF_CHECK(r["permit"].is_number());
    hook.peer.call(release(std::string{"r-"} + tool, "h-" + std::string{tool}));
  }
  auto other = call("bash", "Bash");
  CAF_CHECK_EQUAL(other["ok"], true);
  CAF_CHECK(other["permit"].is_null());
}

CAF_TEST_FIXTURE_SCOPE_END()
