#include "src/control/bg_state.hpp"

#include "src/text/enum_name.hpp"

namespace taskforce::control {

const char* to_string(bg_state x) {
  switch (x) {
    case bg_state::queued: return "queued";
    case bg_state::ready: return "ready";
    case bg_state::starting: return "starting";
    case bg_state::running: return "running";
    case bg_state::blocked: return "blocked";
    case bg_state::checking: return "checking";
    case bg_state::done: return "done";
    case bg_state::failed: return "failed";
    case bg_state::cancelled: return "cancelled";
    case bg_state::interrupted: return "interrupted";
  }
  return "unknown";
}

bool from_string(std::string_view name, bg_state& out) {
  return from_name(name,
                   {bg_state::queued, bg_state::ready, bg_state::starting,
                    bg_state::running, bg_state::blocked, bg_state::checking,
                    bg_state::done, bg_state::failed, bg_state::cancelled,
                    bg_state::interrupted},
                   out);
}

bool allowed(bg_state from, bg_state to) {
  using s = bg_state;
  if (from == to || is_final(from))
    return false;
  if (to == s::cancelled)
    return true;
  switch (from) {
    case s::queued: return to == s::ready || to == s::blocked;
    case s::ready:
      return to == s::starting || to == s::running || to == s::queued
             || to == s::interrupted;
    case s::starting: return to == s::running || to == s::interrupted;
    case s::running:
      // Straight to done: a completion without validations.
      return to == s::checking || to == s::blocked || to == s::done
             || to == s::interrupted || to == s::failed;
    case s::blocked:
      // ready/queued: a continuation, or a dependency no longer failed.
      return to == s::ready || to == s::queued || to == s::failed;
    case s::checking:
      return to == s::done || to == s::running || to == s::failed;
    case s::failed: return to == s::ready || to == s::queued;
    case s::interrupted:
      return to == s::ready || to == s::queued || to == s::failed;
    case s::done:
    case s::cancelled: return false;
  }
  return false;
}

bool is_final(bg_state x) {
  return x == bg_state::done || x == bg_state::cancelled;
}

bool holds_slot(bg_state x, bool dispatched) {
  switch (x) {
    case bg_state::ready:
    case bg_state::starting:
    case bg_state::running:
    case bg_state::checking: return true;
    case bg_state::blocked: return dispatched;
    default: return false;
  }
}

bool may_write_in(bg_state x) {
  return x == bg_state::running;
}

} // namespace taskforce::control
