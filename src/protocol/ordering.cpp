#include "src/protocol/ordering.hpp"

namespace taskforce::protocol {

uint64_t response_order::open(std::string id, std::string holder,
                              bool acquire) {
  auto seq = next_seq_++;
  blocked_.emplace(seq, slot{std::move(id), {}, acquire, std::move(holder)});
  return seq;
}

bool response_order::answer(uint64_t seq, std::string line, std::string& out) {
  if (auto i = blocked_.find(seq); i != blocked_.end()) {
    i->second.line = std::move(line);
  } else if (blocked_.empty() || blocked_.begin()->first > seq) {
    // A granted queued acquire with nothing unanswered before it goes out
    // at once.
    out += line;
    out += '\n';
    return true;
  } else {
    // A granted acquire waits behind earlier requests still unanswered.
    blocked_.emplace(seq, slot{{}, std::move(line), true, {}});
  }
  return drain(out);
}

bool response_order::queued(const std::string& holder, std::string& out) {
  for (auto i = blocked_.begin(); i != blocked_.end(); ++i) {
    auto& s = i->second;
    if (s.acquire && s.line.empty() && s.holder == holder) {
      blocked_.erase(i);
      drain(out);
      return true;
    }
  }
  return false;
}

bool response_order::unanswered(uint64_t seq) const {
  auto i = blocked_.find(seq);
  return i != blocked_.end() && i->second.line.empty();
}

std::string response_order::id_of(uint64_t seq) const {
  auto i = blocked_.find(seq);
  return i == blocked_.end() || i->second.id.empty() ? "null" : i->second.id;
}

std::vector<std::pair<uint64_t, std::string>>
response_order::unanswered_slots() const {
  std::vector<std::pair<uint64_t, std::string>> result;
  for (auto& [seq, s] : blocked_)
    if (s.line.empty())
      result.emplace_back(seq, s.id);
  return result;
}

bool response_order::drain(std::string& out) {
  bool wrote = false;
  while (!blocked_.empty() && !blocked_.begin()->second.line.empty()) {
    out += blocked_.begin()->second.line;
    out += '\n';
    blocked_.erase(blocked_.begin());
    wrote = true;
  }
  return wrote;
}

} // namespace taskforce::protocol
