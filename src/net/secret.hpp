// Secrets shared through files: random tokens, comparing them without
// leaking how much matched, and files only their owner may read.
//
// A local server (the driver's control endpoint, `taskforce serve`) writes
// its address and token to a file of mode 0600; whoever can read the file
// may connect. The file is created with that mode (never world-readable for
// an instant) and replaced atomically, so a reader sees the old file or the
// new one, never half of one.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace taskforce::net {

/// A fresh token: 256 bits from /dev/urandom as 64 lowercase hex digits.
/// Throws std::system_error when the random source cannot be read.
std::string new_token();

/// Whether `given` equals `expected`, in time that depends only on their
/// lengths (not on where they first differ).
bool same_token(std::string_view given, std::string_view expected);

/// Writes `text` to `path` atomically, readable and writable by its owner
/// only (0600): a temporary file created with that mode beside it, then
/// renamed over `path`. Throws std::system_error naming the path.
void write_private_file(const std::filesystem::path& path,
                        const std::string& text);

/// What makes `path` unfit to hold a secret, or "" when nothing: a file
/// readable or writable by its group or by others names its mode, e.g.
/// "…/endpoint.json is open to others (mode 0644); make it 0600 (…)".
/// A missing file gives "".
std::string private_file_problem(const std::filesystem::path& path);

} // namespace taskforce::net
