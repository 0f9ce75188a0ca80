#include "actors/bridge.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>
#include <vector>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "actors/log_handlers.hpp"
#include "src/control/wire.hpp"
#include "src/protocol/fields.hpp"
#include "src/text/edit_distance.hpp"
#include "src/text/json_reader.hpp"

namespace taskforce {

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;
using protocol::bad_field;
using protocol::excerpt;
using protocol::need_string;
using protocol::opt_flag;
using protocol::opt_string;
using protocol::quote_text;
using protocol::quote_value;

/// Requests wait without a timeout: the pool answers all but acquire at
/// once, and the bridge monitors it, failing every open request with
/// shutting_down when it goes (a timeout would arm a clock
/// entry per request, and a late answer after it would be lost).
constexpr auto reply_timeout = caf::infinite;

constexpr const char* known_ops
  = "hello, acquire, adopt, release, bind, idle, end, status, subscribe";

/// Longer names get no suggestion (an edit distance is quadratic).
constexpr size_t max_name_for_suggestion = 64;

/// "unknown op …" with the nearest known name, else the pool's names.
std::string unknown_op_message(const std::string& op) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    std::string pool = known_ops;
    for (size_t at = 0; at < pool.size();) {
      auto comma = pool.find(", ", at);
      all.push_back(pool.substr(at, comma - at));
      at = comma == std::string::npos ? pool.size() : comma + 2;
    }
    for (auto i = 0; i <= static_cast<int>(control::control_op::monitor_kill);
         ++i)
      all.push_back(control::to_string(static_cast<control::control_op>(i)));
    return all;
  }();
  std::string message = "unknown op " + quote_text(op);
  if (op.size() <= max_name_for_suggestion) {
    auto near = nearest(op, names, std::max<size_t>(2, op.size() / 3));
    if (!near.empty())
      return message + " (did you mean \"" + near + "\"?)";
  }
  return message + " (known: " + known_ops
         + ", and the bg.* and monitor.* operations)";
}

/// The protocol version this server speaks: 2 adds the control plane's
/// `bg.*` and `monitor.*` operations.
constexpr int protocol_version = 2;

holder_kind need_kind(const json& req) {
  auto text = need_string(req, "kind");
  if (text == "foreground")
    return holder_kind::foreground;
  if (text == "background")
    return holder_kind::background;
  throw bad_field("field \"kind\" must be \"foreground\" or \"background\", "
                  "got "
                  + quote_text(text));
}

release_reason need_reason(const json& req) {
  auto text = need_string(req, "reason");
  if (text == "completed")
    return release_reason::completed;
  if (text == "error")
    return release_reason::error;
  if (text == "aborted")
    return release_reason::aborted;
  throw bad_field("field \"reason\" must be \"completed\", \"error\" or "
                  "\"aborted\", got "
                  + quote_text(text));
}

/// One line parsed: the request (null when unreadable), what went wrong,
/// and the id's own text when it is a floating-point number (echoed as
/// sent, not as a double prints it).
struct parsed_line {
  json value;
  json_read_result read;
  /// The text of a floating-point `id`.
  std::string id_text;
};

/// A line read without the JSON library's hazards (src/text/json_reader):
/// a value nested deeper than max_nesting is left out and noted, so no
/// hostile nesting reaches code that recurses per level (dump, copy,
/// comparison).
parsed_line parse_line(const char* first, size_t size) {
  parsed_line result;
  json_read_options opts;
  opts.max_depth = bridge_state::max_nesting;
  opts.skip_too_deep = true;
  opts.on_float = [&result](double&, const std::string& text,
                            const std::vector<std::string>& path) {
    if (path.size() == 1 && path[0] == "id")
      result.id_text = text;
  };
  result.read = read_json(first, first + size, result.value, opts);
  return result;
}

/// The parser's complaint for a client, with the token it quotes cut to
/// max_quoted_bytes.
std::string parse_message(const json_read_result& read) {
  std::string text = read.detail;
  if (auto open = text.find('\''); open != std::string::npos) {
    auto close = text.rfind('\'');
    if (close > open)
      text = text.substr(0, open)
             + quote_text(text.substr(open + 1, close - open - 1), '\'')
             + text.substr(close + 1);
  }
  if (read.kind == json_read_result::problem::out_of_range)
    return "a number out of range (" + text + ")";
  return "not JSON: " + text;
}

/// `{"id":<id>,"ok":true` followed by `fields` (an object) and `}`.
std::string ok_line(const std::string& id, const ordered_json& fields) {
  std::string line = "{\"id\":" + id + ",\"ok\":true";
  for (auto& [key, value] : fields.items()) {
    line += ",\"";
    line += key;
    line += "\":";
    line += value.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  line += '}';
  return line;
}

std::string error_line(const std::string& id, const char* code,
                       const std::string& message) {
  ordered_json error{{"code", code}, {"message", message}};
  return "{\"id\":" + id + ",\"ok\":false,\"error\":"
         + error.dump(-1, ' ', false, json::error_handler_t::replace) + "}";
}

/// Appends `text` as a JSON string. Names come from parsed requests, so
/// they are valid UTF-8; only quotes, backslashes and controls need escapes.
void append_string(std::string& out, const std::string& text) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += "\\u00";
          out += hex[(c >> 4) & 0xf];
          out += hex[c & 0xf];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

/// Appends the members of `object` (a JSON object's compact text, as the
/// control plane writes it), each after a comma.
void append_members(std::string& out, const std::string& object) {
  auto open = object.find('{');
  auto close = object.rfind('}');
  if (open == std::string::npos || close == std::string::npos
      || object.find_first_not_of(" \n", open + 1) == close)
    return;
  out += ',';
  out.append(object, open + 1, close - open - 1);
}

void append_field(std::string& out, const char* key, const std::string& value) {
  out += ",\"";
  out += key;
  out += "\":";
  append_string(out, value);
}

template<class Integer>
void append_field(std::string& out, const char* key, Integer value) {
  out += ",\"";
  out += key;
  out += "\":";
  out += std::to_string(value);
}

void append_field(std::string& out, const char* key, bool value) {
  out += ",\"";
  out += key;
  out += value ? "\":true" : "\":false";
}

// The hot answers and events are written by hand: they are most of the
// output, and building a JSON object for each costs more than the pool.

std::string grant_line(const std::string& id, const grant& g) {
  std::string line = "{\"id\":" + id + ",\"ok\":true";
  if (g.counted)
    append_field(line, "permit", g.permit);
  else
    line += ",\"permit\":null";
  append_field(line, "queued_ms", g.queued_ms);
  append_field(line, "lent", g.lent);
  line += '}';
  return line;
}

std::string released_line(const std::string& id, bool released) {
  std::string line = "{\"id\":" + id + ",\"ok\":true";
  append_field(line, "released", released);
  line += '}';
  return line;
}

std::string event_line(const pool_event& ev) {
  std::string line = "{\"event\":\"";
  line += to_string(ev.kind);
  line += '"';
  append_field(line, "holder", ev.holder);
  switch (ev.kind) {
    case pool_event_kind::queued:
      append_field(line, "session", ev.session);
      append_field(line, "position", ev.position);
      append_field(line, "of", ev.of);
      append_field(line, "running", ev.running);
      append_field(line, "background", ev.background);
      break;
    case pool_event_kind::started:
      append_field(line, "session", ev.session);
      append_field(line, "queued_ms", ev.queued_ms);
      append_field(line, "lent", ev.lent);
      break;
    case pool_event_kind::released:
      line += ",\"reason\":\"";
      line += to_string(ev.reason);
      line += '"';
      break;
    case pool_event_kind::force_released:
      append_field(line, "held_ms", ev.held_ms);
      break;
    case pool_event_kind::timed_out:
      append_field(line, "waited_ms", ev.waited_ms);
      break;
  }
  line += '}';
  return line;
}

ordered_json status_fields(const pool_status& st) {
  ordered_json pools = ordered_json::array();
  for (auto& view : st.pools) {
    ordered_json running = ordered_json::array();
    for (auto& r : view.running)
      running.push_back(ordered_json{{"holder", r.holder},
                                     {"session", r.session},
                                     {"kind", to_string(r.kind)},
                                     {"held_ms", r.held_ms},
                                     {"lent", r.lent},
                                     {"detached", r.detached}});
    ordered_json queued = ordered_json::array();
    for (auto& q : view.queued)
      queued.push_back(ordered_json{{"holder", q.holder},
                                    {"session", q.session},
                                    {"position", q.position},
                                    {"waited_ms", q.waited_ms}});
    pools.push_back(ordered_json{
      {"key", view.key}, {"running", running}, {"queued", queued}});
  }
  return ordered_json{
    {"mode", st.mode}, {"max_parallel", st.max_parallel}, {"pools", pools}};
}

bool blank(const char* first, size_t size) {
  for (size_t i = 0; i < size; ++i)
    if (first[i] != ' ' && first[i] != '\t' && first[i] != '\r')
      return false;
  return true;
}

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
         || blocked.size() >= max_open_requests || status_open;
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
  auto seq = next_seq;
  try {
    handle_line(first, size);
  } catch (const std::exception& e) {
    spdlog::error("connection {}: a request failed unexpectedly: {}",
                  connection, e.what());
    std::string id = "null";
    if (next_seq == seq) {
      seq = open_slot(id);
    } else if (auto i = blocked.find(seq); i != blocked.end()) {
      id = i->second.id;
    }
    waiting_acquires.erase(seq);
    if (unanswered(seq))
      fail(seq, id, errc::bad_request,
           "the request could not be handled: " + excerpt(e.what()));
  }
}

void bridge_state::handle_line(const char* first, size_t size) {
  if (size > 0 && first[size - 1] == '\r')
    --size;
  // Blank lines carry no request; harnesses often end a batch with one.
  if (blank(first, size))
    return;
  auto parsed = parse_line(first, size);
  if (!parsed.read.ok()) {
    auto seq = open_slot("null");
    fail(seq, "null", errc::bad_request, parse_message(parsed.read));
    return;
  }
  auto& req = parsed.value;
  if (!req.is_object()) {
    auto seq = open_slot("null");
    fail(seq, "null", errc::bad_request,
         "a request must be a JSON object, got "
           + std::string{req.type_name()});
    return;
  }
  std::string id = "null";
  std::string id_problem;
  auto deep_field
    = parsed.read.skipped.empty() ? std::string{} : parsed.read.skipped.front();
  auto too_deep = parsed.read.skipped_any;
  if (auto i = req.find("id"); too_deep && deep_field == "id")
    id_problem = "field \"id\" nests deeper than " + std::to_string(max_nesting)
                 + " levels";
  else if (i == req.end() || i->is_null())
    id_problem = "missing field \"id\"";
  else if (i->is_number() || i->is_string())
    id = i->is_number_float() && !parsed.id_text.empty()
           ? parsed.id_text
           : i->dump(-1, ' ', false, json::error_handler_t::replace);
  else
    id_problem
      = "field \"id\" must be a number or a string, got " + quote_value(*i);
  if (too_deep && id_problem.empty()) {
    auto seq = open_slot(id);
    std::string where = deep_field.empty()
                          ? std::string{}
                          : " in field " + quote_text(deep_field);
    fail(seq, id, errc::bad_request,
         "JSON nested deeper than " + std::to_string(max_nesting) + " levels"
           + where + "; the request was not read");
    return;
  }
  std::string op;
  std::string op_problem;
  if (auto i = req.find("op"); i == req.end() || i->is_null())
    op_problem = "missing field \"op\"";
  else if (!i->is_string())
    op_problem = "field \"op\" must be a string, got " + quote_value(*i);
  else
    op = i->get<std::string>();
  bool is_acquire = op_problem.empty() && id_problem.empty() && op == "acquire";
  std::string holder;
  if (is_acquire)
    if (auto i = req.find("holder"); i != req.end() && i->is_string())
      holder = i->get<std::string>();
  auto seq = open_slot(id, holder, is_acquire);
  if (!op_problem.empty() || !id_problem.empty()) {
    fail(seq, id, errc::bad_request,
         id_problem.empty() ? op_problem : id_problem);
    return;
  }
  auto on_error = [this, seq, id](caf::error& err) {
    if (unanswered(seq))
      fail(seq, id, err);
  };
  try {
    if (op == "hello") {
      std::string line = "{\"id\":" + id
                         + ",\"ok\":true,\"version\":\"" TASKFORCE_VERSION
                           "\",\"protocol\":"
                         + std::to_string(protocol_version)
                         + ",\"config\":" + pool_config_json(config) + "}";
      answer(seq, std::move(line));
    } else if (op == "acquire") {
      acquire_request x;
      x.session = need_string(req, "session");
      x.holder = need_string(req, "holder");
      x.kind = need_kind(req);
      x.child_session = opt_string(req, "child_session");
      x.parent = opt_string(req, "parent");
      x.tool = opt_string(req, "tool");
      x.detach = opt_flag(req, "detach");
      x.connection = connection;
      waiting_acquires.emplace(seq, id);
      self->request(pool, caf::infinite, acquire_atom::value, std::move(x))
        .then(
          [this, seq, id](grant& g) {
            if (waiting_acquires.erase(seq) > 0)
              answer(seq, grant_line(id, g));
          },
          [this, seq, id](caf::error& err) {
            if (waiting_acquires.erase(seq) > 0)
              fail(seq, id, err);
          });
    } else if (op == "adopt") {
      adopt_request x;
      x.session = need_string(req, "session");
      x.holder = need_string(req, "holder");
      x.child_session = need_string(req, "child_session");
      x.detach = opt_flag(req, "detach");
      x.connection = connection;
      self->request(pool, reply_timeout, adopt_atom::value, std::move(x))
        .then(
          [this, seq, id](grant& g) {
            if (unanswered(seq))
              answer(seq, grant_line(id, g));
          },
          on_error);
    } else if (op == "release") {
      auto holder = need_string(req, "holder");
      auto reason = need_reason(req);
      self->request(pool, reply_timeout, release_atom::value, holder, reason)
        .then(
          [this, seq, id](bool released) {
            if (unanswered(seq))
              answer(seq, released_line(id, released));
          },
          on_error);
    } else if (op == "bind") {
      auto holder = need_string(req, "holder");
      auto child = need_string(req, "child_session");
      self->request(pool, reply_timeout, bind_atom::value, holder, child)
        .then(
          [this, seq, id](bool released) {
            if (unanswered(seq))
              answer(seq, released_line(id, released));
          },
          on_error);
    } else if (auto control_op = control::control_op_named(op)) {
      to_control(seq, id, *control_op, req);
    } else if (op == "idle" || op == "end") {
      auto session = need_string(req, "session");
      // A child session that ended interrupts the managed task it ran.
      if (op == "end" && control)
        self->send(control, end_atom_v, session);
      auto reply = [this, seq, id](std::vector<std::string>& holders) {
        if (unanswered(seq))
          answer(seq, ok_line(id, ordered_json{{"released", holders}}));
      };
      if (op == "idle")
        self->request(pool, reply_timeout, caf::idle_atom::value, session)
          .then(reply, on_error);
      else
        self->request(pool, reply_timeout, end_atom::value, session)
          .then(reply, on_error);
    } else if (op == "status") {
      // A status answer lists every holder (names of any length), so one
      // pipelined burst of them could outgrow any output bound: input
      // waits while one is being answered.
      status_open = true;
      self->request(pool, reply_timeout, status_atom::value)
        .then(
          [this, seq, id](pool_status& st) {
            status_open = false;
            if (unanswered(seq))
              answer(seq, ok_line(id, status_fields(st)));
          },
          [this, on_error](caf::error& err) {
            status_open = false;
            on_error(err);
          });
    } else if (op == "subscribe") {
      if (control)
        self
          ->request(control, reply_timeout, subscribe_atom_v, caf::actor{self})
          .then([](bool) {}, [](caf::error&) {});
      self->request(pool, reply_timeout, subscribe_atom::value, connection)
        .then(
          [this, seq, id](bool ok) {
            subscribed = subscribed || ok;
            if (unanswered(seq))
              answer(seq, ok_line(id, ordered_json{{"subscribed", true}}));
          },
          on_error);
    } else {
      fail(seq, id, errc::bad_request, unknown_op_message(op));
    }
  } catch (const bad_field& e) {
    waiting_acquires.erase(seq);
    fail(seq, id, errc::bad_request, e.what());
  }
}

void bridge_state::to_control(uint64_t seq, const std::string& id,
                              control::control_op op, const json& req) {
  if (!control) {
    answer(seq, error_line(id, "unavailable",
                           std::string{control::to_string(op)}
                             + " needs a repository: start the server "
                               "inside a git repository, or with --repo "
                               "DIR"));
    return;
  }
  auto x = control::decode_request(op, req);
  self->request(control, reply_timeout, control_atom_v, std::move(x))
    .then(
      [this, seq, id](control_answer& a) {
        if (!unanswered(seq))
          return;
        if (!a.ok) {
          answer(seq, error_line(id, a.code.c_str(), a.message));
          return;
        }
        // The fields come as one object's text: spliced after "ok".
        std::string line = "{\"id\":" + id + ",\"ok\":true";
        append_members(line, a.fields);
        line += '}';
        answer(seq, std::move(line));
      },
      [this, seq, id](caf::error& err) {
        if (unanswered(seq))
          answer(seq, error_line(id, "unavailable",
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
  auto seq = next_seq++;
  blocked.emplace(seq,
                  response_slot{std::move(id), {}, acquire, std::move(holder)});
  return seq;
}

void bridge_state::on_queued(const std::string& holder) {
  for (auto i = blocked.begin(); i != blocked.end(); ++i) {
    auto& slot = i->second;
    if (slot.acquire && slot.line.empty() && slot.holder == holder) {
      // A queued acquire answers when granted; later answers go first.
      blocked.erase(i);
      drain();
      maybe_finish();
      pump();
      return;
    }
  }
}

void bridge_state::drain() {
  while (!blocked.empty() && !blocked.begin()->second.line.empty()) {
    write(blocked.begin()->second.line);
    blocked.erase(blocked.begin());
  }
}

bool bridge_state::unanswered(uint64_t seq) const {
  auto i = blocked.find(seq);
  return i != blocked.end() && i->second.line.empty();
}

void bridge_state::answer(uint64_t seq, std::string line) {
  if (auto i = blocked.find(seq); i != blocked.end()) {
    i->second.line = std::move(line);
  } else if (blocked.empty() || blocked.begin()->first > seq) {
    // A granted queued acquire with nothing unanswered before it goes out at
    // once.
    write(line);
    return;
  } else {
    // A granted acquire waits behind earlier requests still unanswered.
    blocked.emplace(seq, response_slot{{}, std::move(line), true, {}});
  }
  drain();
  maybe_finish();
  pump();
}

void bridge_state::fail(uint64_t seq, const std::string& id, errc code,
                        const std::string& message) {
  answer(seq, error_line(id, to_string(code), message));
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
  write(event_line(ev));
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
  std::string line = "{\"event\":";
  append_string(line, ev.kind);
  append_members(line, ev.fields);
  line += '}';
  write(line);
}

void bridge_state::drop_subscription() {
  subscribed = false;
  auto pending = pending_output();
  std::string line = "{\"event\":\"unsubscribed\",\"reason\":\"slow_reader\"";
  append_field(line, "pending_bytes", pending);
  append_field(line, "limit_bytes", max_subscriber_backlog);
  line += '}';
  write(line);
  spdlog::warn("connection {}: {} bytes of output unread (limit {}); its "
               "subscription to every event is dropped",
               connection, pending, max_subscriber_backlog);
}

void bridge_state::write(const std::string& line) {
  if (!sink)
    return; // nobody reads any more
  out += line;
  out += '\n';
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
  if (finished || !closing || !detached || !blocked.empty())
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
  std::vector<std::pair<uint64_t, std::string>> open;
  for (auto& [seq, slot] : blocked)
    if (slot.line.empty())
      open.emplace_back(seq, slot.id);
  for (auto& [seq, id] : open)
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
