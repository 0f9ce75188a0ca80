#include "src/net/hello_limiter.hpp"

#include <algorithm>

namespace taskforce::net {

hello_limits limits_for(uint64_t max_descriptors) {
  hello_limits l;
  l.total
    = static_cast<size_t>(std::clamp<uint64_t>(max_descriptors / 4, 8, 256));
  l.per_peer = std::max<size_t>(l.total / 2, 4);
  return l;
}

hello_limiter::hello_limiter(hello_limits limits) : limits_(limits) {}

uint64_t hello_limiter::forget(uint64_t id) {
  auto i = waiting_.find(id);
  if (i == waiting_.end())
    return id;
  auto p = by_peer_.find(i->second.peer);
  if (p != by_peer_.end()) {
    auto& ids = p->second;
    ids.erase(std::remove(ids.begin(), ids.end(), id), ids.end());
    if (ids.empty())
      by_peer_.erase(p);
  }
  waiting_.erase(i);
  return id;
}

hello_limiter::admission hello_limiter::admit(const std::string& peer,
                                              clock::time_point now,
                                              const sent_something& sent) {
  admission a;
  // The oldest of `ids` that sent nothing, else the oldest.
  auto pick = [&](const std::deque<uint64_t>& ids) {
    if (sent)
      for (auto id : ids)
        if (!sent(id))
          return id;
    return ids.front();
  };
  auto mine = by_peer_.find(peer);
  if (mine != by_peer_.end() && mine->second.size() >= limits_.per_peer) {
    a.evicted.push_back(forget(pick(mine->second)));
  } else if (waiting_.size() >= limits_.total) {
    // The address with the most waiting gives up its oldest.
    auto most = std::max_element(by_peer_.begin(), by_peer_.end(),
                                 [](const auto& x, const auto& y) {
                                   return x.second.size() < y.second.size();
                                 });
    if (most != by_peer_.end())
      a.evicted.push_back(forget(pick(most->second)));
  }
  a.id = next_id_++;
  waiting_.emplace(a.id, entry{peer, now});
  by_peer_[peer].push_back(a.id);
  return a;
}

void hello_limiter::settled(uint64_t id) {
  forget(id);
}

std::vector<uint64_t> hello_limiter::expired(clock::time_point now) {
  auto limit = waiting_.size() * 2 > limits_.total ? limits_.pressed_deadline
                                                   : limits_.deadline;
  std::vector<uint64_t> out;
  for (auto& [id, e] : waiting_) {
    if (now - e.since < limit)
      break; // by id is by age
    out.push_back(id);
  }
  for (auto id : out)
    forget(id);
  return out;
}

std::vector<uint64_t> hello_limiter::oldest(size_t n,
                                            const sent_something& sent) {
  std::vector<uint64_t> out;
  for (auto& [id, e] : waiting_) {
    if (out.size() >= n)
      break;
    if (!sent || !sent(id))
      out.push_back(id);
  }
  for (auto id : out)
    forget(id);
  return out;
}

} // namespace taskforce::net
