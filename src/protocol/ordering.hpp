// The order responses leave a connection in. Pure: the transport's actor
// opens a slot per request, fills it when the answer comes, and writes what
// this releases.
//
// The rule (the protocol's "Transport"): responses leave in arrival order,
// except that an `acquire` that queued (its `queued` event came) lets later
// responses pass it; once granted it still waits behind earlier requests
// that are unanswered.
//
//   open(seq) ──answer──▶ filled ──(every earlier slot filled)──▶ written
//      │ acquire queued
//      ▼
//   released from the line: its answer, when it comes, waits only for
//   earlier slots still open
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace taskforce::protocol {

/// The response slots of one connection; see the file comment.
class response_order {
 public:
  /// Opens the slot of the next request (`id` as JSON text); an acquire
  /// names its holder. Answers the slot's number.
  uint64_t open(std::string id, std::string holder = {}, bool acquire = false);

  /// Fills slot `seq` with `line` and appends what may leave now to `out`
  /// (each line plus '\n'). True when something was appended.
  bool answer(uint64_t seq, std::string line, std::string& out);

  /// The acquire of `holder` queued: later answers may pass it. Appends
  /// what this releases to `out`; true when the holder had an open slot.
  bool queued(const std::string& holder, std::string& out);

  /// Whether slot `seq` still waits for its answer.
  bool unanswered(uint64_t seq) const;

  /// The id of open slot `seq`, or "null".
  std::string id_of(uint64_t seq) const;

  /// Slots open (unanswered, or answered behind one that is), queued
  /// acquires not counted.
  size_t open_count() const {
    return blocked_.size();
  }

  /// The number the next slot gets.
  uint64_t next() const {
    return next_seq_;
  }

  /// Every unanswered slot (but queued acquires), oldest first: (seq, id).
  std::vector<std::pair<uint64_t, std::string>> unanswered_slots() const;

 private:
  struct slot {
    /// The request's id as JSON text.
    std::string id;
    /// The full response line once known; empty while unanswered.
    std::string line;
    /// An acquire may be answered out of order once it is queued.
    bool acquire = false;
    std::string holder;
  };

  /// Writes the answers at the front that are complete.
  bool drain(std::string& out);

  uint64_t next_seq_ = 0;
  /// Unanswered slots (but queued acquires) and the answers behind them.
  std::map<uint64_t, slot> blocked_;
};

} // namespace taskforce::protocol
