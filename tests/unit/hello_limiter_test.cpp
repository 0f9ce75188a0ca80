// The bound on connections that have not said hello (src/net/hello_limiter).
#define CAF_SUITE unit.hello_limiter
#include <caf/test/unit_test.hpp>

#include <set>

#include "src/net/hello_limiter.hpp"

using namespace taskforce::net;
using namespace std::chrono_literals;

namespace {

hello_limits small() {
  hello_limits l;
  l.total = 4;
  l.per_peer = 3;
  l.deadline = 10000ms;
  l.pressed_deadline = 1000ms;
  return l;
}

const auto t0 = hello_limiter::clock::time_point{} + 1000s;

} // namespace

CAF_TEST(one address past its share pushes out its own oldest) {
  hello_limiter l{small()};
  auto a = l.admit("10.0.0.1", t0);
  l.admit("10.0.0.1", t0);
  l.admit("10.0.0.1", t0);
  auto other = l.admit("10.0.0.2", t0);
  CAF_CHECK(other.evicted.empty());
  auto d = l.admit("10.0.0.1", t0);
  CAF_CHECK_EQUAL(d.evicted, std::vector<uint64_t>{a.id});
  CAF_CHECK_EQUAL(l.waiting(), 4u);
}

CAF_TEST(a full table pushes out the address with the most waiting) {
  hello_limits lim = small();
  lim.per_peer = 4;
  hello_limiter l{lim};
  auto a = l.admit("a", t0);
  l.admit("a", t0);
  l.admit("a", t0);
  l.admit("b", t0);
  auto c = l.admit("c", t0);
  CAF_CHECK_EQUAL(c.evicted, std::vector<uint64_t>{a.id});
}

CAF_TEST(a connection that sent something is spared while a silent one can go) {
  hello_limiter l{small()};
  auto talker = l.admit("p", t0);
  auto silent = l.admit("p", t0);
  l.admit("p", t0);
  auto next = l.admit("p", t0, [&](uint64_t id) {
    return id == talker.id;
  });
  CAF_CHECK_EQUAL(next.evicted, std::vector<uint64_t>{silent.id});
  auto out = l.oldest(8, [&](uint64_t id) {
    return id == talker.id;
  });
  CAF_CHECK_EQUAL(out.size(), 2u);
  CAF_CHECK_EQUAL(l.waiting(), 1u);
}

CAF_TEST(a settled connection no longer counts) {
  hello_limiter l{small()};
  auto a = l.admit("p", t0);
  l.settled(a.id);
  l.settled(a.id);
  CAF_CHECK_EQUAL(l.waiting(), 0u);
  CAF_CHECK(l.expired(t0 + 1h).empty());
}

CAF_TEST(the hello deadline is shorter while more than half the table waits) {
  hello_limiter l{small()};
  auto a = l.admit("p", t0);
  l.admit("q", t0 + 500ms);
  CAF_CHECK(l.expired(t0 + 2s).empty());
  auto b = l.admit("r", t0 + 2s);
  // Three of four wait: one second is all each gets.
  auto gone = l.expired(t0 + 2s + 100ms);
  CAF_CHECK_EQUAL(gone.size(), 2u);
  CAF_CHECK_EQUAL(gone.front(), a.id);
  CAF_CHECK_EQUAL(l.waiting(), 1u);
  CAF_CHECK_EQUAL(l.expired(t0 + 12s + 100ms), std::vector<uint64_t>{b.id});
}

CAF_TEST(the bounds follow the descriptors a process may hold) {
  CAF_CHECK_EQUAL(limits_for(1024).total, 256u);
  CAF_CHECK_EQUAL(limits_for(256).total, 64u);
  CAF_CHECK_EQUAL(limits_for(256).per_peer, 32u);
  CAF_CHECK_EQUAL(limits_for(10).total, 8u);
  CAF_CHECK_EQUAL(limits_for(1u << 20).total, 256u);
}
