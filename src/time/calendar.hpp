// Wall-clock times (milliseconds since the epoch, as the ledger keeps them)
// written as calendar text.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>

namespace taskforce {

/// `ms` in UTC, written with strftime's `format` (e.g. "%Y-%m-%dT%H:%M:%SZ").
inline std::string utc_text(int64_t ms, const char* format) {
  auto secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, format, &tm));
}

/// `ms` in the local time zone, written with strftime's `format`.
inline std::string local_text(int64_t ms, const char* format) {
  auto secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  localtime_r(&secs, &tm);
  char buf[64];
  return std::string(buf, std::strftime(buf, sizeof buf, format, &tm));
}

} // namespace taskforce
