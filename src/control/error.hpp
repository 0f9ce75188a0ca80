// How a call into the control plane of managed background work fails: one
// exception type carrying the protocol's error code and a plain message that
// names the task and what is wrong.
#pragma once

#include <stdexcept>
#include <string>

namespace taskforce::control {

/// Why a control-plane call was refused; `to_string` gives the code the
/// protocol answers with.
enum class control_errc {
  /// An invalid contract or field (`bad_request`).
  bad_request,
  /// No such task, token or session (`not_found`).
  not_found,
  /// The task's state does not allow the call (`invalid_state`): "cannot
  /// continue yet", "already being processed", "is cancelled", ….
  invalid_state,
  /// A one-use token that was used already (`token_used`).
  token_used,
  /// A token past its expiry (`token_expired`).
  token_expired,
  /// A root or lock another live holder has (`conflict`).
  conflict,
  /// A configured limit is reached (`limit`), e.g. the monitor limit.
  limit,
  /// The feature or the thing asked for is not available (`unavailable`).
  unavailable,
};

/// The protocol's code: "bad_request", "not_found", "invalid_state",
/// "token_used", "token_expired", "conflict", "limit", "unavailable".
inline const char* to_string(control_errc x) {
  switch (x) {
    case control_errc::bad_request: return "bad_request";
    case control_errc::not_found: return "not_found";
    case control_errc::invalid_state: return "invalid_state";
    case control_errc::token_used: return "token_used";
    case control_errc::token_expired: return "token_expired";
    case control_errc::conflict: return "conflict";
    case control_errc::limit: return "limit";
    case control_errc::unavailable: return "unavailable";
  }
  return "unknown";
}

/// A refused control-plane call: `code()` for the protocol, `what()` for a
/// person. Nothing of a refused call is written.
class control_error : public std::runtime_error {
 public:
  control_error(control_errc code, const std::string& what)
    : std::runtime_error(what), code_(code) {}

  /// Why it was refused.
  control_errc code() const noexcept {
    return code_;
  }

 private:
  control_errc code_;
};

} // namespace taskforce::control
