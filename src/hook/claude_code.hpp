// Claude Code's hook events mapped onto the pool protocol: which request
// one event makes, and what the hook prints back.
//
// Claude Code runs a new hook process per event, so every permit is a
// detached one, named after the call (`tool_use_id`) in the call's session
// (`session_id`), and given back by a later event:
//
//   PreToolUse (Agent/Task)    acquire; foreground when tool_input says
//                              run_in_background false, else background
//                              (the tool's default); denied when no permit
//                              comes in time
//   PostToolUse                async_launched: bind the permit to the
//                              launched agent (tool_response.agentId);
//                              otherwise (completed): release
//   PostToolUseFailure         release (error; aborted for an interrupt)
//   SubagentStop, StopFailure  idle of the agent (agent_id): its background
//                              permit is released
//   SubagentStart              an Agent subagent: child_started, which ties
//                              the agent to the session's oldest foreground
//                              permit not tied yet (the event names no
//                              call, and a foreground call's PostToolUse
//                              comes only at its end); a Workflow subagent
//                              (never seen by PreToolUse): acquire a
//                              background permit bound to the agent; it can
//                              only delay
//   SessionEnd                 end of the session: all of it is released
//
// A nested call (made by a subagent: the event carries the caller's
// agent_id) names that agent as its parent, which the server finds through
// the permit bound (background) or tied (foreground) to the agent. It takes
// a free permit at once, or, as a foreground call (the agent waits for it),
// borrows the agent's permit, or is denied; it never waits (a parent waiting
// on a child that waits on the parent's permit would deadlock).
#pragma once

#include <string>
#include <string_view>

namespace taskforce::hook {

/// What the hook does for one event.
struct claude_step {
  /// The kinds of step.
  enum class kind {
    /// Nothing to tell the server.
    nothing,
    /// Ask for a permit and wait; deny the call when none comes.
    admit,
    /// Ask for a permit and wait, but the call runs in any case (a Workflow
    /// subagent's SubagentStart cannot deny).
    delay,
    /// Tell the server (release, bind, child_started, idle, end); never
    /// starts a server
    /// (none running means nothing is held).
    tell,
  };
  kind what = kind::nothing;
  /// The protocol request, one JSON object (with "id").
  std::string request;
  /// The holder the request is about (for messages).
  std::string holder;
  /// The event's name, for messages.
  std::string event;
};

/// Maps one hook event (the JSON text Claude Code writes to the hook's
/// standard input). Throws std::invalid_argument naming what is wrong when
/// the text is not a hook event, or lacks a field the event needs.
claude_step plan_claude_event(std::string_view text);

/// What a PreToolUse hook prints to deny its call; `reason` is shown to the
/// model.
std::string claude_deny(const std::string& reason);

} // namespace taskforce::hook
