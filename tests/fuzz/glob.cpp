// libFuzzer target: path normalisation, glob compilation, matching and
// intersection. Input: pattern A, pattern B and a path, one per line.
// Checked: intersection is symmetric, and a path matching both patterns
// proves that they intersect.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>

#include "src/scope/glob.hpp"
#include "src/scope/path.hpp"

namespace {

std::optional<taskforce::scope::glob> compile(const std::string& raw) {
  auto normal = taskforce::scope::normalize_path(raw);
  if (!normal.error.empty())
    return std::nullopt;
  try {
    return taskforce::scope::glob{normal.path};
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto first = text.find('\n');
  auto second = first == std::string::npos ? first : text.find('\n', first + 1);
  if (second == std::string::npos)
    return 0;
  auto a = compile(text.substr(0, first));
  auto b = compile(text.substr(first + 1, second - first - 1));
  auto path = text.substr(second + 1);
  if (!a || !b)
    return 0;
  bool ab = intersects(*a, *b);
  if (ab != intersects(*b, *a))
    std::abort();
  if (a->matches(path) && b->matches(path) && !ab)
    std::abort();
  return 0;
}
