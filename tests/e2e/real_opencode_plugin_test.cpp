// The OpenCode plugin (integrations/opencode/taskforce.ts) in the real
// OpenCode (the version tests/harness pins), offline against the scripted
// model server, admitted by a real `taskforce serve --listen`: the model asks
// for two subagents in one turn, and with maxParallel 1 the second waits
// until the first is done, even when the first fails; a wait longer than
// queueTimeoutMs is refused.
#define CAF_SUITE e2e.real_opencode_plugin
#include <caf/test/unit_test.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "e2e/opencode_plugin.hpp"

using namespace taskforce;
using namespace taskforce::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

/// The main turn asks for two subagents at once, then ends; each subagent
/// answers from its own steps.
std::string two_subagents(const std::string& sub1, const std::string& sub2) {
  return R"({"rules": [
    {"name": "sub1", "when": "SUB-ONE-WORK", "steps": [)"
         + sub1 + R"(]},
    {"name": "sub2", "when": "SUB-TWO-WORK", "steps": [)"
         + sub2 + R"(]},
    {"name": "main", "when": "PLUGIN-MAIN", "steps": [
      {"tools": [
        {"tool": "task", "input": {"description": "sub 1",
          "prompt": "SUB-ONE-WORK", "subagent_type": "general"}},
        {"tool": "task", "input": {"description": "sub 2",
          "prompt": "SUB-TWO-WORK", "subagent_type": "general"}}]},
      {"text": "both subagents are done"}]}]})";
}

} // namespace

CAF_TEST(two subagents at once run one after the other with maxParallel 1) {
  auto clis = find_harness_clis();
  if (clis.dir.empty()) {
    say_skipped(clis.why_not);
    return;
  }
  plugin_case c{clis};
  c.serve(R"({"maxParallel": 1, "queueTimeoutMs": 0})");
  // The first subagent takes a while; the second fails at once (its model
  // call is refused), and must still give its slot back.
  model_server model{
    c.s.dir, two_subagents(R"({"text": "sub one is done", "delayMs": 1500})",
                           R"({"status": 400, "error": "scripted failure"})")};
  auto r = c.run_opencode(model);
  CAF_CHECK(r.success());
  auto order = c.started();
  CAF_REQUIRE_EQUAL(order.size(), 2u);
  // The second was queued and granted only once the first was released.
  CAF_CHECK(c.index_of("queued", order[1]) >= 0);
  CAF_CHECK(c.index_of("released", order[0]) >= 0);
  CAF_CHECK(c.index_of("started", order[1]) > c.index_of("released", order[0]));
  CAF_CHECK(c.index_of("released", order[1]) >= 0);
  if (c.index_of("started", order[1]) <= c.index_of("released", order[0]))
    CAF_MESSAGE("events:\n" << c.dump());
  CAF_CHECK(one_after_the_other(model_events(model), "sub1", "sub2"));
  // Nothing is held or queued once OpenCode is done.
  auto st = c.watcher->peer.call({{"id", "st"}, {"op", "status"}});
  for (auto& pool : st["pools"]) {
    CAF_CHECK(pool["running"].empty());
    CAF_CHECK(pool["queued"].empty());
  }
}

CAF_TEST(a wait longer than queueTimeoutMs is refused and the model is told) {
  auto clis = find_harness_clis();
  if (clis.dir.empty()) {
    say_skipped(clis.why_not);
    return;
  }
  plugin_case c{clis};
  c.serve(R"({"maxParallel": 1, "queueTimeoutMs": 1000})");
  model_server model{
    c.s.dir, two_subagents(R"({"text": "sub one is done", "delayMs": 6000})",
                           R"({"text": "sub two is done", "delayMs": 6000})")};
  auto r = c.run_opencode(model);
  CAF_CHECK(r.success());
  auto order = c.started();
  CAF_REQUIRE_EQUAL(order.size(), 1u);
  // The other call waited, timed out and never ran.
  int timed_out = -1;
  for (size_t i = 0; i < c.events.size(); ++i)
    if (c.events[i].value("event", "") == "timed_out")
      timed_out = static_cast<int>(i);
  CAF_CHECK(timed_out >= 0);
  int subagent_requests = 0;
  bool told = false;
  for (auto& line : model.events()) {
    auto e = json::parse(line);
    if (e["event"] == "request" && (e["rule"] == "sub1" || e["rule"] == "sub2"))
      ++subagent_requests;
    // The main turn that follows carries the refusal as a tool result.
    if (e["event"] == "request" && e["rule"] == "main" && e["step"] == 1)
      told = true;
  }
  CAF_CHECK_EQUAL(subagent_requests, 1);
  CAF_CHECK(told);
  if (timed_out < 0)
    CAF_MESSAGE("events:\n" << c.dump());
}
