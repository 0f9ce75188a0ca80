// The Claude Code hooks (integrations/claude-code/settings.json, pasted as
// it is into a project's .claude/settings.json, with `taskforce` on the
// PATH) in the real Claude Code (`claude -p`, the version tests/harness
// pins), offline against the scripted model server, admitted by the real
// per-user server of a user of its own: with maxParallel 1 the model's two
// subagents of one turn, one in the foreground and one in the background,
// run one after the other; failed subagents give their permit back so the
// next one runs; a wait past queueTimeoutMs is denied and the model reads
// why; a Workflow's subagents hold a permit from start to stop; the end of
// the session gives back what it held and ends its waits; a call Claude
// Code's permission rules refuse gives its permit back at once.
#define CAF_SUITE e2e.real_claude_hook
#include <caf/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/harness.hpp"
#include "e2e/pool_watch.hpp"
#include "e2e/protocol_client.hpp"
#include "e2e/user_server.hpp"

using namespace taskforce;
using namespace taskforce::test;
using json = nlohmann::json;
using namespace std::chrono_literals;

namespace {

const std::string hooks_block = std::string{TASKFORCE_SOURCE_DIR}
                                + "/integrations/claude-code/settings.json";

/// An Agent tool call as the model makes it; `foreground` says
/// run_in_background false, else the field is left out (Claude Code's
/// default: the background).
std::string agent_call(const std::string& description,
                       const std::string& prompt, bool foreground) {
  return R"({"tool": "Agent", "input": {"description": ")" + description
         + R"(", "prompt": ")" + prompt
         + R"(", "subagent_type": "general-purpose")"
         + (foreground ? R"(, "run_in_background": false)" : "") + "}}";
}

/// A model server script: the main agent asks for two subagents in one
/// turn, the first in the foreground and the second in the background, each
/// answering after `delay_ms`; then it says `last`.
std::string two_subagents(int delay_ms, const std::string& last) {
  auto sub = [&](const std::string& name, const std::string& marker,
                 const std::string& done) {
    return R"({"name": ")" + name + R"(", "when": ")" + marker
           + R"(", "steps": [{"text": ")" + done + R"(", "delayMs": )"
           + std::to_string(delay_ms) + "}]}";
  };
  return R"({"rules": [)" + sub("sub1", "SUB-ONE-WORK", "sub one is done")
         + ", " + sub("sub2", "SUB-TWO-WORK", "sub two is done")
         + R"(, {"name": "main", "when": "HOOK-MAIN", "steps": [{"tools": [)"
         + agent_call("sub 1", "SUB-ONE-WORK", true) + ", "
         + agent_call("sub 2", "SUB-TWO-WORK", false) + R"(]}, {"text": ")"
         + last + R"("}]}]})";
}

/// A project whose .claude/settings.json is the hooks block, `taskforce` (a
/// link to the built binary) on the PATH its hooks run with, the per-user
/// server of a user of its own (runtime and config folders), and a
/// connection watching that server's events.
struct hook_case : pool_events {
  const harness_clis& clis;
  user_world w;
  std::filesystem::path project = w.dir.path() / "project";
  std::filesystem::path bin = w.dir.path() / "bin";
  std::unique_ptr<unix_peer> watcher;
  std::string output;

  hook_case(const harness_clis& c, const std::string& pool) : clis(c) {
    std::filesystem::create_directories(project / ".claude");
    std::filesystem::copy_file(hooks_block,
                               project / ".claude" / "settings.json");
    std::filesystem::create_directories(bin);
    std::filesystem::create_symlink(TASKFORCE_BINARY, bin / "taskforce");
    w.set_config(R"({"pool": )" + pool + "}");
    // The server the hooks reach, started now so that its events are
    // watched from the first one on.
    w.status();
    watcher = std::make_unique<unix_peer>(w.socket().string());
    auto r = watcher->peer.call({{"id", "sub"}, {"op", "subscribe"}});
    CAF_REQUIRE(r["ok"] == true);
  }

  /// How `claude -p PROMPT` runs in the project. `bypass` runs it without
  /// permission checks (a Workflow needs that, or it waits for a review
  /// nobody gives).
  proc::run_options claude(const model_server& model, const std::string& prompt,
                           bool bypass = false) const {
    auto env = claude_env(w.dir.path() / "claude-home", clis, model);
    for (auto& [key, value] : env)
      if (key == "PATH")
        value = bin.string() + ":" + value;
    // The user's own server: its runtime folder and its config.
    for (auto& kv : w.env())
      env.push_back(kv);
    // As root, Claude Code bypasses permissions only in a sandbox it is
    // told of.
    if (bypass)
      env.emplace_back("IS_SANDBOX", "1");
    proc::run_options o;
    o.argv = {(clis.bin() / "claude").string(), "-p", prompt, "--output-format",
              "text"};
    if (bypass)
      o.argv.emplace_back("--dangerously-skip-permissions");
    else
      o.argv.insert(o.argv.end(), {"--permission-mode", "acceptEdits"});
    o.cwd = project.string();
    o.env = std::move(env);
    o.log_file = (w.dir.path() / "claude.log").string();
    o.timeout = std::chrono::minutes(5);
    return o;
  }

  /// Runs `claude -p PROMPT` to its end; afterwards `events` holds what the
  /// server told its subscriber.
  proc::run_result run_claude(const model_server& model,
                              const std::string& prompt, bool bypass = false) {
    auto o = claude(model, prompt, bypass);
    auto r = proc::run(o);
    output = read_file(o.log_file);
    if (!r.success())
      CAF_MESSAGE("claude said:\n" << output);
    collect_events();
    return r;
  }

  /// Reads the server's events until none came for a while (every hook has
  /// ended with the run, so its events are there by now).
  void collect_events() {
    try {
      for (;;)
        events.push_back(watcher->peer.next(3000ms));
    } catch (const std::runtime_error&) {
    }
  }

  /// Why `holder`'s permit went back ("" when it did not).
  std::string release_reason(const std::string& holder) const {
    return event_of("released", holder).value("reason", "");
  }

  /// The most permits held at once, from the events.
  int most_held() const {
    int held = 0, most = 0;
    for (auto& e : events) {
      auto name = e.value("event", "");
      if (name == "started")
        most = std::max(most, ++held);
      else if (name == "released" || name == "force_released")
        --held;
    }
    return most;
  }

  /// Whether the server holds and awaits nothing now.
  bool nothing_held() {
    return test::nothing_held(watcher->peer);
  }
};

/// How many requests (or answers, for `event` "response") rule `rule` got.
int count(const std::vector<json>& log, const std::string& event,
          const std::string& rule) {
  return static_cast<int>(
    std::count_if(log.begin(), log.end(), [&](const json& e) {
      return e["event"] == event && e["rule"].is_string() && e["rule"] == rule;
    }));
}

bool skip_without_clis(const harness_clis& clis) {
  if (!clis.dir.empty())
    return false;
  say_skipped(clis.why_not);
  return true;
}

} // namespace

CAF_TEST(a foreground and a background subagent of one turn run one after the
           other with maxParallel 1) {
  auto clis = find_harness_clis();
  if (skip_without_clis(clis))
    return;
  hook_case c{clis, R"({"maxParallel": 1, "queueTimeoutMs": 60000})"};
  model_server model{c.w.dir, two_subagents(1500, "both subagents are done")};
  auto r = c.run_claude(model, "HOOK-MAIN: run both subagents");
  CAF_CHECK(r.success());
  auto order = c.started();
  CAF_REQUIRE_EQUAL(order.size(), 2u);
  // The second waited and was granted only once the first was given back.
  CAF_CHECK(c.index_of("queued", order[1]) >= 0);
  CAF_CHECK(c.index_of("released", order[0]) >= 0);
  CAF_CHECK(c.index_of("started", order[1]) > c.index_of("released", order[0]));
  CAF_CHECK_EQUAL(c.most_held(), 1);
  // Each was given back by its own end, not by the session's: the
  // foreground call when it completed, the background agent when it
  // stopped.
  std::vector<std::string> reasons{c.release_reason(order[0]),
                                   c.release_reason(order[1])};
  std::sort(reasons.begin(), reasons.end());
  CAF_CHECK_EQUAL(reasons[0], "completed");
  CAF_CHECK_EQUAL(reasons[1], "idle");
  // Both subagents really ran, one after the other.
  auto log = model_events(model);
  CAF_CHECK_EQUAL(count(log, "response", "sub1"), 1);
  CAF_CHECK_EQUAL(count(log, "response", "sub2"), 1);
  CAF_CHECK(one_after_the_other(log, "sub1", "sub2"));
  CAF_CHECK(c.nothing_held());
  if (c.most_held() != 1 || reasons[0] != "completed")
    CAF_MESSAGE("events:\n" << c.dump());
}

CAF_TEST(failed subagents give their permit back and the next one runs) {
  auto clis = find_harness_clis();
  if (skip_without_clis(clis))
    return;
  // A leaked permit would show as a denial of the next call, well before
  // the run's own limit.
  hook_case c{clis, R"({"maxParallel": 1, "queueTimeoutMs": 30000})"};
  // Two subagents fail (every model call refused), one in the foreground
  // and one in the background; the turn after them asks for a third.
  model_server model{c.w.dir, R"({"rules": [
    {"name": "fail-fg", "when": "SUB-FAIL-FG", "steps": [
      {"status": 400, "error": "scripted failure"}]},
    {"name": "fail-bg", "when": "SUB-FAIL-BG", "steps": [
      {"status": 400, "error": "scripted failure"}]},
    {"name": "ok", "when": "SUB-OK-WORK", "steps": [
      {"text": "sub ok is done"}]},
    {"name": "main", "when": "HOOK-MAIN", "steps": [
      {"tools": [)" + agent_call("fail fg", "SUB-FAIL-FG", true)
                                + ", "
                                + agent_call("fail bg", "SUB-FAIL-BG", false)
                                + R"(]},
      )" + agent_call("ok", "SUB-OK-WORK", true)
                                + R"(,
      {"text": "all done"}]}]})"};
  auto r = c.run_claude(model, "HOOK-MAIN: run the subagents");
  CAF_CHECK(r.success());
  auto order = c.started();
  CAF_REQUIRE_EQUAL(order.size(), 3u);
  CAF_CHECK_EQUAL(c.most_held(), 1);
  // The failed ones (granted first: the third call comes only in the turn
  // after theirs) gave their permit back by their own end; the third was
  // granted after that.
  for (int i : {0, 1}) {
    auto reason = c.release_reason(order[i]);
    CAF_CHECK(reason == "error" || reason == "idle");
    CAF_CHECK(c.index_of("started", order[2])
              > c.index_of("released", order[i]));
  }
  auto last = c.release_reason(order[2]);
  CAF_CHECK(last == "completed" || last == "idle");
  auto log = model_events(model);
  CAF_CHECK(count(log, "request", "fail-fg") >= 1);
  CAF_CHECK(count(log, "request", "fail-bg") >= 1);
  CAF_CHECK_EQUAL(count(log, "response", "ok"), 1);
  CAF_CHECK(c.nothing_held());
  if (c.most_held() != 1 || order.size() != 2)
    CAF_MESSAGE("events:\n" << c.dump());
}

CAF_TEST(a wait past queueTimeoutMs is denied and the model reads why) {
  auto clis = find_harness_clis();
  if (skip_without_clis(clis))
    return;
  hook_case c{clis, R"({"maxParallel": 1, "queueTimeoutMs": 2000})"};
  // Each subagent holds its permit longer than the other may wait.
  model_server model{c.w.dir,
                     two_subagents(5000, "one of them was not admitted")};
  auto r = c.run_claude(model, "HOOK-MAIN: run both subagents");
  CAF_CHECK(r.success());
  auto order = c.started();
  CAF_REQUIRE_EQUAL(order.size(), 1u);
  // The other call waited, timed out and never ran.
  std::string timed_out;
  for (auto& e : c.events)
    if (e.value("event", "") == "timed_out")
      timed_out = e.value("holder", "");
  CAF_CHECK(!timed_out.empty());
  CAF_CHECK_NOT_EQUAL(timed_out, order[0]);
  auto log = model_events(model);
  CAF_CHECK_EQUAL(count(log, "request", "sub1") + count(log, "request", "sub2"),
                  1);
  // The model's next turn carries the denial as the call's (failed) result.
  bool told = false;
  for (auto& e : log)
    if (e["event"] == "request" && e["rule"] == "main" && e["step"] == 1)
      for (auto& result : e.value("results", json::array()))
        told = told
               || (result.value("is_error", false)
                   && result.value("text", "").find("not admitted")
                        != std::string::npos
                   && result.value("text", "").find("queue_timeout")
                        != std::string::npos);
  CAF_CHECK(told);
  // Nothing leaks: the granted one went back by its own end.
  auto reason = c.release_reason(order[0]);
  CAF_CHECK(reason == "completed" || reason == "idle");
  CAF_CHECK(c.nothing_held());
  if (!told || timed_out.empty())
    CAF_MESSAGE("events:\n"
                << c.dump() << "model server:\n"
                << read_file(model.log()));
}

CAF_TEST(the subagents of a Workflow hold a permit from start to stop) {
  auto clis = find_harness_clis();
  if (skip_without_clis(clis))
    return;
  hook_case c{clis, R"({"maxParallel": 1, "queueTimeoutMs": 60000})"};
  // A Workflow starts its agents without PreToolUse: only SubagentStart
  // (which waits for the permit) and SubagentStop see them.
  model_server model{c.w.dir, R"script({"rules": [
    {"name": "wf1", "when": "WF-ONE-WORK", "steps": [
      {"text": "wf one is done", "delayMs": 1000}]},
    {"name": "wf2", "when": "WF-TWO-WORK", "steps": [
      {"text": "wf two is done", "delayMs": 1000}]},
    {"name": "main", "when": "HOOK-MAIN", "steps": [
      {"tool": "Workflow", "input": {"script": "export const meta = {name: 'two', description: 'two agents'}\nreturn await parallel([() => agent('WF-ONE-WORK'), () => agent('WF-TWO-WORK')])"}},
      {"text": "the workflow runs"}]}]})script"};
  auto r = c.run_claude(model, "HOOK-MAIN: run a workflow", true);
  CAF_CHECK(r.success());
  auto order = c.started();
  CAF_REQUIRE_EQUAL(order.size(), 2u);
  CAF_CHECK_EQUAL(c.most_held(), 1);
  for (auto& holder : order) {
    CAF_CHECK_EQUAL(holder.rfind("workflow:", 0), 0u);
    CAF_CHECK_EQUAL(c.release_reason(holder), "idle");
  }
  CAF_CHECK(c.index_of("started", order[1]) > c.index_of("released", order[0]));
  auto log = model_events(model);
  CAF_CHECK_EQUAL(count(log, "response", "wf1"), 1);
  CAF_CHECK_EQUAL(count(log, "response", "wf2"), 1);
  CAF_CHECK(c.nothing_held());
  if (order.size() != 2 || c.most_held() != 1)
    CAF_MESSAGE("events:\n" << c.dump());
}

CAF_TEST(the end of the session gives back what it held and ends its waits) {
  auto clis = find_harness_clis();
  if (skip_without_clis(clis))
    return;
  hook_case c{clis, R"({"maxParallel": 1, "queueTimeoutMs": 60000})"};
  // Each subagent would take a minute; the session ends before that.
  model_server model{c.w.dir, two_subagents(60000, "both subagents are done")};
  auto o = c.claude(model, "HOOK-MAIN: run both subagents");
  proc::spawn_options so;
  so.argv = o.argv;
  so.cwd = o.cwd;
  so.env = o.env;
  so.in = proc::stdio::null();
  so.out = proc::stdio::file(o.log_file);
  so.err = proc::stdio::to_stdout();
  auto claude = proc::spawn(so);
  // Once one subagent holds the permit and the other waits for it, Claude
  // Code is stopped as a user's Ctrl-C or a closing terminal does.
  bool waiting = false;
  try {
    while (!waiting) {
      c.events.push_back(c.watcher->peer.next(120000ms));
      waiting = c.events.back().value("event", "") == "queued";
    }
  } catch (const std::runtime_error& e) {
    CAF_MESSAGE("no wait came: " << e.what() << "\nclaude said:\n"
                                 << read_file(o.log_file));
  }
  CAF_REQUIRE(waiting);
  ::kill(claude.pid, SIGTERM);
  int status = 0;
  bool ended = eventually(
    [&] {
      return ::waitpid(claude.pid, &status, WNOHANG) == claude.pid;
    },
    30s);
  CAF_CHECK(ended);
  c.collect_events();
  ::kill(-claude.pid, SIGKILL);
  if (!ended)
    ::waitpid(claude.pid, &status, 0);
  // The held permit went back with the session, and the wait ended with
  // it: nothing is held or awaited, and the waiting call never got one.
  auto order = c.started();
  CAF_REQUIRE_EQUAL(order.size(), 1u);
  CAF_CHECK_EQUAL(c.release_reason(order[0]), "ended");
  CAF_CHECK(c.nothing_held());
  if (c.release_reason(order[0]) != "ended")
    CAF_MESSAGE("events:\n" << c.dump());
}

CAF_TEST(a call a permission rule turns down gives its permit back at once) {
  auto clis = find_harness_clis();
  if (skip_without_clis(clis))
    return;
  hook_case c{clis, R"({"maxParallel": 1, "queueTimeoutMs": 60000})"};
  // The hook admits the call; Claude Code's own rules then refuse it.
  c.w.dir.write(
    "project/.claude/settings.local.json",
    R"rule({"permissions": {"deny": ["Agent(general-purpose)"]}})rule");
  model_server model{c.w.dir, R"({"rules": [
    {"name": "sub1", "when": "SUB-ONE-WORK", "steps": [
      {"text": "sub one is done"}]},
    {"name": "main", "when": "HOOK-MAIN", "steps": [
      )" + agent_call("sub 1", "SUB-ONE-WORK", true)
                                + R"(,
      {"text": "it was refused"}]}]})"};
  auto r = c.run_claude(model, "HOOK-MAIN: run a subagent");
  CAF_CHECK(r.success());
  auto order = c.started();
  CAF_REQUIRE_EQUAL(order.size(), 1u);
  // Given back by the refusal (PostToolUseFailure), not by the session's
  // end.
  CAF_CHECK_EQUAL(c.release_reason(order[0]), "error");
  CAF_CHECK_EQUAL(count(model_events(model), "request", "sub1"), 0);
  CAF_CHECK(c.nothing_held());
}
