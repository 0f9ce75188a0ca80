// The bridge: one per protocol connection (stdio or TCP). It turns JSON lines
// into typed requests to the pool and writes responses and events back.
//
// Contract (PROTOCOL.md "Transport"):
// - Input arrives as byte chunks (`std::string`, answered with `ok` so a
//   reader can pace itself) and ends with `close`. Lines longer than
//   max_line_bytes are refused with bad_request and skipped.
// - Every request gets exactly one response. Responses leave in arrival
//   order, except that an `acquire` that queued (its `queued` event came)
//   lets later responses pass; once granted it still waits behind earlier
//   unanswered requests.
// - A malformed line gets bad_request (with the id where one could be read)
//   and the connection lives on: JSON nested deeper than max_nesting is not
//   built, numbers out of a double's range are refused, and an error message
//   quotes at most max_quoted_bytes of anything the client sent.
// - Events go out as the pool sends them; output is batched per mailbox
//   sweep and handed to the sink actor as `std::string` chunks.
// - At end of input the bridge detaches from the pool (releasing what the
//   connection holds and cancelling its waits), writes the last answers,
//   sends `close` to the sink and quits. When the pool goes down, open
//   requests fail with shutting_down and the bridge quits the same way.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "messages/interfaces.hpp"
#include "src/config/config.hpp"

namespace taskforce {

/// One response slot: an answer (or its absence) in arrival order.
struct response_slot {
  /// The request's id as JSON text ("null" when unreadable).
  std::string id;
  /// The full response line once known; empty while unanswered.
  std::string line;
  /// Whether this is an acquire (which may be answered out of order once
  /// it is queued).
  bool acquire = false;
  /// The holder an acquire asks for.
  std::string holder;
};

/// The state of one bridge.
struct bridge_state {
  // -- constants --------------------------------------------------------------

  /// The actor's name in logs.
  static inline const char* name = "taskforce.bridge";

  /// A line longer than this is refused without being parsed.
  static constexpr size_t max_line_bytes = 1 << 20;

  /// The deepest JSON nesting a request may have, the request object itself
  /// counted as one level; anything deeper is refused without being built.
  static constexpr size_t max_nesting = 64;

  /// An error message quotes at most this many bytes of the client's text
  /// (a value, a name, the token the parser stopped at).
  static constexpr size_t max_quoted_bytes = 64;

  // -- constructors -----------------------------------------------------------

  /// Binds the state to its actor.
  explicit bridge_state(caf::event_based_actor* self);

  // -- input ------------------------------------------------------------------

  /// Splits `chunk` into lines and handles each complete one.
  void on_data(const std::string& chunk);

  /// Handles one line (without its newline); never throws.
  void on_line(const char* first, size_t size);

  /// Handles one line; may throw (on_line turns that into bad_request).
  void handle_line(const char* first, size_t size);

  /// End of input: handles a trailing unterminated line, then detaches.
  void on_close();

  // -- output -----------------------------------------------------------------

  /// Opens a response slot for the next request; returns its number.
  uint64_t open_slot(std::string id, std::string holder = {},
                     bool acquire = false);

  /// The acquire of `holder` queued: later answers may pass it.
  void on_queued(const std::string& holder);

  /// Writes the answers at the front that are complete.
  void drain();

  /// Fills slot `seq` with `line` and writes what may go out now.
  void answer(uint64_t seq, std::string line);

  /// Whether slot `seq` still waits for its answer.
  bool unanswered(uint64_t seq) const;

  /// Fails slot `seq` (request id `id`) with a protocol error.
  void fail(uint64_t seq, const std::string& id, errc code,
            const std::string& message);

  /// Fails slot `seq` (request id `id`) with an error from the pool.
  void fail(uint64_t seq, const std::string& id, const caf::error& err);

  /// Appends one line (plus newline) to the output batch.
  void write(const std::string& line);

  /// Hands the output batch to the sink.
  void flush();

  /// Quits once input ended, the pool answered the detach and every
  /// non-acquire request is answered.
  void maybe_finish();

  /// The pool went away: fails every open request and finishes.
  void on_pool_down();

  // -- member variables -------------------------------------------------------

  /// The actor this state belongs to.
  caf::event_based_actor* self;

  /// The pool every request goes to.
  pool_actor pool;

  /// The effective pool config, for `hello`.
  pool_config config;

  /// Where output chunks go.
  caf::actor sink;

  /// The connection id the pool gave at attach.
  uint64_t connection = 0;

  /// The unterminated tail of the input.
  std::string partial;

  /// True while skipping the rest of an over-long line.
  bool skipping = false;

  /// Output not yet handed to the sink.
  std::string out;

  /// Whether a flush message is already on its way.
  bool flush_scheduled = false;

  /// The number the next request's slot gets.
  uint64_t next_seq = 0;

  /// Unanswered slots (but queued acquires) and the answers behind them.
  std::map<uint64_t, response_slot> blocked;

  /// Acquires still waiting for their permit, by slot number.
  std::map<uint64_t, std::string> waiting_acquires;

  /// End of input was seen.
  bool closing = false;

  /// The pool answered the detach (or is gone).
  bool detached = false;

  /// The bridge has sent `close` to its sink.
  bool finished = false;
};

/// The bridge's actor type.
using bridge_actor_ptr = caf::stateful_actor<bridge_state>*;

/// The bridge's behaviour: attaches to `pool`, then serves input.
caf::behavior bridge(bridge_actor_ptr self, pool_actor pool, pool_config cfg,
                     caf::actor sink);

/// Spawns a bridge for one connection whose output goes to `sink`.
caf::actor spawn_bridge(caf::actor_system& sys, pool_actor pool,
                        const pool_config& cfg, caf::actor sink);

} // namespace taskforce
