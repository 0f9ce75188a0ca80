#include "src/run/outcome.hpp"
#include "src/text/enum_name.hpp"

#include <array>

namespace taskforce::run {

namespace {

constexpr std::array<attempt_end, 5> all_attempt_ends{
  attempt_end::done,        attempt_end::blocked,    attempt_end::failed,
  attempt_end::interrupted, attempt_end::base_moved,
};

constexpr std::array<merge_end, 9> all_merge_ends{
  merge_end::merged,   merge_end::empty,      merge_end::conflict,
  merge_end::error,    merge_end::not_merged, merge_end::gate_failed,
  merge_end::prepared, merge_end::stale,      merge_end::base_moved,
};

} // namespace

const char* to_string(attempt_end x) {
  switch (x) {
    case attempt_end::done: return "done";
    case attempt_end::blocked: return "blocked";
    case attempt_end::failed: return "failed";
    case attempt_end::interrupted: return "interrupted";
    case attempt_end::base_moved: return "base_moved";
  }
  return "unknown";
}

const char* to_string(merge_end x) {
  switch (x) {
    case merge_end::merged: return "merged";
    case merge_end::empty: return "empty";
    case merge_end::conflict: return "conflict";
    case merge_end::error: return "error";
    case merge_end::not_merged: return "not_merged";
    case merge_end::gate_failed: return "gate_failed";
    case merge_end::prepared: return "prepared";
    case merge_end::stale: return "stale";
    case merge_end::base_moved: return "base_moved";
  }
  return "unknown";
}

bool from_string(std::string_view name, attempt_end& out) {
  return from_name(name, all_attempt_ends, out);
}

bool from_string(std::string_view name, merge_end& out) {
  return from_name(name, all_merge_ends, out);
}

} // namespace taskforce::run
