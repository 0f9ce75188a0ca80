// Reading JSON from text nobody vouches for (a protocol line, a config
// file) without the JSON library's hazards: the document is built from the
// parser's events, never nested deeper than a bound (dumping, copying or
// comparing a 100,000-deep value recurses per level and overflows the
// stack), nothing throws (a number beyond a double's range, 1e400, is a
// problem like any other), and whatever stopped the reading says which keys
// were being read.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace taskforce {

/// How to read.
struct json_read_options {
  /// Containers nest at most this deep (the outermost counts as one).
  size_t max_depth = 64;
  /// A deeper value is left out (and noted in `skipped`) instead of
  /// stopping the reading.
  bool skip_too_deep = false;
  /// An object that names a key twice stops the reading (else the last
  /// value wins).
  bool refuse_duplicate_keys = false;
  /// Sees each floating-point number as written, with the keys whose value
  /// it is part of, and may change the value stored.
  std::function<void(double& value, const std::string& text,
                     const std::vector<std::string>& path)>
    on_float;
};

/// What stopped a reading, or what was left out.
struct json_read_result {
  /// Why the reading stopped.
  enum class problem {
    /// It did not: the document is whole (but for `skipped`).
    none,
    /// Not JSON; `detail` says where and why.
    syntax,
    /// A number beyond a double's range; `token` is the number as written.
    out_of_range,
    /// Nested deeper than max_depth.
    too_deep,
    /// A key named twice in one object; `token` is the key.
    duplicate_key,
  };
  problem kind = problem::none;
  /// The keys whose value was being read when it stopped (outermost first).
  std::vector<std::string> path;
  /// Whether it stopped inside that value (in an array or object there),
  /// not at the value itself.
  bool inside = false;
  /// out_of_range: the number; duplicate_key: the key.
  std::string token;
  /// syntax, out_of_range: the parser's description ("parse error at line
  /// 1, column 4: …"), without the library's "[json.exception…] " prefix.
  std::string detail;
  /// skip_too_deep: where the first value left out was (its keys).
  std::vector<std::string> skipped;
  /// skip_too_deep: whether any value was left out.
  bool skipped_any = false;

  /// Whether the document was read.
  bool ok() const {
    return kind == problem::none;
  }
};

/// Reads [first, last) into `out` (null when the reading stopped).
json_read_result read_json(const char* first, const char* last,
                           nlohmann::json& out,
                           const json_read_options& opts = {});

} // namespace taskforce
