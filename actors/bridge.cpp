#include "actors/bridge.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/log_handlers.hpp"
#include "src/protocol/encode.hpp"
#include "src/protocol/request.hpp"

namespace taskforce {

namespace {

using protocol::excerpt;

/// Requests wait without a timeout: the pool answers all but acquire at
/// once, and the bridge monitors it, failing every open request with
/// shutting_down when it goes (a timeout would arm a clock
/// entry per request, and a late answer after it would be lost).
constexpr auto reply_timeout = caf::infinite;

} // namespace

// -- construction -------------------------------------------------------------

bridge_state::bridge_state(caf::event_based_actor* self) : self(self) {
  // nop
}

bridge_state::~bridge_state() {
  if (input_ack.pending())
    input_ack.deliver(
      caf::make_error(errc::shutting_down, "the connection is closed"));
}

// -- input --------------------------------------------------------------------

caf::result<caf::ok_atom> bridge_state::on_data(std::string& chunk) {
  if (input_ended || closing)
    return caf::ok_atom::value;
  // Readers send one chunk at a time; a second one joins the first.
  if (input_pos < input.size()) {
    input.erase(0, input_pos);
    input += chunk;
  } else {
    input = std::move(chunk);
  }
  input_pos = 0;
  if (input_ack.pending())
    input_ack.deliver(caf::ok_atom::value);
  input_ack = self->make_response_promise();
  auto ack = input_ack;
  pump();
  return ack;
}

bool bridge_state::paused() const {
  return pending_output() >= max_pending_output
         || order.open_count() >= max_open_requests || status_open;
}

void bridge_state::pump() {
  if (pumping || finished)
    return;
  pumping = true;
  while (!finished && input_pos < input.size() && !paused())
    consume_line();
  if (!finished && input_pos >= input.size()) {
    if (input.capacity() > 0)
      input = std::string{};
    input_pos = 0;
    if (input_ack.pending() && !paused())
      input_ack.deliver(caf::ok_atom::value);
    if (input_ended && !closing)
      end_input();
  }
  pumping = false;
}

void bridge_state::consume_line() {
  auto nl = input.find('\n', input_pos);
  if (nl == std::string::npos) {
    // An unterminated tail: keep it (up to the line limit) for later.
    if (!skipping)
      partial.append(input, input_pos, std::string::npos);
    input_pos = input.size();
    if (partial.size() > max_line_bytes) {
      auto seq = open_slot("null");
      fail(seq, "null", errc::bad_request,
           "line longer than " + std::to_string(max_line_bytes)
             + " bytes; skipped");
      partial = std::string{};
      skipping = true;
    }
    return;
  }
  if (skipping) {
    skipping = false;
  } else if (partial.empty()) {
    on_line(input.data() + input_pos, nl - input_pos);
  } else {
    partial.append(input, input_pos, nl - input_pos);
    if (partial.size() > max_line_bytes) {
      auto seq = open_slot("null");
      fail(seq, "null", errc::bad_request,
           "line longer than " + std::to_string(max_line_bytes)
             + " bytes; skipped");
    } else {
      on_line(partial.data(), partial.size());
    }
    partial = std::string{};
  }
  input_pos = nl + 1;
}

void bridge_state::on_line(const char* first, size_t size) {
  // Whatever goes wrong, the line gets its one answer and the connection
  // lives on; nothing escapes to CAF (whose default handler prints on
  // standard output).
  auto seq = order.next();
  try {
    handle_line(first, size);
  } catch (const std::exception& e) {
    spdlog::error("connection {}: a request failed unexpectedly: {}",
                  connection, e.what());
    if (order.next() == seq)
      open_slot("null");
    auto id = order.id_of(seq);
    waiting_acquires.erase(seq);
    if (unanswered(seq))
      fail(seq, id, errc::bad_request,
           "the request could not be handled: " + excerpt(e.what()));
  }
}

void bridge_state::handle_line(const char* first, size_t size) {
  auto d = protocol::decode(first, size);
  if (d.blank)
    return;
  const auto& id = d.id;
  auto seq = open_slot(id, d.holder, d.acquire);
  // Without a control plane its operations are unavailable, however their
  // fields read.
  if (d.known_op && d.op == protocol::op_kind::control && !control) {
    answer(seq, protocol::error_line(
                  id, "unavailable",
                  std::string{control::to_string(d.control.op)}
                    + " needs a repository: start the server inside a git "
                      "repository, or with --repo DIR"));
    return;
  }
  if (!d.problem.empty()) {
    fail(seq, id, errc::bad_request, d.problem);
    return;
  }
  auto on_error = [this, seq, id](caf::error& err) {
    if (unanswered(seq))
      fail(seq, id, err);
  };
  auto on_released = [this, seq, id](bool released) {
    if (unanswered(seq))
      answer(seq, protocol::released_line(id, released));
  };
  auto on_holders = [this, seq, id](std::vector<std::string>& holders) {
    if (unanswered(seq))
      answer(seq, protocol::holders_line(id, holders));
  };
  switch (d.op) {
    case protocol::op_kind::hello:
      answer(seq, protocol::hello_line(id, config));
      break;
    case protocol::op_kind::acquire:
      d.acquire_req.connection = connection;
      waiting_acquires.emplace(seq, id);
      self
        ->request(pool, caf::infinite, acquire_atom::value,
                  std::move(d.acquire_req))
        .then(
          [this, seq, id](grant& g) {
            if (waiting_acquires.erase(seq) > 0)
              answer(seq, protocol::grant_line(id, g));
          },
          [this, seq, id](caf::error& err) {
            if (waiting_acquires.erase(seq) > 0)
              fail(seq, id, err);
          });
      break;
    case protocol::op_kind::adopt:
      d.adopt_req.connection = connection;
      self
        ->request(pool, reply_timeout, adopt_atom::value,
                  std::move(d.adopt_req))
        .then(
          [this, seq, id](grant& g) {
            if (unanswered(seq))
              answer(seq, protocol::grant_line(id, g));
          },
          on_error);
      break;
    case protocol::op_kind::release:
      self
        ->request(pool, reply_timeout, release_atom::value, d.holder, d.reason)
        .then(on_released, on_error);
      break;
    case protocol::op_kind::bind:
      self
        ->request(pool, reply_timeout, bind_atom::value, d.holder,
                  d.child_session)
        .then(on_released, on_error);
      break;
    case protocol::op_kind::child_started:
      self
        ->request(pool, reply_timeout, start_atom_v, d.session, d.child_session)
        .then(
          [this, seq, id](std::string& holder) {
            if (unanswered(seq))
              answer(seq, protocol::tied_line(id, holder));
          },
          on_error);
      break;
    case protocol::op_kind::idle:
      self->request(pool, reply_timeout, caf::idle_atom::value, d.session)
        .then(on_holders, on_error);
      break;
    case protocol::op_kind::end:
      // A child session that ended interrupts the managed task it ran.
      if (control)
        self->send(control, end_atom_v, d.session);
      self->request(pool, reply_timeout, end_atom::value, d.session)
        .then(on_holders, on_error);
      break;
    case protocol::op_kind::status:
      // A status answer lists every holder (names of any length), so one
      // pipelined burst of them could outgrow any output bound: input
      // waits while one is being answered.
      status_open = true;
      self->request(pool, reply_timeout, status_atom::value)
        .then(
          [this, seq, id](pool_status& st) {
            status_open = false;
            if (unanswered(seq))
              answer(seq, protocol::status_line(id, st));
          },
          [this, on_error](caf::error& err) {
            status_open = false;
            on_error(err);
          });
      break;
    case protocol::op_kind::subscribe:
      if (control)
        self
          ->request(control, reply_timeout, subscribe_atom_v, caf::actor{self})
          .then([](bool) {}, [](caf::error&) {});
      self->request(pool, reply_timeout, subscribe_atom::value, connection)
        .then(
          [this, seq, id](bool ok) {
            subscribed = subscribed || ok;
            if (unanswered(seq))
              answer(seq, protocol::subscribed_line(id));
          },
          on_error);
      break;
    case protocol::op_kind::control: to_control(seq, id, d.control); break;
  }
}

void bridge_state::to_control(uint64_t seq, const std::string& id,
                              control::control_request& x) {
  self->request(control, reply_timeout, control_atom_v, std::move(x))
    .then(
      [this, seq, id](control_answer& a) {
        if (unanswered(seq))
          answer(seq, protocol::control_line(id, a));
      },
      [this, seq, id](caf::error& err) {
        if (unanswered(seq))
          answer(seq,
                 protocol::error_line(id, "unavailable",
                                      "the control plane is not available ("
                                        + self->system().render(err) + ")"));
      });
}

void bridge_state::on_close() {
  input_ended = true;
  pump();
}

void bridge_state::end_input() {
  // A last line without its newline still counts as a request.
  if (!partial.empty() && !skipping)
    on_line(partial.data(), partial.size());
  partial = std::string{};
  closing = true;
  if (detached) {
    maybe_finish();
    return;
  }
  self->request(pool, caf::infinite, detach_atom::value, connection)
    .then(
      [this](std::vector<std::string>& released) {
        if (!released.empty())
          spdlog::info("connection {} closed; released {} holder(s)",
                       connection, released.size());
        detached = true;
        maybe_finish();
      },
      [this](caf::error&) {
        detached = true;
        maybe_finish();
      });
}

// -- output -------------------------------------------------------------------

uint64_t bridge_state::open_slot(std::string id, std::string holder,
                                 bool acquire) {
  return order.open(std::move(id), std::move(holder), acquire);
}

void bridge_state::on_queued(const std::string& holder) {
  // A queued acquire answers when granted; later answers go first.
  if (order.queued(holder, out))
    after_answer();
}

bool bridge_state::unanswered(uint64_t seq) const {
  return order.unanswered(seq);
}

void bridge_state::answer(uint64_t seq, std::string line) {
  order.answer(seq, std::move(line), out);
  after_answer();
}

void bridge_state::after_answer() {
  if (!sink)
    out = std::string{}; // nobody reads any more
  else if (!out.empty())
    schedule_flush();
  maybe_finish();
  pump();
}

void bridge_state::fail(uint64_t seq, const std::string& id, errc code,
                        const std::string& message) {
  answer(seq, protocol::error_line(id, to_string(code), message));
}

void bridge_state::fail(uint64_t seq, const std::string& id,
                        const caf::error& err) {
  if (err.category() == caf::atom("taskforce")) {
    auto code = static_cast<errc>(err.code());
    std::string message = to_string(code);
    if (err.context().match_elements<std::string>())
      message = err.context().get_as<std::string>(0);
    fail(seq, id, code, message);
    return;
  }
  fail(seq, id, errc::shutting_down,
       "the pool is not available (" + self->system().render(err) + ")");
}

void bridge_state::on_event(const pool_event& ev) {
  if (finished)
    return;
  bool own = ev.connection == connection;
  if (!own) {
    // The pool keeps sending a dropped subscriber's events: skip them here.
    if (!subscribed)
      return;
    if (pending_output() >= max_subscriber_backlog) {
      drop_subscription();
      return;
    }
  }
  write(protocol::event_line(ev));
  if (own && ev.kind == pool_event_kind::queued)
    on_queued(ev.holder);
}

void bridge_state::on_control_event(const control_event& ev) {
  if (finished || !subscribed)
    return;
  if (pending_output() >= max_subscriber_backlog) {
    drop_subscription();
    return;
  }
  write(protocol::control_event_line(ev));
}

void bridge_state::drop_subscription() {
  subscribed = false;
  auto pending = pending_output();
  write(protocol::unsubscribed_line(pending, max_subscriber_backlog));
  spdlog::warn("connection {}: {} bytes of output unread (limit {}); its "
               "subscription to every event is dropped",
               connection, pending, max_subscriber_backlog);
}

void bridge_state::write(const std::string& line) {
  if (!sink)
    return; // nobody reads any more
  out += line;
  out += '\n';
  schedule_flush();
}

void bridge_state::schedule_flush() {
  if (!flush_scheduled) {
    // The flush message queues behind everything already in the mailbox, so
    // one batch carries all answers of one sweep.
    flush_scheduled = true;
    self->send(self, caf::flush_atom::value);
  }
}

void bridge_state::flush() {
  if (out.empty() || !sink)
    return;
  unwritten += out.size();
  self->send(sink, std::move(out));
  out = std::string{};
}

void bridge_state::on_written(uint64_t bytes) {
  unwritten -= std::min(bytes, unwritten);
  pump();
}

void bridge_state::on_sink_down() {
  sink = nullptr;
  out = std::string{};
  unwritten = 0;
  pump();
}

size_t bridge_state::pending_output() const {
  return out.size() + unwritten;
}

void bridge_state::maybe_finish() {
  if (finished || !closing || !detached || order.open_count() > 0)
    return;
  finished = true;
  flush();
  if (sink)
    self->send(sink, caf::close_atom::value);
  if (input_ack.pending())
    input_ack.deliver(caf::ok_atom::value);
  self->quit();
}

void bridge_state::on_pool_down() {
  // Input not yet consumed is dropped: there is no pool to serve it.
  input = std::string{};
  input_pos = 0;
  partial = std::string{};
  // Pending answers of a dead pool never come: fail them here, in order.
  auto acquires = std::move(waiting_acquires);
  waiting_acquires.clear();
  for (auto& [seq, id] : acquires)
    fail(seq, id, errc::shutting_down, "the server is shutting down");
  for (auto& [seq, id] : order.unanswered_slots())
    fail(seq, id, errc::shutting_down, "the server is shutting down");
  closing = true;
  detached = true;
  maybe_finish();
}

// -- behaviour ----------------------------------------------------------------

caf::behavior bridge(bridge_actor_ptr self, pool_actor pool, pool_config cfg,
                     caf::actor sink, control_plane_actor control) {
  auto& st = self->state;
  st.pool = pool;
  st.control = std::move(control);
  st.config = std::move(cfg);
  st.sink = std::move(sink);
  log_instead_of_printing(self);
  self->monitor(pool);
  if (st.sink)
    self->monitor(st.sink);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (msg.source == st.pool.address())
      st.on_pool_down();
    else if (st.sink && msg.source == st.sink.address())
      st.on_sink_down();
  });
  // Until the pool names this connection, input waits in the mailbox.
  self->request(pool, caf::infinite, attach_atom::value, caf::actor{self})
    .await(
      [self](uint64_t id) {
        self->state.connection = id;
      },
      [self](caf::error& err) {
        spdlog::error("the pool refused a connection: {}",
                      self->system().render(err));
        self->state.on_pool_down();
      });
  return {
    [self](std::string& chunk) -> caf::result<caf::ok_atom> {
      return self->state.on_data(chunk);
    },
    [self](caf::close_atom) {
      self->state.on_close();
    },
    [self](written_atom, uint64_t bytes) {
      self->state.on_written(bytes);
    },
    [self](event_atom, const pool_event& ev) {
      self->state.on_event(ev);
    },
    [self](event_atom, const control_event& ev) {
      self->state.on_control_event(ev);
    },
    [self](caf::flush_atom) {
      self->state.flush_scheduled = false;
      self->state.flush();
    },
  };
}

caf::actor spawn_bridge(caf::actor_system& sys, pool_actor pool,
                        const pool_config& cfg, caf::actor sink,
                        control_plane_actor control) {
  return sys.spawn(bridge, std::move(pool), cfg, std::move(sink),
                   std::move(control));
}

} // namespace taskforce
