#include "src/hook/claude_code.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "src/text/json_reader.hpp"

namespace taskforce::hook {

namespace {

using json = nlohmann::json;
using step = claude_step;

/// The string field `key` of `event`, or "" when it is absent or no string.
std::string text_of(const json& event, const char* key) {
  auto i = event.find(key);
  return i != event.end() && i->is_string() ? i->get<std::string>()
                                            : std::string{};
}

/// The string field `key` of `event`; throws when it is missing or empty.
std::string need(const json& event, const char* key, const std::string& name) {
  auto value = text_of(event, key);
  if (value.empty())
    throw std::invalid_argument(name + " event without \"" + key + "\"");
  return value;
}

step tell(const std::string& name, json request, std::string holder = {}) {
  request["id"] = 1;
  step s;
  s.what = step::kind::tell;
  s.request = request.dump();
  s.holder = std::move(holder);
  s.event = name;
  return s;
}

step pre_tool_use(const json& event, const std::string& name) {
  auto holder = need(event, "tool_use_id", name);
  json request{{"id", 1},
               {"op", "acquire"},
               {"session", need(event, "session_id", name)},
               {"holder", holder},
               {"kind", "background"},
               {"tool", need(event, "tool_name", name)},
               {"detach", true}};
  // Claude Code runs an agent in the background unless told otherwise.
  if (auto input = event.find("tool_input");
      input != event.end() && input->is_object())
    if (auto bg = input->find("run_in_background");
        bg != input->end() && bg->is_boolean() && !bg->get<bool>())
      request["kind"] = "foreground";
  if (auto caller = text_of(event, "agent_id"); !caller.empty())
    request["parent"] = caller;
  step s;
  s.what = step::kind::admit;
  s.request = request.dump();
  s.holder = holder;
  s.event = name;
  return s;
}

step post_tool_use(const json& event, const std::string& name) {
  auto holder = need(event, "tool_use_id", name);
  if (auto response = event.find("tool_response");
      response != event.end() && response->is_object()
      && response->value("status", json{}) == "async_launched") {
    // Launched, not finished: the permit stays until that agent stops.
    auto agent = response->find("agentId");
    if (agent != response->end() && agent->is_string()
        && !agent->get<std::string>().empty())
      return tell(name,
                  {{"op", "bind"},
                   {"holder", holder},
                   {"child_session", agent->get<std::string>()}},
                  holder);
  }
  return tell(name,
              {{"op", "release"}, {"holder", holder}, {"reason", "completed"}},
              holder);
}

step post_tool_use_failure(const json& event, const std::string& name) {
  auto holder = need(event, "tool_use_id", name);
  auto interrupted = event.value("is_interrupt", json{}) == true;
  return tell(name,
              {{"op", "release"},
               {"holder", holder},
               {"reason", interrupted ? "aborted" : "error"}},
              holder);
}

step subagent_start(const json& event, const std::string& name) {
  auto agent = need(event, "agent_id", name);
  // Agent-tool subagents were admitted at PreToolUse: tie the agent to its
  // permit, so its own nested calls find a parent to borrow from. Awaited
  // before the agent's first model request, so before any nested call.
  if (text_of(event, "agent_type") != "workflow-subagent")
    return tell(name, {{"op", "child_started"},
                       {"session", need(event, "session_id", name)},
                       {"child_session", agent}});
  // Only a Workflow's never passed PreToolUse.
  auto holder = "workflow:" + agent;
  json request{{"id", 1},
               {"op", "acquire"},
               {"session", need(event, "session_id", name)},
               {"holder", holder},
               {"kind", "background"},
               {"child_session", agent},
               {"detach", true}};
  step s;
  s.what = step::kind::delay;
  s.request = request.dump();
  s.holder = holder;
  s.event = name;
  return s;
}

} // namespace

claude_step plan_claude_event(std::string_view text) {
  json event;
  json_read_options o;
  o.skip_too_deep = true; // deep tool input is not ours to read
  if (auto r = read_json(text.data(), text.data() + text.size(), event, o);
      !r.ok())
    throw std::invalid_argument("the hook's input is not JSON: " + r.detail);
  if (!event.is_object())
    throw std::invalid_argument("the hook's input is not a JSON object");
  auto name = text_of(event, "hook_event_name");
  if (name.empty())
    throw std::invalid_argument(
      "the hook's input has no \"hook_event_name\" (not a Claude Code hook "
      "event)");
  if (name == "PreToolUse")
    return pre_tool_use(event, name);
  if (name == "PostToolUse")
    return post_tool_use(event, name);
  if (name == "PostToolUseFailure")
    return post_tool_use_failure(event, name);
  if (name == "SubagentStart")
    return subagent_start(event, name);
  if (name == "SubagentStop" || name == "StopFailure") {
    // A failed subagent gets StopFailure instead of SubagentStop; the main
    // agent's own (no agent_id) concerns no permit.
    auto agent = text_of(event, "agent_id");
    if (agent.empty())
      return {};
    return tell(name, {{"op", "idle"}, {"session", agent}});
  }
  if (name == "SessionEnd")
    return tell(name,
                {{"op", "end"}, {"session", need(event, "session_id", name)}});
  return {};
}

std::string claude_deny(const std::string& reason) {
  json out{{"hookSpecificOutput",
            {{"hookEventName", "PreToolUse"},
             {"permissionDecision", "deny"},
             {"permissionDecisionReason", reason}}}};
  return out.dump();
}

} // namespace taskforce::hook
