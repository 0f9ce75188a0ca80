// Errors that taskforce's actors answer with. Each code maps one-to-one onto
// the protocol's `error.code` string (see to_string).
#pragma once

#include <cstdint>
#include <string>

#include <caf/error.hpp>
#include <caf/message.hpp>

namespace taskforce {

/// Error codes of taskforce; never 0, which CAF reserves for "no error".
enum class errc : uint8_t {
  /// A request is malformed: a missing or mistyped field, an unknown op.
  bad_request = 1,
  /// A queued acquire waited `queueTimeoutMs` without being granted.
  queue_timeout,
  /// No permit is free and the request may not queue (adopt, nested).
  pool_full,
  /// The holder name is already held or queued somewhere on this server.
  duplicate_holder,
  /// A queued acquire was cancelled by release, end or disconnect.
  cancelled,
  /// The server is stopping; nothing new is admitted.
  shutting_down,
};

/// The protocol's name of an error code, e.g. "queue_timeout".
inline const char* to_string(errc x) {
  switch (x) {
    case errc::bad_request: return "bad_request";
    case errc::queue_timeout: return "queue_timeout";
    case errc::pool_full: return "pool_full";
    case errc::duplicate_holder: return "duplicate_holder";
    case errc::cancelled: return "cancelled";
    case errc::shutting_down: return "shutting_down";
  }
  return "unknown";
}

/// The error category name that CAF carries over the wire.
constexpr const char* errc_category = "taskforce";

} // namespace taskforce

CAF_ERROR_CODE_ENUM(taskforce::errc, "taskforce")
