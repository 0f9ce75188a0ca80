// Small string helpers for messages and case-insensitive names.
#pragma once

#include <string>
#include <string_view>

namespace taskforce {

/// `s` between two `mark`s, for messages: "name" or 'name'.
inline std::string in_quotes(std::string_view s, char mark = '"') {
  std::string out;
  out.reserve(s.size() + 2);
  out += mark;
  out += s;
  out += mark;
  return out;
}

/// `s` with ASCII letters in lower case (names and keys; other bytes,
/// UTF-8 included, stay as they are).
inline std::string lower(std::string_view s) {
  std::string out{s};
  for (auto& c : out)
    if (c >= 'A' && c <= 'Z')
      c = static_cast<char>(c - 'A' + 'a');
  return out;
}

} // namespace taskforce
