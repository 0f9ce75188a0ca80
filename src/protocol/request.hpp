// One protocol line decoded and checked: the request's id (as the JSON text
// to echo), its operation and its typed fields, or the bad_request message
// that answers it. Pure: no actor, no I/O; every front end (stdio, TCP, Unix
// socket) reads requests through it, so they refuse a bad line in the same
// words.
//
// What it guarantees (the protocol's "Transport"):
// - a line that is not JSON, not an object, or nests deeper than
//   max_nesting is refused without being built, with the id where one could
//   be read ("null" otherwise);
// - a floating-point id is echoed as sent, not as a double prints it;
// - an unknown op is refused with the nearest known name;
// - every field is checked by the shared readers (fields.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "messages/pool.hpp"
#include "src/control/request.hpp"

namespace taskforce::protocol {

/// The deepest JSON nesting a request may have, the request object itself
/// counted as one level; anything deeper is refused without being built.
constexpr size_t max_nesting = 64;

/// The protocol version: 2 adds the control plane's `bg.*` and `monitor.*`.
constexpr int version = 2;

/// The operations of a request.
enum class op_kind : uint8_t {
  hello,
  acquire,
  adopt,
  release,
  bind,
  /// A child session started for an unnamed call of a session.
  child_started,
  idle,
  end,
  status,
  subscribe,
  /// A `bg.*` or `monitor.*` operation: see `control`.
  control,
};

/// A request line after decoding. When `problem` is not empty the request
/// is refused with bad_request and that message; `op` and `control.op` are
/// still set when the operation itself was readable (a control operation is
/// answered `unavailable` by a server without a control plane first).
struct decoded {
  /// Nothing to answer: the line was blank.
  bool blank = false;
  /// The request's id as JSON text ("null" when it could not be read).
  std::string id = "null";
  /// What is wrong with the request; empty when it is well-formed.
  std::string problem;
  /// Whether the operation could be read (then `op` names it).
  bool known_op = false;
  op_kind op = op_kind::hello;
  /// Whether this is an acquire, which may be answered out of order, and
  /// the holder it asks for (read even when another field is bad).
  bool acquire = false;
  std::string holder;
  // -- the fields of each operation -------------------------------------------
  /// acquire (without its connection).
  acquire_request acquire_req;
  /// adopt (without its connection).
  adopt_request adopt_req;
  /// release: `holder` and `reason`; bind: `holder` and `child_session`.
  release_reason reason = release_reason::completed;
  std::string child_session;
  /// idle, end, child_started (with `child_session`).
  std::string session;
  /// A control plane operation.
  control::control_request control;
};

/// Decodes one line (without its newline; a trailing '\r' is dropped).
/// Never throws for anything a client sends.
decoded decode(const char* first, size_t size);

/// Decodes one line given as a string.
inline decoded decode(const std::string& line) {
  return decode(line.data(), line.size());
}

/// "unknown op …" with the nearest known name, else the known names.
std::string unknown_op_message(const std::string& op);

} // namespace taskforce::protocol
