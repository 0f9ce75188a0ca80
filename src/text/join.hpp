// Lists in messages: "a, b, c".
#pragma once

#include <string>
#include <vector>

namespace taskforce {

/// The items of `xs` with `sep` between them.
inline std::string join(const std::vector<std::string>& xs,
                        const char* sep = ", ") {
  std::string out;
  for (auto& x : xs) {
    if (!out.empty())
      out += sep;
    out += x;
  }
  return out;
}

} // namespace taskforce
