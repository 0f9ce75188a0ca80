// The pool's semantics as a harness sees them through `taskforce serve
// --stdio`: background calls, idle, bind, end, adopt, nested delegation,
// bounded waits and the watchdog, each with the fields the protocol lists.
#define CAF_SUITE e2e.serve_pool
#include <caf/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

struct fixture {
  temp_dir dir;
  std::unique_ptr<serve_process> server;

  protocol_peer& start(const std::string& pool_json) {
    auto file = dir.write("config.json", "{\"pool\": " + pool_json + "}");
    server = std::make_unique<serve_process>(
      TASKFORCE_BINARY,
      std::vector<std::string>{"--config", file.string(), "serve", "--stdio"});
    return server->peer;
  }
};

json op(const json& id, const std::string& name, const std::string& key,
        const std::string& value) {
  return json{{"id", id}, {"op", name}, {key, value}};
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(serve_pool_tests, fixture)

CAF_TEST(a background permit is released by idle of its child session) {
  auto& p = start(R"({"maxParallel": 1})");
  auto req = acquire(1, "parent", "bg", "background");
  req["child_session"] = "child-1";
  p.call(req);
  p.send(acquire(2, "parent", "next"));
  p.event("queued", "next");
  auto idle = p.call(op(3, "idle", "session", "child-1"));
  CAF_CHECK_EQUAL(idle["released"], json::array({"bg"}));
  auto released = p.event("released", "bg");
  CAF_CHECK_EQUAL(released["reason"], "idle");
  auto granted = p.response(2);
  CAF_CHECK_EQUAL(granted["ok"], true);
  // A session with nothing running answers an empty list.
  auto none = p.call(op(4, "idle", "session", "nobody"));
  CAF_CHECK_EQUAL(none["released"], json::array());
}

CAF_TEST(bind ties a returned background call to its child and releases at once
           when that child was idle just before) {
  auto& p = start(R"({"maxParallel": 2, "idleMemoryMs": 60000})");
  p.call(acquire(1, "parent", "late", "background"));
  auto bind = p.call(
    {{"id", 2}, {"op", "bind"}, {"holder", "late"}, {"child_session", "c1"}});
  CAF_CHECK_EQUAL(bind["released"], false);
  auto idle = p.call(op(3, "idle", "session", "c1"));
  CAF_CHECK_EQUAL(idle["released"], json::array({"late"}));
  // The idle event comes first, the call returns afterwards.
  p.call(acquire(4, "parent", "early", "background"));
  p.call(op(5, "idle", "session", "c2"));
  auto bind2 = p.call(
    {{"id", 6}, {"op", "bind"}, {"holder", "early"}, {"child_session", "c2"}});
  CAF_CHECK_EQUAL(bind2["released"], true);
  auto unknown = p.call(
    {{"id", 7}, {"op", "bind"}, {"holder", "ghost"}, {"child_session", "c3"}});
  CAF_CHECK_EQUAL(unknown["released"], false);
}

CAF_TEST(end releases a sessions holders and cancels its waits) {
  auto& p = start(R"({"maxParallel": 1})");
  p.call(acquire(1, "s", "a"));
  p.send(acquire(2, "s", "b"));
  p.event("queued", "b");
  auto end = p.call(op(3, "end", "session", "s"));
  CAF_CHECK_EQUAL(end["ok"], true);
  CAF_CHECK(end["released"].is_array());
  auto released = p.event("released", "a");
  CAF_CHECK_EQUAL(released["reason"], "ended");
  auto cancelled = p.response(2);
  CAF_CHECK_EQUAL(cancelled["error"]["code"], "cancelled");
}

CAF_TEST(adopt takes a free permit and never queues) {
  auto& p = start(R"({"maxParallel": 1})");
  auto adopt = [&](const json& id, const std::string& holder) {
    return p.call({{"id", id},
                   {"op", "adopt"},
                   {"session", "s"},
                   {"holder", holder},
                   {"child_session", "child-" + holder}});
  };
  auto first = adopt(1, "x");
  CAF_CHECK_EQUAL(first["ok"], true);
  CAF_CHECK(first["permit"].is_number());
  auto started = p.event("started", "x");
  CAF_CHECK_EQUAL(started["session"], "s");
  auto second = adopt(2, "y");
  CAF_CHECK_EQUAL(second["ok"], false);
  CAF_CHECK_EQUAL(second["error"]["code"], "pool_full");
  // An adopted permit is a background one: idle of its child releases it.
  auto idle = p.call(op(3, "idle", "session", "child-x"));
  CAF_CHECK_EQUAL(idle["released"], json::array({"x"}));
}

CAF_TEST(a nested acquire borrows the blocked parents permit with lend) {
  auto& p = start(R"({"maxParallel": 1, "nested": "lend"})");
  p.call(acquire(1, "root", "parent"));
  auto nested = acquire(2, "child", "kid");
  nested["parent"] = "parent";
  auto r = p.call(nested);
  CAF_CHECK_EQUAL(r["ok"], true);
  CAF_CHECK_EQUAL(r["lent"], true);
  auto started = p.event("started", "kid");
  CAF_CHECK_EQUAL(started["lent"], true);
  auto rel = p.call(release(3, "kid"));
  CAF_CHECK_EQUAL(rel["released"], true);
  // The bound held: a root acquire still queues behind the parent.
  p.send(acquire(4, "root", "late"));
  auto q = p.event("queued", "late");
  CAF_CHECK_EQUAL(q["running"], 1);
}

CAF_TEST(a nested acquire fails fast with pool_full under fail_fast) {
  auto& p = start(R"({"maxParallel": 1, "nested": "fail_fast"})");
  p.call(acquire(1, "root", "parent"));
  auto nested = acquire(2, "child", "kid");
  nested["parent"] = "parent";
  auto r = p.call(nested);
  CAF_CHECK_EQUAL(r["ok"], false);
  CAF_CHECK_EQUAL(r["error"]["code"], "pool_full");
}

CAF_TEST(
  a queued acquire times out with how long it waited and how many were ahead) {
  auto& p = start(R"({"maxParallel": 1, "queueTimeoutMs": 300})");
  p.call(acquire(1, "s", "a"));
  p.send(acquire(2, "s", "b"));
  p.send(acquire(3, "s", "c"));
  auto r = p.response(3, 5000ms);
  CAF_CHECK_EQUAL(r["ok"], false);
  CAF_CHECK_EQUAL(r["error"]["code"], "queue_timeout");
  auto message = r["error"]["message"].get<std::string>();
  CAF_CHECK(message.find("ms") != std::string::npos);
  auto ev = p.event("timed_out", "c");
  CAF_CHECK(ev["waited_ms"].get<int64_t>() >= 250);
  CAF_CHECK(!ev.contains("session"));
}

CAF_TEST(the watchdog force releases a holder kept longer than maxHoldMs) {
  auto& p = start(R"({"maxParallel": 1, "maxHoldMs": 300})");
  p.call(acquire(1, "s", "leaky"));
  p.send(acquire(2, "s", "waiting"));
  auto ev = p.event("force_released", "leaky", 5000ms);
  CAF_CHECK(ev["held_ms"].get<int64_t>() >= 250);
  CAF_CHECK(!ev.contains("reason"));
  auto granted = p.response(2, 5000ms);
  CAF_CHECK_EQUAL(granted["ok"], true);
  // Its later release is a no-op.
  auto rel = p.call(release(3, "leaky"));
  CAF_CHECK_EQUAL(rel["released"], false);
}

CAF_TEST(
  global mode shares one pool across sessions and session mode does not ) {
  auto& g = start(R"({"maxParallel": 1, "mode": "global"})");
  g.call(acquire(1, "s1", "a"));
  g.send(acquire(2, "s2", "b"));
  auto q = g.event("queued", "b");
  CAF_CHECK_EQUAL(q["position"], 1);
  auto st = g.call({{"id", 3}, {"op", "status"}});
  CAF_CHECK_EQUAL(st["mode"], "global");
  CAF_CHECK_EQUAL(st["pools"].size(), 1u);
  auto& s = start(R"({"maxParallel": 1, "mode": "session"})");
  s.call(acquire(1, "s1", "a"));
  auto other = s.call(acquire(2, "s2", "b"));
  CAF_CHECK_EQUAL(other["ok"], true);
  auto st2 = s.call({{"id", 3}, {"op", "status"}});
  CAF_CHECK_EQUAL(st2["pools"].size(), 2u);
}

CAF_TEST_FIXTURE_SCOPE_END()
