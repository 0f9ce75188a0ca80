// The driver's control endpoint, as both sides see it: where a live driver
// listens (`.taskforce/driver.json`), and the one JSON line each way.
//
//   driver.json (mode 0600, written once the driver listens, removed when it
//   exits): {"socket": "/repo/.taskforce/driver.sock", "token": "<64 hex
//            digits>", "pid": 4711, "run": "20261201-202600-ab12"}
//   request:  {"token": "…", "verb": "approve|reject|answer|send|broadcast|
//              add", "run": "" | "<id>", "task": "…", "text": "…",
//              "file": "/abs/TASKS2.md"}
//   verdict:  {"outcome": "accepted|refused|failed|elsewhere|unauthorized",
//              "message": "…"}
//
// The endpoint is a Unix socket (mode 0600) in the repository's
// `.taskforce/`. Each end asks the kernel who the other is: the driver
// serves only connections of its own user, and a client sends nothing
// unless the process listening is the one driver.json names (its pid) and
// runs as the same user, so a file a killed driver left fools nobody.
// `elsewhere` (the request names another run) and `unauthorized` (a wrong
// token) both mean "no driver of this run answered".
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "src/run/steer_request.hpp"

namespace taskforce::run {

/// The longest request line the endpoint reads (texts included).
constexpr size_t max_control_line = 256 * 1024;

/// What driver.json says.
struct driver_info {
  /// The endpoint's socket (an absolute path).
  std::string socket;
  std::string token;
  int64_t pid = 0;
  std::string run_id;
};

/// `.taskforce/driver.json` of the repository at `root`.
std::filesystem::path driver_file(const std::filesystem::path& root);

/// `.taskforce/driver.sock` of the repository at `root`: where its driver
/// listens.
std::filesystem::path driver_socket(const std::filesystem::path& root);

/// Writes `info` to `path` atomically, readable by its owner only (0600).
/// Throws std::system_error when it cannot.
void write_driver_file(const std::filesystem::path& path,
                       const driver_info& info);

/// Reads a driver file; nothing when it is missing or not one (a file
/// naming no socket, as one of an older taskforce, is none).
std::optional<driver_info> read_driver_file(const std::filesystem::path& path);

/// A fresh random token (net::new_token: 64 hex digits from /dev/urandom).
std::string new_control_token();

/// A decoded request line.
struct control_request {
  std::string token;
  steer_request request;
};

/// The request line for `r` (with its trailing newline).
std::string encode_request(const control_request& r);

/// Decodes a request line; nothing, with `error` set, when it is not one.
std::optional<control_request> decode_request(std::string_view line,
                                              std::string& error);

/// How the endpoint answered.
enum class control_answer : uint8_t {
  accepted,
  refused,
  failed,
  /// The request names another run than the driver's.
  elsewhere,
  /// The token is wrong.
  unauthorized,
};

/// The verdict line (with its trailing newline).
std::string encode_verdict(control_answer answer, const std::string& message);

/// Decodes a verdict line; nothing when it is not one.
std::optional<std::pair<control_answer, std::string>>
decode_verdict(std::string_view line);

/// The lowercase name of a verb.
const char* to_string(steer_verb x);

} // namespace taskforce::run
