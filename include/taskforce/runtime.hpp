// Embedding taskforce in a C++ harness: a runtime that owns the actor system
// and the admission pool, a pool handle speaking the protocol's operations,
// and session handles that turn a harness's events into them. No CAF types
// appear here; link the `taskforce_core` library.
//
//   taskforce::runtime rt;                       // built-in defaults
//   auto pool = rt.pool();
//   auto permit = pool.acquire({"session-1", "call-1"}).get();   // waits
//   ...run the subagent...
//   pool.release("call-1");
//
// Futures throw taskforce::pool_error (with the protocol's error code) on
// failure. Callbacks run on a runtime thread: keep them short and never
// block in them. Requests made from one thread reach the pool in order.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace taskforce {

/// Whether a call blocks its caller until done or returns at once and runs
/// on in a child session.
enum class call_kind { foreground, background };

/// How a call ended (the reason of a release).
enum class call_end { completed, error, aborted };

/// One subagent call asking for a permit (the protocol's `acquire`).
struct call_request {
  /// The session that makes the call.
  std::string session;
  /// A server-wide unique name for the call.
  std::string holder;
  call_kind kind = call_kind::foreground;
  /// The child session running the call, when already known.
  std::string child_session = {};
  /// The delegating holder; non-empty makes this a nested acquire.
  std::string parent = {};
  /// The tool called; one outside `subagentToolNames` is not counted.
  std::string tool = {};
};

/// A granted permit.
struct permit_info {
  /// False when the tool is not a subagent tool: nothing was counted.
  bool counted = true;
  /// The permit's number (the parent's when lent).
  uint64_t permit = 0;
  /// How long the call waited in the queue.
  int64_t queued_ms = 0;
  /// Whether the permit is borrowed from the blocked parent.
  bool lent = false;
};

/// A refused request: `code()` is the protocol's error code
/// (queue_timeout, pool_full, duplicate_holder, cancelled, shutting_down).
class pool_error : public std::runtime_error {
 public:
  /// An error with its code and message.
  pool_error(std::string code, const std::string& message)
    : std::runtime_error(message), code_(std::move(code)) {}

  /// The protocol's error code.
  const std::string& code() const noexcept {
    return code_;
  }

 private:
  std::string code_;
};

/// The outcome of a request, for callbacks: a value or an error.
template<class T>
struct outcome {
  /// Whether the request succeeded.
  bool ok = false;
  /// The answer when ok.
  T value{};
  /// The protocol's error code when not ok.
  std::string code;
  /// What went wrong when not ok.
  std::string message;
};

/// One event of a holder (the protocol's events); fields an event does not
/// use stay at their defaults.
struct holder_event {
  /// queued, started, released, force_released or timed_out.
  std::string event;
  std::string holder;
  std::string session;
  // queued
  uint64_t position = 0;
  uint64_t of = 0;
  uint64_t running = 0;
  bool background = false;
  // started
  int64_t queued_ms = 0;
  bool lent = false;
  /// released: completed, error, aborted, idle, ended or disconnected.
  std::string reason;
  // force_released
  int64_t held_ms = 0;
  // timed_out
  int64_t waited_ms = 0;
};

class runtime;

/// The pool's operations. Cheap to copy; valid while its runtime lives.
class pool_handle {
 public:
  /// Asks for a permit; the future is ready when granted.
  std::future<permit_info> acquire(const call_request& req);

  /// Asks for a permit; `done` runs when granted or refused.
  void acquire(const call_request& req,
               std::function<void(outcome<permit_info>)> done);

  /// A child without a reservation: granted at once or pool_full.
  std::future<permit_info> adopt(const std::string& session,
                                 const std::string& holder,
                                 const std::string& child_session);

  /// Releases `holder` (or cancels its wait); false if it held nothing.
  std::future<bool> release(const std::string& holder,
                            call_end how = call_end::completed);

  /// Ties a returned background call to its child session; true if that
  /// child was idle recently and the permit was released at once.
  std::future<bool> bind(const std::string& holder,
                         const std::string& child_session);

  /// Session `session` went idle: releases the background calls it runs.
  std::future<std::vector<std::string>> idle(const std::string& session);

  /// Session `session` ended: releases its calls and cancels its waits.
  std::future<std::vector<std::string>> end(const std::string& session);

  /// Calls `listener` with every event of this runtime's holders (and with
  /// `all`, every holder's event on the server).
  void on_event(std::function<void(const holder_event&)> listener,
                bool all = false);

 private:
  friend class runtime;
  struct impl;
  explicit pool_handle(std::shared_ptr<impl> ptr) : impl_(std::move(ptr)) {}
  std::shared_ptr<impl> impl_;
};

/// One harness session: report its events, and the runtime keeps its
/// permits right. Valid while its runtime lives.
class session_handle {
 public:
  /// A subagent call started; the future is ready when it may run.
  std::future<permit_info> call_started(const std::string& call,
                                        call_kind kind = call_kind::foreground,
                                        const std::string& tool = {},
                                        const std::string& parent = {},
                                        const std::string& child_session = {});

  /// A call ended (its permit, or its wait, is released).
  std::future<bool> call_ended(const std::string& call,
                               call_end how = call_end::completed);

  /// A background call returned; its child session runs on.
  std::future<bool> call_returned(const std::string& call,
                                  const std::string& child_session);

  /// This session went idle: the background calls it runs are released.
  std::future<std::vector<std::string>> idle();

  /// This session was disposed: everything it holds or waits for ends.
  std::future<std::vector<std::string>> dispose();

  /// The session's name.
  const std::string& name() const;

 private:
  friend class runtime;
  struct impl;
  explicit session_handle(std::shared_ptr<impl> ptr) : impl_(std::move(ptr)) {}
  std::shared_ptr<impl> impl_;
};

/// What a runtime is built from.
struct runtime_options {
  /// A taskforce.json whose "pool" section configures the pool; empty =
  /// the built-in defaults. A bad file throws std::invalid_argument naming
  /// the key, the value and the rule.
  std::string config_file = {};
  /// Scheduler threads; 0 = the TASKFORCE_THREADS environment variable
  /// (1 to 256), else one.
  size_t threads = 0;
};

/// Owns the actor system and the pool. Destroying it releases everything
/// its handles hold and cancels their waits (futures fail with cancelled or
/// shutting_down).
class runtime {
 public:
  /// Starts the actor system and the pool.
  explicit runtime(const runtime_options& opts = {});

  ~runtime();

  runtime(const runtime&) = delete;
  runtime& operator=(const runtime&) = delete;

  /// The pool.
  pool_handle pool();

  /// A new session actor for harness session `name`.
  session_handle session(const std::string& name);

 private:
  friend class pool_handle;
  friend class session_handle;
  struct impl;
  std::shared_ptr<impl> impl_;
};

} // namespace taskforce
