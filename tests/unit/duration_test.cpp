#define CAF_SUITE unit.duration
#include <caf/test/unit_test.hpp>

#include "src/time/duration.hpp"

using namespace taskforce;
using namespace std::chrono;

CAF_TEST(ordinary spans convert exactly) {
  CAF_CHECK_EQUAL(saturating_ms(0).count(), 0);
  CAF_CHECK_EQUAL(saturating_ms(1500).count(), 1'500'000'000);
  CAF_CHECK_EQUAL(saturating_ms(-7).count(), 0);
}

CAF_TEST(huge spans saturate instead of wrapping into the past) {
  // 9223372036855 ms is a safe integer whose nanoseconds overflow int64.
  CAF_CHECK(saturating_ms(9223372036855) == nanoseconds::max());
  CAF_CHECK(saturating_ms((int64_t{1} << 53) - 1) == nanoseconds::max());
  CAF_CHECK(saturating_ms(100'000'000'000'000) == nanoseconds::max());
  CAF_CHECK(saturating_ms(9223372036854) > saturating_ms(1));
}

CAF_TEST(deadlines never wrap) {
  auto now = steady_clock::now();
  auto far = saturating_deadline<steady_clock>(now, nanoseconds::max());
  CAF_CHECK(far == steady_clock::time_point::max());
  CAF_CHECK(far > now);
  auto soon = saturating_deadline<steady_clock>(now, milliseconds(5));
  CAF_CHECK(soon - now == milliseconds(5));
  CAF_CHECK(saturating_deadline<steady_clock>(now, nanoseconds{-1}) == now);
}

CAF_TEST(poll timeouts round up and stay within int) {
  CAF_CHECK_EQUAL(poll_timeout_ms(nanoseconds{0}), 0);
  CAF_CHECK_EQUAL(poll_timeout_ms(nanoseconds{-5}), 0);
  CAF_CHECK_EQUAL(poll_timeout_ms(nanoseconds{1}), 1);
  CAF_CHECK_EQUAL(poll_timeout_ms(milliseconds(250)), 250);
  CAF_CHECK_EQUAL(poll_timeout_ms(nanoseconds::max()), INT_MAX);
}

CAF_TEST(millisecond deadlines saturate at the end of the clock) {
  CAF_CHECK_EQUAL(saturating_deadline_ms(1000, 500), 1500);
  CAF_CHECK_EQUAL(saturating_deadline_ms(1000, -5), 1000);
  CAF_CHECK_EQUAL(saturating_deadline_ms(1000, INT64_MAX), INT64_MAX);
  CAF_CHECK_EQUAL(saturating_deadline_ms(INT64_MAX - 1, 2), INT64_MAX);
  CAF_CHECK_EQUAL(saturating_deadline_ms(-5, INT64_MAX), INT64_MAX - 5);
}
