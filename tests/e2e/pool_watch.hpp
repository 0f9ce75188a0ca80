// What the real-CLI suites read back: the admission pool's events as a
// subscriber saw them, and the scripted model server's log.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/harness.hpp"
#include "e2e/protocol_client.hpp"

namespace taskforce::test {

/// The pool's events, in the order a subscriber got them.
struct pool_events {
  std::vector<nlohmann::json> events;

  /// The index of the first event `name` of `holder`; -1 when none.
  int index_of(const std::string& name, const std::string& holder) const {
    for (size_t i = 0; i < events.size(); ++i)
      if (events[i].value("event", "") == name
          && events[i].value("holder", "") == holder)
        return static_cast<int>(i);
    return -1;
  }

  /// The first event `name` of `holder`; null when none.
  nlohmann::json event_of(const std::string& name,
                          const std::string& holder) const {
    auto i = index_of(name, holder);
    return i < 0 ? nlohmann::json{} : events[static_cast<size_t>(i)];
  }

  /// How many terminal events (released, force_released) `holder` got.
  int terminal_events(const std::string& holder) const {
    return static_cast<int>(
      std::count_if(events.begin(), events.end(), [&](const auto& e) {
        auto name = e.value("event", "");
        return e.value("holder", "") == holder
               && (name == "released" || name == "force_released");
      }));
  }

  /// The holders in the order they were granted.
  std::vector<std::string> started() const {
    std::vector<std::string> out;
    for (auto& e : events)
      if (e.value("event", "") == "started")
        out.push_back(e.value("holder", ""));
    return out;
  }

  /// Every event, one JSON line each (for a failing check's message).
  std::string dump() const {
    std::string out;
    for (auto& e : events)
      out += e.dump() + "\n";
    return out;
  }
};

/// Whether the server behind `peer` holds and queues nothing now.
inline bool nothing_held(protocol_peer& peer) {
  auto st = peer.call({{"id", "st"}, {"op", "status"}});
  for (auto& pool : st["pools"])
    if (!pool["running"].empty() || !pool["queued"].empty())
      return false;
  return true;
}

/// The model server's events, parsed.
inline std::vector<nlohmann::json> model_events(const model_server& model) {
  std::vector<nlohmann::json> out;
  for (auto& line : model.events())
    out.push_back(nlohmann::json::parse(line));
  return out;
}

/// The rule of a model-server event; "" when none answered it.
inline std::string rule_of(const nlohmann::json& e) {
  return e["rule"].is_string() ? e["rule"].get<std::string>() : "";
}

/// Whether the model server saw the first request of one of the subagents
/// answered by rules `a` and `b` only after it answered every request of
/// the other (whichever began first).
inline bool one_after_the_other(const std::vector<nlohmann::json>& log,
                                const std::string& a, const std::string& b) {
  int first_done = -1, second_begun = -1, i = 0;
  std::string first;
  for (auto& e : log) {
    auto rule = rule_of(e);
    if (rule == a || rule == b) {
      if (first.empty())
        first = rule;
      if (rule == first && e["event"] == "response")
        first_done = i;
      if (rule != first && e["event"] == "request" && second_begun < 0)
        second_begun = i;
    }
    ++i;
  }
  return first_done >= 0 && second_begun > first_done;
}

} // namespace taskforce::test
