#include "src/protocol/encode.hpp"

#include <nlohmann/json.hpp>

#include "src/protocol/request.hpp"

namespace taskforce::protocol {

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

/// `{"id":<id>,"ok":true` followed by the members of `fields` and `}`.
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

} // namespace

std::string hello_line(const std::string& id, const pool_config& cfg) {
  return "{\"id\":" + id
         + ",\"ok\":true,\"version\":\"" TASKFORCE_VERSION "\",\"protocol\":"
         + std::to_string(version) + ",\"config\":" + pool_config_json(cfg)
         + "}";
}

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

std::string tied_line(const std::string& id, const std::string& holder) {
  return ok_line(
    id, ordered_json{{"holder", holder.empty() ? ordered_json(nullptr)
                                               : ordered_json(holder)}});
}

std::string holders_line(const std::string& id,
                         const std::vector<std::string>& holders) {
  return ok_line(id, ordered_json{{"released", holders}});
}

std::string status_line(const std::string& id, const pool_status& st) {
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
  return ok_line(id, ordered_json{{"mode", st.mode},
                                  {"max_parallel", st.max_parallel},
                                  {"pools", pools}});
}

std::string subscribed_line(const std::string& id) {
  return "{\"id\":" + id + ",\"ok\":true,\"subscribed\":true}";
}

std::string error_line(const std::string& id, const std::string& code,
                       const std::string& message) {
  ordered_json error{{"code", code}, {"message", message}};
  return "{\"id\":" + id + ",\"ok\":false,\"error\":"
         + error.dump(-1, ' ', false, json::error_handler_t::replace) + "}";
}

std::string control_line(const std::string& id, const control_answer& a) {
  if (!a.ok)
    return error_line(id, a.code, a.message);
  // The fields come as one object's text: spliced after "ok".
  std::string line = "{\"id\":" + id + ",\"ok\":true";
  append_members(line, a.fields);
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

std::string control_event_line(const control_event& ev) {
  std::string line = "{\"event\":";
  append_string(line, ev.kind);
  append_members(line, ev.fields);
  line += '}';
  return line;
}

std::string unsubscribed_line(uint64_t pending, uint64_t limit) {
  std::string line = "{\"event\":\"unsubscribed\",\"reason\":\"slow_reader\"";
  append_field(line, "pending_bytes", pending);
  append_field(line, "limit_bytes", limit);
  line += '}';
  return line;
}

} // namespace taskforce::protocol
