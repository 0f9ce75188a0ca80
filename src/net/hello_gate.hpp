// The first line of a TCP connection: `hello` with the server's token, or
// the connection is refused.
//
//   {"id":1,"op":"hello","token":"<64 hex digits>"}   → admitted; the line
//                                                        is then served as
//                                                        any hello
//   anything else (not JSON, another op, no token,    → {"id":1,"ok":false,
//   a wrong one)                                          "error":{"code":
//                                                         "unauthorized",…}}
//                                                        and the connection
//                                                        is closed
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace taskforce::net {

/// The longest first line read before it is judged; a longer one is
/// refused (a hello with its token is about a hundred bytes).
constexpr size_t max_hello_bytes = 64 * 1024;

/// What the gate decided about a first line.
struct hello_verdict {
  /// The line is a hello with the right token.
  bool admitted = false;
  /// When refused: the `unauthorized` response line (with its newline),
  /// echoing the request's id where one could be read.
  std::string refusal;
};

/// Judges the first line (without its newline) against `token`. `hint`
/// tells a refused client where the token is (the endpoint file's path).
hello_verdict check_hello(std::string_view line, std::string_view token,
                          const std::string& hint);

/// The `unauthorized` response line for a first line that is over
/// max_hello_bytes.
std::string hello_too_long(const std::string& hint);

/// The `unauthorized` response line for a connection that sent no whole
/// first line in the time it had.
std::string hello_too_slow(const std::string& hint);

} // namespace taskforce::net
