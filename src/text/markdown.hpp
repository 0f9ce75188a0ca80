// Text put into prompts: trimmed, and quoted in fences nothing can close.
#pragma once

#include <algorithm>
#include <string>

namespace taskforce {

/// `s` without leading and trailing blanks and line ends.
inline std::string trimmed(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos)
    return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

/// A fence longer than any run of backticks in `text`, so quoted output
/// cannot close it early.
inline std::string fence_for(const std::string& text) {
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return std::string(std::max<size_t>(3, longest + 1), '`');
}

} // namespace taskforce
