// The control plane's vocabulary: a request (src/control/request.hpp) as it
// travels from a bridge to the control plane, and the events the control
// plane sends its subscribers.
#pragma once

#include <cstdint>
#include <string>

#include <caf/meta/type_name.hpp>

#include "messages/type_ids.hpp"
#include "src/control/request.hpp"

namespace taskforce {

/// A change the control plane made durable, for subscribers: `bg.changed`
/// (a task changed state) or `monitor.changed` (a monitor did).
struct control_event {
  /// The event's protocol name.
  std::string kind;
  /// The event's fields as one JSON object (the task or monitor as
  /// `bg.status` / `monitor.status` show it, with `from` and `to`), built
  /// once by the control plane for every subscriber.
  std::string fields;
};

/// The control plane's answer to one request: the answer's fields, or a
/// refusal with the protocol's error code and a message for people.
struct control_answer {
  bool ok = true;
  /// The answer's fields as one JSON object text (when ok).
  std::string fields = "{}";
  /// The error code (when not ok): bad_request, not_found, invalid_state,
  /// token_used, token_expired, conflict, limit, unavailable.
  std::string code;
  /// What is wrong, naming the task or monitor (when not ok).
  std::string message;
};

/// A control plane's validation helper is done with one completion.
struct validation_done {
  /// Which completion (the control plane numbers them).
  uint64_t ticket = 0;
  /// Every command succeeded.
  bool passed = false;
  /// Why not ("validation 1 of 2 (`make test`) failed: exit 2").
  std::string reason;
  /// The end of the failed command's output.
  std::string tail;
  /// Each command's result as a JSON array text.
  std::string results;
};

// -- inspection
// ----------------------------------------------------------------

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, control_answer& x) {
  return f(caf::meta::type_name("control_answer"), x.ok, x.fields, x.code,
           x.message);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, validation_done& x) {
  return f(caf::meta::type_name("validation_done"), x.ticket, x.passed,
           x.reason, x.tail, x.results);
}

template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, control_event& x) {
  return f(caf::meta::type_name("control_event"), x.kind, x.fields);
}

namespace control {

// Found by argument-dependent lookup, so it lives in the request's namespace.
template<class Inspector>
typename Inspector::result_type inspect(Inspector& f, control_request& x) {
  return f(caf::meta::type_name("control_request"), x.op, x.title, x.agent,
           x.prompt, x.session, x.roots, x.locks, x.deps, x.validations, x.task,
           x.token, x.child_session, x.path, x.status, x.text, x.files,
           x.sessions, x.monitor, x.command, x.cwd, x.wake_pattern,
           x.timeout_ms, x.offset, x.max_bytes);
}

} // namespace control

} // namespace taskforce
