// Where a running `taskforce serve` can be reached, and a client for it.
//
// A server that listens on TCP (or publishes its pool) writes an endpoint
// file, by default `.taskforce/endpoint.json` of the repository, readable by
// its owner only (0600), and removes it when it stops:
//
//   {"address": "127.0.0.1:7411", "publish": "127.0.0.1:7412",
//    "token": "<64 hex digits>", "pid": 4711}
//
// `address` is the JSON-lines protocol over TCP (absent when the server does
// not listen), `publish` the pool offered to other taskforce processes
// (absent when it publishes nothing). Every TCP connection first sends
// `{"id":…,"op":"hello","token":"…"}`; anything else is answered
// `unauthorized` and the connection closed.
//
// The client below is for commands that talk to a running server and work
// on the ledger directly when none runs: every failure is an endpoint_error
// whose code says which of the two cases it is.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

namespace taskforce::net {

/// What an endpoint file says.
struct endpoint_info {
  /// "HOST:PORT" of the protocol over TCP; empty when the server does not
  /// listen.
  std::string address;
  /// "HOST:PORT" where the pool is published; empty when it is not.
  std::string publish;
  /// The token every connection presents.
  std::string token;
  /// The server's process id.
  int64_t pid = 0;
};

/// `<repo>/.taskforce/endpoint.json`.
std::filesystem::path endpoint_file(const std::filesystem::path& repo);

/// Writes `info` to `path` atomically, mode 0600 from its creation on.
/// Throws std::system_error naming the path.
void write_endpoint_file(const std::filesystem::path& path,
                         const endpoint_info& info);

/// Why talking to a server failed.
enum class endpoint_errc {
  /// No server runs: no endpoint file, one whose process is gone, one
  /// without a TCP address, or nothing listens at its address. The caller
  /// works on the ledger directly.
  no_server = 1,
  /// The file cannot be trusted or read: readable by others, not an
  /// endpoint file, or unreadable. Nothing was sent.
  bad_file,
  /// The server refused the token (the file belongs to another server).
  unauthorized,
  /// The server did not answer within the time given.
  timeout,
  /// The connection broke or the server's answer was not a protocol line.
  broken,
};

/// A failure of the endpoint client; what() is a sentence for the user.
class endpoint_error : public std::runtime_error {
 public:
  endpoint_error(endpoint_errc code, const std::string& message);

  /// Which failure this is.
  endpoint_errc code() const noexcept {
    return code_;
  }

 private:
  endpoint_errc code_;
};

/// Reads an endpoint file. Throws endpoint_error: no_server when it is
/// missing, bad_file when it is readable by its group or others, not an
/// endpoint file, or unreadable.
endpoint_info read_endpoint_file(const std::filesystem::path& path);

/// Whether the server `info` describes still runs: its process exists and,
/// when it listens, that process of this user accepts connections at its
/// address within `timeout`. (A stale file outlives a killed server.)
bool server_running(const endpoint_info& info,
                    std::chrono::milliseconds timeout);

/// An authenticated connection to a running server (blocking; for
/// commands, never for actors).
class endpoint_client {
 public:
  /// Reads `file`, connects to its address and says hello with its token,
  /// all within `timeout`. Before it sends anything it checks that the
  /// socket listening there is one of the process the file names, run by
  /// this user (net/tcp_owner.hpp): otherwise no_server (a file left by a
  /// server that is gone), or broken when that cannot be told. Throws
  /// endpoint_error.
  endpoint_client(const std::filesystem::path& file,
                  std::chrono::milliseconds timeout);
  ~endpoint_client();
  endpoint_client(const endpoint_client&) = delete;
  endpoint_client& operator=(const endpoint_client&) = delete;

  /// The server's answer to hello (one JSON line: version, protocol,
  /// config).
  const std::string& hello() const;

  /// Sends one request (a JSON object on one line, with its "id"; the
  /// newline is added) and returns the next response line (without its
  /// newline), skipping events, within `timeout`. Throws endpoint_error
  /// (timeout, broken).
  std::string call(const std::string& request_line,
                   std::chrono::milliseconds timeout);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Connects to the server of `file`, sends `request_line` and returns its
/// response line; `timeout` bounds the whole exchange. Throws
/// endpoint_error (no_server: work on the ledger directly).
std::string request_once(const std::filesystem::path& file,
                         const std::string& request_line,
                         std::chrono::milliseconds timeout);

} // namespace taskforce::net
