#define CAF_SUITE unit.claude_hook
#include <caf/test/unit_test.hpp>

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "src/hook/claude_code.hpp"

using namespace taskforce::hook;
using json = nlohmann::json;
using kind = claude_step::kind;

namespace {

/// The fields every Claude Code event carries.
json base(const char* event) {
  return {{"session_id", "121f0c3e-sess"},
          {"transcript_path", "/root/.claude/projects/p/121f0c3e-sess.jsonl"},
          {"cwd", "/work/project"},
          {"prompt_id", "f026aa"},
          {"permission_mode", "acceptEdits"},
          {"hook_event_name", event}};
}

json pre_tool_use(const char* id, json input) {
  auto e = base("PreToolUse");
  e["tool_name"] = "Agent";
  e["tool_input"] = std::move(input);
  e["tool_use_id"] = id;
  return e;
}

json request_of(const claude_step& s) {
  return json::parse(s.request);
}

/// One field of the request a step makes.
std::string field(const claude_step& s, const char* key) {
  auto r = request_of(s);
  return r.contains(key) ? r[key].get<std::string>() : "(none)";
}

std::string refusal(const std::string& text) {
  try {
    plan_claude_event(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

} // namespace

CAF_TEST(an agent call without run_in_background asks for a background permit) {
  auto s = plan_claude_event(
    pre_tool_use("toolu_sub1", {{"description", "sub 1"},
                                {"prompt", "do it"},
                                {"subagent_type", "general-purpose"}})
      .dump());
  CAF_CHECK(s.what == kind::admit);
  auto r = request_of(s);
  CAF_CHECK_EQUAL(r["op"], "acquire");
  CAF_CHECK_EQUAL(r["holder"], "toolu_sub1");
  CAF_CHECK_EQUAL(r["session"], "121f0c3e-sess");
  CAF_CHECK_EQUAL(r["kind"], "background");
  CAF_CHECK_EQUAL(r["tool"], "Agent");
  CAF_CHECK_EQUAL(r["detach"], true);
  CAF_CHECK(!r.contains("parent"));
}

CAF_TEST(run_in_background false asks for a foreground permit) {
  auto s = plan_claude_event(
    pre_tool_use(
      "toolu_sub2",
      {{"description", "sub 2"}, {"prompt", "x"}, {"run_in_background", false}})
      .dump());
  CAF_CHECK_EQUAL(field(s, "kind"), "foreground");
  s = plan_claude_event(
    pre_tool_use("toolu_sub3", {{"prompt", "x"}, {"run_in_background", true}})
      .dump());
  CAF_CHECK_EQUAL(field(s, "kind"), "background");
}

CAF_TEST(a call made inside a subagent names that agent as its parent) {
  auto e = pre_tool_use("toolu_nested", {{"prompt", "x"}});
  e["agent_id"] = "a5b9c0";
  e["agent_type"] = "general-purpose";
  auto s = plan_claude_event(e.dump());
  CAF_CHECK(s.what == kind::admit);
  CAF_CHECK_EQUAL(field(s, "parent"), "a5b9c0");
  // The session stays the main one: the parent is found in it.
  CAF_CHECK_EQUAL(field(s, "session"), "121f0c3e-sess");
  CAF_CHECK_EQUAL(field(s, "kind"), "background");
  // A foreground nested call is one its caller waits for: it may borrow.
  e["tool_input"]["run_in_background"] = false;
  CAF_CHECK_EQUAL(field(plan_claude_event(e.dump()), "kind"), "foreground");
}

CAF_TEST(a launched background agent binds its permit to the agent) {
  auto e = base("PostToolUse");
  e["tool_name"] = "Agent";
  e["tool_use_id"] = "toolu_sub1";
  e["tool_response"]
    = {{"isAsync", true},
       {"status", "async_launched"},
       {"agentId", "a3fd1e"},
       {"description", "sub 1"},
       {"outputFile", "/tmp/claude-0/p/s/tasks/a3fd1e.output"}};
  e["duration_ms"] = 45;
  auto s = plan_claude_event(e.dump());
  CAF_CHECK(s.what == kind::tell);
  auto r = request_of(s);
  CAF_CHECK_EQUAL(r["op"], "bind");
  CAF_CHECK_EQUAL(r["holder"], "toolu_sub1");
  CAF_CHECK_EQUAL(r["child_session"], "a3fd1e");
}

CAF_TEST(a completed foreground call releases its permit) {
  auto e = base("PostToolUse");
  e["tool_name"] = "Agent";
  e["tool_use_id"] = "toolu_sub2";
  e["tool_response"]
    = {{"status", "completed"},
       {"agentId", "ae34d6"},
       {"content", json::array({{{"type", "text"}, {"text", "SUB 2: done"}}})},
       {"totalDurationMs", 5481}};
  auto r = request_of(plan_claude_event(e.dump()));
  CAF_CHECK_EQUAL(r["op"], "release");
  CAF_CHECK_EQUAL(r["holder"], "toolu_sub2");
  CAF_CHECK_EQUAL(r["reason"], "completed");
}

CAF_TEST(a failed call releases with error and an interrupted one aborted) {
  auto e = base("PostToolUseFailure");
  e["tool_name"] = "Agent";
  e["tool_use_id"] = "toolu_sub2";
  e["error"] = "Agent terminated early due to an API error";
  e["is_interrupt"] = false;
  auto r = request_of(plan_claude_event(e.dump()));
  CAF_CHECK_EQUAL(r["op"], "release");
  CAF_CHECK_EQUAL(r["reason"], "error");
  e["is_interrupt"] = true;
  CAF_CHECK_EQUAL(field(plan_claude_event(e.dump()), "reason"), "aborted");
}

CAF_TEST(a subagent that stops or fails makes its agent idle) {
  for (auto name : {"SubagentStop", "StopFailure"}) {
    auto e = base(name);
    e["agent_id"] = "ac20ff";
    e["agent_type"] = "general-purpose";
    auto s = plan_claude_event(e.dump());
    CAF_CHECK(s.what == kind::tell);
    auto r = request_of(s);
    CAF_CHECK_EQUAL(r["op"], "idle");
    CAF_CHECK_EQUAL(r["session"], "ac20ff");
  }
  // The main agent's own StopFailure concerns no permit.
  CAF_CHECK(plan_claude_event(base("StopFailure").dump()).what
            == kind::nothing);
}

CAF_TEST(session end ends the session) {
  auto e = base("SessionEnd");
  e["reason"] = "other";
  auto r = request_of(plan_claude_event(e.dump()));
  CAF_CHECK_EQUAL(r["op"], "end");
  CAF_CHECK_EQUAL(r["session"], "121f0c3e-sess");
}

CAF_TEST(an agent that starts is tied to its call for its nested calls) {
  auto e = base("SubagentStart");
  e["agent_id"] = "ae34d611";
  e["agent_type"] = "general-purpose";
  auto s = plan_claude_event(e.dump());
  // Told, never waited for: the call was admitted at PreToolUse.
  CAF_CHECK(s.what == kind::tell);
  auto r = request_of(s);
  CAF_CHECK_EQUAL(r["op"], "child_started");
  CAF_CHECK_EQUAL(r["session"], "121f0c3e-sess");
  CAF_CHECK_EQUAL(r["child_session"], "ae34d611");
  e.erase("agent_id");
  CAF_CHECK_EQUAL(refusal(e.dump()),
                  "SubagentStart event without \"agent_id\"");
}

CAF_TEST(a workflow subagent waits at SubagentStart) {
  auto e = base("SubagentStart");
  e["agent_id"] = "wf0001";
  e["agent_type"] = "workflow-subagent";
  auto s = plan_claude_event(e.dump());
  CAF_CHECK(s.what == kind::delay);
  auto r = request_of(s);
  CAF_CHECK_EQUAL(r["op"], "acquire");
  CAF_CHECK_EQUAL(r["kind"], "background");
  CAF_CHECK_EQUAL(r["child_session"], "wf0001");
  CAF_CHECK_EQUAL(r["detach"], true);
  CAF_CHECK(!r.contains("parent"));
}

CAF_TEST(other events ask nothing) {
  for (auto name : {"SessionStart", "UserPromptSubmit", "Stop", "PostToolBatch",
                    "Notification"})
    CAF_CHECK(plan_claude_event(base(name).dump()).what == kind::nothing);
}

CAF_TEST(input that is no hook event is refused with the reason) {
  CAF_CHECK(refusal("").find("not JSON") != std::string::npos);
  CAF_CHECK(refusal("[1,2]").find("not a JSON object") != std::string::npos);
  CAF_CHECK(refusal(R"({"session_id":"s"})").find("hook_event_name")
            != std::string::npos);
  auto e = pre_tool_use("toolu_x", {{"prompt", "x"}});
  e.erase("tool_use_id");
  CAF_CHECK_EQUAL(refusal(e.dump()),
                  "PreToolUse event without \"tool_use_id\"");
}

CAF_TEST(the deny decision is the shape Claude Code reads) {
  auto out = json::parse(claude_deny("taskforce: no slot"));
  CAF_CHECK_EQUAL(out["hookSpecificOutput"]["hookEventName"], "PreToolUse");
  CAF_CHECK_EQUAL(out["hookSpecificOutput"]["permissionDecision"], "deny");
  CAF_CHECK_EQUAL(out["hookSpecificOutput"]["permissionDecisionReason"],
                  "taskforce: no slot");
}
