// The OpenCode plugin (integrations/opencode/taskforce.ts) in the real
// OpenCode (the version tests/harness pins), offline against the scripted
// model server, admitted by a real `taskforce serve --listen`: the model asks
// for two subagents in one turn, and with maxParallel 1 the second waits
// until the first is done, even when the first fails; a wait longer than
// queueTimeoutMs is refused.
#define CAF_SUITE e2e.real_opencode_plugin
#include <caf/test/unit_test.hpp>

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/harness.hpp"
#include "e2e/protocol_client.hpp"
#include "scenarios/scenario.hpp"

using namespace taskforce;
using namespace taskforce::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

const std::string plugin
  = std::string{TASKFORCE_SOURCE_DIR} + "/integrations/opencode/taskforce.ts";

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

struct plugin_case {
  const harness_clis& clis;
  scenario s;
  std::unique_ptr<serve_process> server;
  std::unique_ptr<tcp_peer> watcher;
  std::vector<json> events;

  explicit plugin_case(const harness_clis& c) : clis(c) {}

  /// Starts `taskforce serve --listen` in the project with `pool` as the
  /// pool config, and a connection that watches every holder's events.
  void serve(const std::string& pool) {
    s.set_config(R"({"pool": )" + pool + "}");
    server = std::make_unique<serve_process>(
      TASKFORCE_BINARY,
      std::vector<std::string>{"--repo", s.root.string(), "--config",
                               s.config.string(), "serve", "--listen",
                               "127.0.0.1:0"},
      s.root.string());
    // Its log may come first; the line that names the port comes once.
    std::string line;
    auto at = std::string::npos;
    while (at == std::string::npos) {
      auto next = server->stderr_line(60000ms);
      CAF_REQUIRE(next.has_value());
      line = *next;
      at = line.find("listening on 127.0.0.1:");
    }
    auto port = static_cast<uint16_t>(std::stoi(
      line.substr(at + std::string{"listening on 127.0.0.1:"}.size())));
    auto endpoint
      = json::parse(read_file(s.root / ".taskforce" / "endpoint.json"));
    watcher
      = std::make_unique<tcp_peer>(port, endpoint["token"].get<std::string>());
    auto r = watcher->peer.call({{"id", "sub"}, {"op", "subscribe"}});
    CAF_REQUIRE(r["ok"] == true);
  }

  /// `opencode run PROMPT` in the project with the plugin loaded.
  proc::run_result run_opencode(const model_server& model) {
    auto home = s.dir.path() / "opencode-home";
    auto env = own_home(home, clis);
    auto config = home / ".config" / "opencode";
    s.dir.write(
      "opencode-home/.config/opencode/opencode.json",
      opencode_config(model, R"(, "plugin": ["file://)" + plugin + R"("])"));
    // OpenCode installs @opencode-ai/plugin in each config folder unless it
    // is there already; offline that stalls, so the pinned one is linked.
    std::filesystem::create_symlink(clis.dir / "node_modules",
                                    config / "node_modules");
    std::filesystem::copy_file(clis.dir / "package.json",
                               config / "package.json");
    std::filesystem::copy_file(clis.dir / "package-lock.json",
                               config / "package-lock.json");
    env.emplace_back("OPENCODE_DISABLE_MODELS_FETCH", "1");
    env.emplace_back("TASKFORCE_ENDPOINT",
                     (s.root / ".taskforce" / "endpoint.json").string());
    proc::run_options o;
    o.argv = {(clis.bin() / "opencode").string(), "run",
              "PLUGIN-MAIN: run both subagents"};
    o.cwd = s.root.string();
    o.env = env;
    o.log_file = (s.dir.path() / "opencode.log").string();
    o.timeout = std::chrono::minutes(12);
    auto r = proc::run(o);
    if (!r.success())
      CAF_MESSAGE("opencode said:\n" << read_file(o.log_file));
    // The events the run caused, all there by now.
    try {
      for (;;)
        events.push_back(watcher->peer.next(3000ms));
    } catch (const std::runtime_error&) {
    }
    return r;
  }

  /// The index of the first event `name` of `holder`; -1 when none.
  int index_of(const std::string& name, const std::string& holder) const {
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].value("event", "") == name
          && events[i].value("holder", "") == holder)
        return static_cast<int>(i);
    return -1;
  }

  /// The holders in the order they were granted.
  std::vector<std::string> started() const {
    std::vector<std::string> out;
    for (auto& e : events)
      if (e.value("event", "") == "started")
        out.push_back(e.value("holder", ""));
    return out;
  }

  std::string dump() const {
    std::string out;
    for (auto& e : events)
      out += e.dump() + "\n";
    return out;
  }
};

/// Whether the model server saw `second`'s first request only after it
/// answered `first`'s last step.
bool one_after_the_other(const model_server& model) {
  int first_done = -1, second_begun = -1, i = 0;
  std::string first;
  for (auto& line : model.events()) {
    auto e = json::parse(line);
    auto rule = e["rule"].is_string() ? e["rule"].get<std::string>() : "";
    if (rule == "sub1" || rule == "sub2") {
      if (first.empty())
        first = rule;
      if (rule == first && e["event"] == "response")
        first_done = i;
      if (rule != first && e["event"] == "request" && second_begun < 0)
        second_begun = i;
    }
    ++i;
  }
  return first_done >= 0 && second_begun > first_done;
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
  CAF_CHECK(one_after_the_other(model));
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
