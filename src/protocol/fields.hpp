// The fields of a protocol request: how a required or optional field is read
// and how an error message quotes what the client sent. Shared by every
// operation (the pool's and the control plane's), so they all refuse a bad
// field in the same words.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace taskforce::protocol {

/// An error message quotes at most this many bytes of the client's text
/// (a value, a name, the token the parser stopped at).
constexpr size_t max_quoted_bytes = 64;

/// A field that breaks the protocol's rules; its text is the error message
/// (answered as bad_request).
struct bad_field : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// `text` as is when short, else its head, "…" and its full size.
std::string excerpt(const std::string& text);

/// A client's text for an error message: between `quote`s, and cut when
/// long (the size follows the closing quote).
std::string quote_text(const std::string& text, char quote = '"');

/// A client's value for an error message: its JSON, cut when long.
std::string quote_value(const nlohmann::json& value);

/// A required, non-empty string field.
std::string need_string(const nlohmann::json& req, const std::string& key);

/// An optional string field: absent or null gives "", present must be a
/// non-empty string.
std::string opt_string(const nlohmann::json& req, const std::string& key);

/// An optional string field that may be empty: absent or null gives "".
std::string opt_text(const nlohmann::json& req, const std::string& key);

/// An optional list of non-empty strings: absent or null gives {}.
std::vector<std::string> opt_strings(const nlohmann::json& req,
                                     const std::string& key);

/// An optional boolean field: absent or null gives false.
bool opt_flag(const nlohmann::json& req, const std::string& key);

/// An optional non-negative integer (a number with no fraction, at most
/// 2^53-1): absent or null gives `fallback`.
uint64_t opt_count(const nlohmann::json& req, const std::string& key,
                   uint64_t fallback);

} // namespace taskforce::protocol
