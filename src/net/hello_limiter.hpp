// The bound on TCP connections that have not said hello yet.
//
// Anyone who can reach the port can open connections without a token; each
// holds a descriptor until it is judged. So at most `total` wait at once,
// at most `per_peer` from one address: a new connection over either bound
// pushes out the one that waited longest (of its own address, or of the
// address with the most waiting) among those that sent nothing yet, so a
// client that says hello at once is let in however many stay silent. A waiting
// connection is given `deadline` for its hello, and only `pressed_deadline`
// while more than half of `total` wait.
//
// Plain bookkeeping by connection id: the transport closes what it is told.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace taskforce::net {

/// The bounds (see above).
struct hello_limits {
  size_t total = 256;
  size_t per_peer = 128;
  std::chrono::milliseconds deadline{10000};
  std::chrono::milliseconds pressed_deadline{1000};
};

/// hello_limits for a process that may hold `max_descriptors` descriptors:
/// a quarter of them may wait for a hello (at least 8, at most 256), half
/// of those from one address.
hello_limits limits_for(uint64_t max_descriptors);

/// Which waiting connections to close (see above).
class hello_limiter {
 public:
  using clock = std::chrono::steady_clock;

  explicit hello_limiter(hello_limits limits);

  /// What admitting a connection decided.
  struct admission {
    /// The new connection's id.
    uint64_t id = 0;
    /// Waiting connections to close to make room.
    std::vector<uint64_t> evicted;
  };

  /// Whether a waiting connection has sent something (its hello, most
  /// likely, not read yet).
  using sent_something = std::function<bool(uint64_t id)>;

  /// A new connection from `peer` (its address) at `now`; `sent` spares
  /// the connections that have something to read from being pushed out,
  /// while any other can go.
  admission admit(const std::string& peer, clock::time_point now,
                  const sent_something& sent = {});

  /// Connection `id` no longer waits (it said hello, was refused or
  /// closed); unknown ids are ignored.
  void settled(uint64_t id);

  /// The waiting connections whose time is up at `now` (forgotten here).
  std::vector<uint64_t> expired(clock::time_point now);

  /// Up to `n` connections to close when out of descriptors: the ones that
  /// waited longest among those that sent nothing (spared as by admit()).
  /// Forgotten here.
  std::vector<uint64_t> oldest(size_t n, const sent_something& sent = {});

  /// How many wait.
  size_t waiting() const {
    return waiting_.size();
  }

 private:
  struct entry {
    std::string peer;
    clock::time_point since;
  };
  /// Removes `id`, returning it.
  uint64_t forget(uint64_t id);

  hello_limits limits_;
  uint64_t next_id_ = 1;
  /// By id (ids grow, so the first is the oldest).
  std::map<uint64_t, entry> waiting_;
  /// The ids waiting per peer, oldest first.
  std::map<std::string, std::deque<uint64_t>> by_peer_;
};

} // namespace taskforce::net
