// Where a server binds: parsing `HOST:PORT` for `taskforce serve --listen`,
// `--publish` and `server.listen`, printing it, and saying why a bind fails.
#pragma once

#include <cstdint>
#include <string>

namespace taskforce {

/// Where a server binds.
struct listen_address {
  /// A name or IP address; loopback when the text gave none.
  std::string host = "127.0.0.1";
  /// 0 lets the system pick a free port.
  uint16_t port = 0;
};

/// The forms a listen address takes, for messages.
extern const char* const listen_address_forms;

/// Parses `HOST:PORT`, `[IPV6]:PORT`, `:PORT` or `PORT` (the last two bind
/// loopback). Throws std::invalid_argument saying what is wrong.
listen_address parse_listen_address(const std::string& text);

/// What is wrong with `text` as a listen address, or "" when nothing is.
std::string listen_address_problem(const std::string& text);

/// "HOST:PORT", an IPv6 host in brackets ("[::1]:7411").
std::string to_string(const listen_address& where);

/// Why binding `where` fails, in a few lowercase words ("address in use",
/// "cannot assign requested address"), found by trying it; "" when the
/// bind works now.
std::string bind_problem(const listen_address& where);

/// Binds `where` and listens (close-on-exec); the descriptor, or -1 with
/// `problem` saying why (as bind_problem does).
int listen_tcp(const listen_address& where, std::string& problem);

} // namespace taskforce
