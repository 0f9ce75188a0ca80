// Converting configured durations (milliseconds as 64-bit integers) into the
// clock types that timers, deadlines and poll() use, saturating instead of
// overflowing.
//
// A config or task file may give any safe integer (up to 2^53-1 ms), and
// multiplying that by 10^6 for nanoseconds, or adding it to `now`, overflows
// int64: a limit of "practically never" would wrap into "at once". Every
// conversion from a millisecond count goes through these functions.
#pragma once

#include <chrono>
#include <climits>
#include <cstdint>
#include <limits>

namespace taskforce {

/// The largest safe integer (2^53-1): the longest time limit, in
/// milliseconds, a config file, task file or option may give.
constexpr int64_t max_safe_integer = (int64_t{1} << 53) - 1;

/// The digits of max_safe_integer.
constexpr size_t max_safe_digits = 16;

/// `ms` milliseconds as nanoseconds (the unit of caf::timespan and of the
/// steady clock), at most the largest representable span; negative gives 0.
constexpr std::chrono::nanoseconds saturating_ms(int64_t ms) noexcept {
  using ns = std::chrono::nanoseconds;
  constexpr int64_t max_ms = std::numeric_limits<ns::rep>::max() / 1'000'000;
  if (ms <= 0)
    return ns{0};
  if (ms >= max_ms)
    return ns::max();
  return ns{ms * 1'000'000};
}

/// `from + span`, at most the clock's last time point (never wraps into the
/// past); a negative span counts as zero.
template<class Clock>
typename Clock::time_point
saturating_deadline(typename Clock::time_point from,
                    std::chrono::nanoseconds span) noexcept {
  using tp = typename Clock::time_point;
  if (span <= std::chrono::nanoseconds{0})
    return from;
  auto room = tp::max() - from;
  if (span >= room)
    return tp::max();
  return from + std::chrono::duration_cast<typename tp::duration>(span);
}

/// `from_ms + span_ms` on a millisecond clock, at most INT64_MAX (a deadline
/// no clock reaches); a negative span counts as zero.
constexpr int64_t saturating_deadline_ms(int64_t from_ms,
                                         int64_t span_ms) noexcept {
  if (span_ms <= 0)
    return from_ms;
  if (from_ms > std::numeric_limits<int64_t>::max() - span_ms)
    return std::numeric_limits<int64_t>::max();
  return from_ms + span_ms;
}

/// A remaining span as poll()'s timeout argument: whole milliseconds rounded
/// up (so a deadline is never woken early), at most INT_MAX, 0 when due.
constexpr int poll_timeout_ms(std::chrono::nanoseconds remaining) noexcept {
  if (remaining <= std::chrono::nanoseconds{0})
    return 0;
  auto ms = remaining.count() / 1'000'000
            + (remaining.count() % 1'000'000 != 0 ? 1 : 0);
  return ms >= INT_MAX ? INT_MAX : static_cast<int>(ms);
}

} // namespace taskforce
