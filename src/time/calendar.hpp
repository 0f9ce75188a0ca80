// Wall-clock times (milliseconds since the epoch, as the ledger keeps them)
// written as calendar text.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

namespace taskforce {

/// `ms` broken down by `convert` (gmtime_r or localtime_r), written with
/// strftime's `format`.
inline std::string calendar_text(int64_t ms, const char* format,
                                 std::tm* (*convert)(const std::time_t*,
                                                     std::tm*)) {
  auto secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  convert(&secs, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, format, &tm));
}

/// `ms` in UTC, written with strftime's `format` (e.g. "%Y-%m-%dT%H:%M:%SZ").
inline std::string utc_text(int64_t ms, const char* format) {
  return calendar_text(ms, format, gmtime_r);
}

/// `ms` in the local time zone, written with strftime's `format`.
inline std::string local_text(int64_t ms, const char* format) {
  return calendar_text(ms, format, localtime_r);
}

} // namespace taskforce
