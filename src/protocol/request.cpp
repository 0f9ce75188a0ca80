#include "src/protocol/request.hpp"

#include <algorithm>
#include <exception>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/control/wire.hpp"
#include "src/protocol/fields.hpp"
#include "src/text/edit_distance.hpp"
#include "src/text/json_reader.hpp"

namespace taskforce::protocol {

namespace {

using json = nlohmann::json;

constexpr const char* known_ops
  = "hello, acquire, adopt, release, bind, child_started, idle, end, status, "
    "subscribe";

/// Longer names get no suggestion (an edit distance is quadratic).
constexpr size_t max_name_for_suggestion = 64;

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

bool blank(const char* first, size_t size) {
  for (size_t i = 0; i < size; ++i)
    if (first[i] != ' ' && first[i] != '\t' && first[i] != '\r')
      return false;
  return true;
}

struct pool_op {
  const char* name;
  op_kind kind;
};

constexpr pool_op pool_ops[] = {
  {"hello", op_kind::hello},   {"acquire", op_kind::acquire},
  {"adopt", op_kind::adopt},   {"release", op_kind::release},
  {"bind", op_kind::bind},     {"child_started", op_kind::child_started},
  {"idle", op_kind::idle},     {"end", op_kind::end},
  {"status", op_kind::status}, {"subscribe", op_kind::subscribe},
};

/// Reads the fields of the operation `d.op` from `req`; throws bad_field.
void read_fields(decoded& d, const json& req) {
  switch (d.op) {
    case op_kind::hello:
    case op_kind::status:
    case op_kind::subscribe: break;
    case op_kind::acquire: {
      auto& x = d.acquire_req;
      x.session = need_string(req, "session");
      x.holder = need_string(req, "holder");
      x.kind = need_kind(req);
      x.child_session = opt_string(req, "child_session");
      x.parent = opt_string(req, "parent");
      x.tool = opt_string(req, "tool");
      x.detach = opt_flag(req, "detach");
      break;
    }
    case op_kind::adopt: {
      auto& x = d.adopt_req;
      x.session = need_string(req, "session");
      x.holder = need_string(req, "holder");
      x.child_session = need_string(req, "child_session");
      x.detach = opt_flag(req, "detach");
      break;
    }
    case op_kind::release:
      d.holder = need_string(req, "holder");
      d.reason = need_reason(req);
      break;
    case op_kind::bind:
      d.holder = need_string(req, "holder");
      d.child_session = need_string(req, "child_session");
      break;
    case op_kind::child_started:
      d.session = need_string(req, "session");
      d.child_session = need_string(req, "child_session");
      break;
    case op_kind::idle:
    case op_kind::end: d.session = need_string(req, "session"); break;
    case op_kind::control:
      d.control = control::decode_request(d.control.op, req);
      break;
  }
}

} // namespace

std::string unknown_op_message(const std::string& op) {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (auto& x : pool_ops)
      all.emplace_back(x.name);
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

decoded decode(const char* first, size_t size) {
  decoded d;
  if (size > 0 && first[size - 1] == '\r')
    --size;
  // Blank lines carry no request; harnesses often end a batch with one.
  if (blank(first, size)) {
    d.blank = true;
    return d;
  }
  // Read without the JSON library's hazards: a value nested deeper than
  // max_nesting is left out and noted, so no hostile nesting reaches code
  // that recurses per level (dump, copy, comparison).
  json req;
  std::string id_text;
  json_read_options opts;
  opts.max_depth = max_nesting;
  opts.skip_too_deep = true;
  opts.on_float = [&id_text](double&, const std::string& text,
                             const std::vector<std::string>& path) {
    if (path.size() == 1 && path[0] == "id")
      id_text = text;
  };
  auto read = read_json(first, first + size, req, opts);
  if (!read.ok()) {
    d.problem = parse_message(read);
    return d;
  }
  if (!req.is_object()) {
    d.problem
      = "a request must be a JSON object, got " + std::string{req.type_name()};
    return d;
  }
  std::string id_problem;
  auto deep_field = read.skipped.empty() ? std::string{} : read.skipped.front();
  if (auto i = req.find("id"); read.skipped_any && deep_field == "id")
    id_problem = "field \"id\" nests deeper than " + std::to_string(max_nesting)
                 + " levels";
  else if (i == req.end() || i->is_null())
    id_problem = "missing field \"id\"";
  else if (i->is_number() || i->is_string())
    d.id = i->is_number_float() && !id_text.empty()
             ? id_text
             : i->dump(-1, ' ', false, json::error_handler_t::replace);
  else
    id_problem
      = "field \"id\" must be a number or a string, got " + quote_value(*i);
  if (read.skipped_any && id_problem.empty()) {
    std::string where = deep_field.empty()
                          ? std::string{}
                          : " in field " + quote_text(deep_field);
    d.problem = "JSON nested deeper than " + std::to_string(max_nesting)
                + " levels" + where + "; the request was not read";
    return d;
  }
  std::string op;
  std::string op_problem;
  if (auto i = req.find("op"); i == req.end() || i->is_null())
    op_problem = "missing field \"op\"";
  else if (!i->is_string())
    op_problem = "field \"op\" must be a string, got " + quote_value(*i);
  else
    op = i->get<std::string>();
  if (!id_problem.empty() || !op_problem.empty()) {
    d.problem = id_problem.empty() ? op_problem : id_problem;
    return d;
  }
  if (op == "acquire") {
    d.acquire = true;
    if (auto i = req.find("holder"); i != req.end() && i->is_string())
      d.holder = i->get<std::string>();
  }
  for (auto& x : pool_ops)
    if (op == x.name) {
      d.known_op = true;
      d.op = x.kind;
    }
  if (!d.known_op) {
    if (auto control_op = control::control_op_named(op)) {
      d.known_op = true;
      d.op = op_kind::control;
      d.control.op = *control_op;
    } else {
      d.problem = unknown_op_message(op);
      return d;
    }
  }
  try {
    read_fields(d, req);
  } catch (const bad_field& e) {
    d.problem = e.what();
  } catch (const std::exception& e) {
    d.problem = "the request could not be handled: " + excerpt(e.what());
  }
  return d;
}

} // namespace taskforce::protocol
