// The admission state machine of taskforce's pool, as plain C++.
//
// It owns every keyed pool (one per requesting session in `session` mode,
// one in `global` mode), their numbered permits, the FIFO queue of root
// acquires and the holders. It never blocks and never reads a clock: every
// operation takes `now` (milliseconds from the caller's clock) and leaves its
// side effects in `effects()`: grants and errors for queued waiters, events
// to emit, force-releases to log and timers to arm. The pool actor is a thin
// shell that delivers them.
//
// A holder's life (the protocol's pool semantics):
//
//           acquire (pool full)        permit handed over
//   (new) ─────────────────────▶ queued ──────────────────▶ running
//     │                            │                           │
//     │ acquire, adopt, nested     │ release, end, detach:     │ release,
//     │ (permit free or lent)      │   error cancelled         │ idle, end,
//     └────────────────────────────┼──▶ running                │ detach, stop,
//                                  │ queueTimeoutMs: timed_out │ late bind:
//                                  │ stop: shutting_down       │   released;
//                                  ▼                           │ maxHoldMs:
//                               (gone)                         │   forced
//                                                              ▼
//                                                           (gone)
//
// Nested calls name their `parent`: a running holder, or the child session
// one runs (exactly, by `bind` or the acquire's child_session, or by a guess
// of child_started for a foreground call whose child started without naming
// its call). A nested call never queues: it takes a free permit of its
// parent's pool, or, when it is a foreground call (its parent waits for it)
// and the parent lends to no other call, borrows the parent's permit, or
// fails with pool_full. So the permits in use never exceed maxParallel, and
// while every caller of a foreground call waits for it, neither do the calls
// that run (rather than wait for a child).
//
// Terminal events: a holder that ran ends with exactly one `released` or
// `force_released`. A wait that ends without a permit ends with the error
// of its acquire (and `timed_out` when it timed out), never with `released`.
//
// Timers: every queued holder waits the same queueTimeoutMs and every running
// holder may hold the same maxHoldMs, so deadlines come due in arrival order.
// The machine therefore keeps at most one timer per kind, armed for the
// oldest deadline and re-armed when it fires; a timer whose generation is not
// the current one is stale and ignored. A busy pool costs no timer traffic.
// Deadlines saturate: `now + limit` never wraps into the past, and a deadline
// beyond the clock's range (INT64_MAX ms) arms no timer at all.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "messages/errors.hpp"
#include "messages/pool.hpp"
#include "src/config/config.hpp"

namespace taskforce::pool {

/// A grant for a waiter that was queued: deliver `value` to `ticket`.
struct delivery {
  uint64_t ticket = 0;
  grant value;
};

/// An error for a waiter that was queued: fail `ticket` with `code`.
struct failure {
  uint64_t ticket = 0;
  errc code = errc::cancelled;
  std::string message;
};

/// A holder the watchdog released after maxHoldMs (to log as a warning).
struct forced_release {
  std::string holder;
  std::string session;
  int64_t held_ms = 0;
};

/// A timer to start: expire(id, generation) is due after `delay_ms`.
struct timer_request {
  uint64_t id = 0;
  uint64_t generation = 0;
  int64_t delay_ms = 0;
};

/// The side effects of one operation, in the order they happened.
struct outcome {
  /// Queued acquires granted by this operation.
  std::vector<delivery> grants;
  /// Queued acquires that fail (cancelled, queue_timeout).
  std::vector<failure> failures;
  /// Events for listeners; empty when nobody listens.
  std::vector<pool_event> events;
  /// Force-releases by maxHoldMs, always reported.
  std::vector<forced_release> forced;
  /// Timers to arm; older generations of the same id become stale.
  std::vector<timer_request> arms;

  /// Forgets everything but keeps the capacity.
  void clear();

  /// True when the operation had no side effect.
  bool empty() const;
};

/// What an acquire or adopt did.
enum class acquire_status : uint8_t {
  /// Granted at once (or not counted); `value` is the answer.
  granted,
  /// Waits in the FIFO queue; the answer goes later to `ticket`.
  queued,
  /// Refused at once with `code` and `message`.
  failed,
};

/// The immediate answer to an acquire or adopt.
struct acquire_result {
  acquire_status status = acquire_status::granted;
  grant value;
  uint64_t ticket = 0;
  errc code = errc::bad_request;
  std::string message;
};

/// The admission state machine; see the file comment.
class admission {
 public:
  // -- constants --------------------------------------------------------------

  /// The timer id of queue timeouts.
  static constexpr uint64_t queue_timer = 1;

  /// The timer id of maxHoldMs force-releases.
  static constexpr uint64_t hold_timer = 2;

  /// The pool key of `global` mode.
  static constexpr const char* global_key = "global";

  // -- constructors -----------------------------------------------------------

  /// A machine with the validated `cfg`.
  explicit admission(pool_config cfg);

  admission(const admission&) = delete;
  admission& operator=(const admission&) = delete;

  // -- connections ------------------------------------------------------------

  /// Opens a connection and answers its id (never 0). With `listening`, the
  /// events of its holders are emitted for it.
  uint64_t attach(bool listening = true);

  /// From now on every event is emitted (the connection gets all events).
  /// False for an unknown or listenerless connection.
  bool subscribe(uint64_t connection);

  /// The connections that get every event, in the order they subscribed.
  const std::vector<uint64_t>& subscribers() const {
    return subscribers_;
  }

  /// Closes a connection: cancels its waits and releases its holders (reason
  /// disconnected), except detached permits already granted: those stay
  /// held, owned by no connection (their events go to subscribers only).
  /// Answers the holders it released or cancelled.
  std::vector<std::string> detach(uint64_t connection, int64_t now);

  // -- pool operations --------------------------------------------------------

  /// A root or nested acquire; see acquire_status.
  acquire_result acquire(acquire_request&& req, int64_t now);

  /// A child without a reservation: a free permit at once, or pool_full.
  acquire_result adopt(adopt_request&& req, int64_t now);

  /// Releases a holder or cancels its wait; false if unknown.
  bool release(const std::string& holder, release_reason reason, int64_t now);

  /// Ties a holder to its child session; true if that released it because
  /// the child went idle within idleMemoryMs. A guess of child_started that
  /// named this child for another holder is withdrawn.
  bool bind(const std::string& holder, const std::string& child_session,
            int64_t now);

  /// A child session started for one of `session`'s calls, and the harness
  /// cannot tell which (Claude Code's SubagentStart names no call). Ties it
  /// to the session's oldest running foreground holder that has no child yet,
  /// so a nested acquire naming the child as its parent finds a permit to
  /// borrow. Answers that holder, or "" when none was free to tie (the child
  /// is then kept for a tie that a later bind frees). A child already tied
  /// answers its holder and changes nothing. The tie is a guess only when
  /// several calls start at once; it never releases a permit (idle releases
  /// background holders, which bind ties exactly) and a lent permit is still
  /// one permit, so a wrong guess cannot break the bound.
  std::string child_started(const std::string& session,
                            const std::string& child_session, int64_t now);

  /// A session went idle: releases the background holders it runs.
  std::vector<std::string> idle(const std::string& session, int64_t now);

  /// A session ended: releases and cancels what it requested and the
  /// background holders it runs.
  std::vector<std::string> end(const std::string& session, int64_t now);

  /// The server stops: fails every wait with errc::shutting_down, then
  /// releases every holder (reason disconnected: the server closes every
  /// connection). Later acquires and adopts fail with shutting_down. Answers
  /// the holders it affected.
  std::vector<std::string> stop(int64_t now);

  /// A timer is due. Stale generations are ignored.
  void expire(uint64_t timer, uint64_t generation, int64_t now);

  /// A snapshot of every pool that has holders, sorted by key.
  pool_status status(int64_t now) const;

  /// The tickets of every queued waiter, oldest first (for shutdown).
  std::vector<uint64_t> waiting_tickets() const;

  // -- observers --------------------------------------------------------------

  /// The side effects of the last operation.
  const outcome& effects() const {
    return out_;
  }

  /// Running holders, lent ones included.
  size_t running_count() const {
    return running_size_;
  }

  /// Queued holders.
  size_t queued_count() const {
    return queued_size_;
  }

  /// Idle reports remembered for a late bind (log entries, stale included).
  size_t remembered_idles() const {
    return idle_log_.size();
  }

  /// Permits in use in the pool `key` (0 for an unknown pool).
  uint64_t in_use(const std::string& key) const;

  /// Children that started and are tied to no holder yet.
  size_t untied_children() const {
    return untied_.size();
  }

  /// Checks every structural invariant (bound, permit users, queue links, no
  /// idle permit while someone waits, one borrower per waiting caller, ties
  /// only on foreground holders); answers the first violation or "".
  std::string audit() const;

  /// The configuration.
  const pool_config& config() const {
    return cfg_;
  }

 private:
  // -- member types -----------------------------------------------------------

  struct pool_state;
  struct holder;

  /// A permit in use; several holders share it when it is lent.
  struct permit {
    pool_state* pool = nullptr;
    uint64_t number = 0;
    uint32_t users = 0;
  };

  /// An intrusive doubly linked list of holders, one of two link sets.
  template<int Links>
  struct line {
    holder* head = nullptr;
    holder* tail = nullptr;
    void push_back(holder* x);
    void erase(holder* x);
  };

  enum class phase : uint8_t { queued, running };

  struct holder {
    const std::string* name = nullptr;
    std::string session;
    std::string child_session;
    holder_kind kind = holder_kind::foreground;
    phase state = phase::queued;
    bool lent = false;
    /// The `parent` a nested acquire named (a holder or a child session):
    /// the caller that waits for this call when it is lent.
    std::string caller;
    /// The child session child_started tied to this foreground holder (a
    /// guess when calls start at once; `child_session` is exact).
    std::string started_child;
    /// A detached permit: a closing connection leaves it held.
    bool detached = false;
    /// Events of this holder go to its connection's listener.
    bool listened = false;
    uint64_t connection = 0;
    uint64_t ticket = 0;
    pool_state* pool = nullptr;
    permit* slot = nullptr;
    /// Enqueue time while queued, grant time while running.
    int64_t since = 0;
    // Links: [0] the pool's queue, [1] the server-wide queued or running line.
    holder* prev[2] = {nullptr, nullptr};
    holder* next[2] = {nullptr, nullptr};
  };

  struct pool_state {
    const std::string* key = nullptr;
    uint64_t in_use = 0;
    uint64_t next_number = 1;
    std::vector<uint64_t> free_numbers;
    line<0> queue;
    size_t queue_size = 0;
  };

  using holder_map = std::unordered_map<std::string, holder>;

  // -- helpers ----------------------------------------------------------------

  pool_state& pool_for(const std::string& session);
  void drop_pool_if_idle(pool_state& p);
  bool has_free(const pool_state& p) const {
    return p.in_use < cfg_.max_parallel;
  }
  holder& new_holder(std::string&& name);
  void erase_holder(holder& h);
  permit* take_permit(pool_state& p);
  void grant_running(holder& h, permit* slot, bool lent, int64_t now);
  void let_go(holder& h, int64_t now);
  void finish(holder& h, release_reason reason, int64_t now);
  void cancel(holder& h, release_reason reason, int64_t now);
  void time_out(holder& h, size_t ahead, int64_t now);
  void fail_wait(holder& h, errc code, std::string message);
  void force_release(holder& h, int64_t now);
  void ensure_timers(int64_t now);
  void arm(size_t index, uint64_t id, int64_t deadline, int64_t now);
  int64_t queue_deadline(const holder& h) const;
  int64_t hold_deadline(const holder& h) const;
  bool wants_events(const holder& h) const {
    return h.listened || !subscribers_.empty();
  }
  pool_event& event(pool_event_kind kind, const holder& h);
  bool idle_recently(const std::string& session, int64_t now);
  void remember_idle(const std::string& session, int64_t now);
  void forget_old_idles(int64_t now);
  size_t ahead_of(const holder& h) const;
  acquire_result refuse(errc code, std::string message);
  bool is_subagent_tool(const std::string& tool) const;
  holder* find_parent(const std::string& parent, const std::string& session);
  const holder* borrower_of(const std::string& caller) const;
  holder* tie_candidate(const std::string& session);
  void tie(const std::string& session, const std::string& child);
  void untie(const std::string& child, const holder* keep);
  void forget_untied(const std::string& child);
  bool listening(uint64_t connection) const;
  void collect(const line<1>& from, const std::string& session, bool requested,
               bool background_child);

  // -- member variables -------------------------------------------------------

  pool_config cfg_;
  holder_map holders_;
  /// Spare map nodes, so a busy pool allocates no holder per acquire.
  std::vector<holder_map::node_type> spare_holders_;
  std::unordered_map<std::string, pool_state> pools_;
  /// The pool of the last lookup, or null.
  pool_state* last_pool_ = nullptr;
  std::deque<permit> permit_store_;
  std::vector<permit*> spare_permits_;
  /// Every queued holder, oldest first (queue deadline order).
  line<1> queued_line_;
  /// Every running holder, oldest grant first (max-hold deadline order).
  line<1> running_line_;
  size_t queued_size_ = 0;
  size_t running_size_ = 0;
  uint64_t next_ticket_ = 1;
  uint64_t next_connection_ = 1;
  struct connection_state {
    bool listening = false;
    bool subscribed = false;
  };
  /// Open connections by id.
  std::unordered_map<uint64_t, connection_state> connections_;
  /// Scratch space for operations that touch many holders.
  std::vector<holder*> scratch_;
  std::vector<size_t> ahead_;
  /// Subscribed connections, in the order they subscribed.
  std::vector<uint64_t> subscribers_;
  /// Set by stop(): nothing is granted any more.
  bool stopped_ = false;
  /// Armed timers: [0] queue, [1] hold; generation 0 = none armed.
  uint64_t armed_generation_[2] = {0, 0};
  int64_t armed_deadline_[2] = {0, 0};
  uint64_t next_generation_ = 1;
  /// Child session -> when it was last reported idle.
  std::unordered_map<std::string, int64_t> idle_at_;
  std::deque<std::pair<int64_t, std::string>> idle_log_;
  /// Started children tied to no holder: (session, child), oldest first.
  std::deque<std::pair<std::string, std::string>> untied_;
  outcome out_;
};

} // namespace taskforce::pool
