// The bridge: one per protocol connection (stdio or TCP). It turns JSON lines
// into typed requests to the pool and writes responses and events back.
//
// Contract (docs/protocol.md, "Requests, responses and events"):
// - Input arrives as byte chunks (`std::string`, answered with `ok` once the
//   chunk is consumed, so a reader sends the next one only then) and ends
//   with `close`. Lines longer than max_line_bytes are refused with
//   bad_request and skipped.
// - Every request gets exactly one response. Responses leave in arrival
//   order, except that an `acquire` that queued (its `queued` event came)
//   lets later responses pass; once granted it still waits behind earlier
//   unanswered requests.
// - A malformed line gets bad_request (with the id where one could be read)
//   and the connection lives on: JSON nested deeper than max_nesting is not
//   built, numbers out of a double's range are refused, and an error message
//   quotes at most max_quoted_bytes of anything the client sent.
// - Events go out as the pool sends them; output is batched per mailbox
//   sweep and handed to the sink actor as `std::string` chunks. The sink
//   reports with (written_atom, bytes) what left its queue.
// - Backpressure: the bridge stops consuming input (and withholds the `ok`
//   of the chunk at hand) while more than max_pending_output bytes of its
//   output are unwritten, max_open_requests requests are unanswered, or a
//   `status` (whose answer grows with the pool) is; a connection that does
//   not read its answers is not read either. A
//   subscriber more than max_subscriber_backlog bytes behind loses its
//   subscription, with a last `unsubscribed` event; its own holders' events
//   and its answers still come.
// - At end of input the bridge consumes what it holds, detaches from the pool
//   (releasing what the connection holds and cancelling its waits), writes
//   the last answers, sends `close` to the sink and quits. When the pool goes
//   down, open requests fail with shutting_down and the bridge quits the
//   same way. A sink that goes away (the socket closed) discards output.
//
//   input chunk ──► consuming ──(output over bound, or too many open
//        ▲              │        requests)──► paused ──(drained)──┐
//        │              ▼                                          │
//        └──── ok ◄── consumed ◄───────────────────────────────────┘
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <caf/fwd.hpp>
#include <caf/response_promise.hpp>
#include <caf/stateful_actor.hpp>

#include "messages/interfaces.hpp"
#include "src/config/config.hpp"
#include "src/protocol/fields.hpp"

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
  static constexpr size_t max_quoted_bytes = protocol::max_quoted_bytes;

  /// Output bytes not yet written to the connection at which the bridge
  /// stops consuming the connection's input.
  static constexpr size_t max_pending_output = 1 << 20;

  /// Output bytes not yet written at which a subscriber loses its
  /// subscription to other connections' events.
  static constexpr size_t max_subscriber_backlog = 2 << 20;

  /// Requests handed on and not yet answered (a queued acquire no longer
  /// counts) at which the bridge stops consuming input: one connection
  /// never floods the pool's mailbox ahead of the others.
  static constexpr size_t max_open_requests = 64;

  // -- constructors -----------------------------------------------------------

  /// Binds the state to its actor.
  explicit bridge_state(caf::event_based_actor* self);

  /// Answers a withheld `ok` with an error, so a reader never waits on a
  /// bridge that is gone.
  ~bridge_state();

  // -- input ------------------------------------------------------------------

  /// Takes one chunk of input; its `ok` comes once it is consumed.
  caf::result<caf::ok_atom> on_data(std::string& chunk);

  /// Consumes input while neither output nor open requests are over their
  /// bound; delivers the chunk's `ok` and handles end of input when done.
  void pump();

  /// Consumes the next line (or the unterminated rest) of the chunk.
  void consume_line();

  /// Handles one line (without its newline); never throws.
  void on_line(const char* first, size_t size);

  /// Handles one line; may throw (on_line turns that into bad_request).
  void handle_line(const char* first, size_t size);

  /// End of input was announced: consume what is held, then detach.
  void on_close();

  /// Input is consumed and ended: a trailing unterminated line counts as a
  /// request, then the bridge detaches from the pool.
  void end_input();

  /// Whether input waits (too much output unwritten, too many requests
  /// open, or a status open).
  bool paused() const;

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

  /// An event from the pool: written, or skipped for a dropped subscriber.
  void on_event(const pool_event& ev);

  /// An event from the control plane, for a subscriber.
  void on_control_event(const control_event& ev);

  /// Hands a `bg.*` or `monitor.*` request to the control plane.
  void to_control(uint64_t seq, const std::string& id, control::control_op op,
                  const nlohmann::json& req);

  /// Ends the subscription of a subscriber that fell too far behind.
  void drop_subscription();

  /// Appends one line (plus newline) to the output batch.
  void write(const std::string& line);

  /// Hands the output batch to the sink.
  void flush();

  /// The sink reports `bytes` off its queue.
  void on_written(uint64_t bytes);

  /// The sink is gone: output from now on is discarded.
  void on_sink_down();

  /// Output not yet written: the batch plus what the sink still holds.
  size_t pending_output() const;

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

  /// Managed background work and monitors; null when the server has none
  /// (it runs outside a repository).
  control_plane_actor control;

  /// Where output chunks go; null once it is gone.
  caf::actor sink;

  /// The connection id the pool gave at attach.
  uint64_t connection = 0;

  /// The chunk being consumed.
  std::string input;

  /// How much of `input` is consumed.
  size_t input_pos = 0;

  /// The `ok` of the chunk being consumed, withheld while input waits.
  caf::response_promise input_ack;

  /// The unterminated tail of the input.
  std::string partial;

  /// True while skipping the rest of an over-long line.
  bool skipping = false;

  /// True while pump() runs (answers given inside it must not re-enter).
  bool pumping = false;

  /// The reader announced the end of input.
  bool input_ended = false;

  /// Output not yet handed to the sink.
  std::string out;

  /// Bytes handed to the sink that it has not reported written.
  uint64_t unwritten = 0;

  /// Whether a flush message is already on its way.
  bool flush_scheduled = false;

  /// Whether this connection gets other connections' events.
  bool subscribed = false;

  /// Whether a `status` request is being answered (input waits meanwhile).
  bool status_open = false;

  /// The number the next request's slot gets.
  uint64_t next_seq = 0;

  /// Unanswered slots (but queued acquires) and the answers behind them.
  std::map<uint64_t, response_slot> blocked;

  /// Acquires still waiting for their permit, by slot number.
  std::map<uint64_t, std::string> waiting_acquires;

  /// End of input was handled (the detach is on its way).
  bool closing = false;

  /// The pool answered the detach (or is gone).
  bool detached = false;

  /// The bridge has sent `close` to its sink.
  bool finished = false;
};

/// The bridge's actor type.
using bridge_actor_ptr = caf::stateful_actor<bridge_state>*;

/// The bridge's behaviour: attaches to `pool`, then serves input; `bg.*`
/// and `monitor.*` requests go to `control` (without one they are answered
/// `unavailable`).
caf::behavior bridge(bridge_actor_ptr self, pool_actor pool, pool_config cfg,
                     caf::actor sink, control_plane_actor control);

/// Spawns a bridge for one connection whose output goes to `sink`.
caf::actor spawn_bridge(caf::actor_system& sys, pool_actor pool,
                        const pool_config& cfg, caf::actor sink,
                        control_plane_actor control = {});

} // namespace taskforce
