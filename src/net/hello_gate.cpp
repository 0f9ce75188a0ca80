#include "src/net/hello_gate.hpp"

#include <nlohmann/json.hpp>

#include "src/net/secret.hpp"
#include "src/text/json_reader.hpp"

namespace taskforce::net {

namespace {

using json = nlohmann::json;
using ordered_json = nlohmann::ordered_json;

std::string refusal(const json& id, const std::string& message) {
  ordered_json r{{"id", id},
                 {"ok", false},
                 {"error", {{"code", "unauthorized"}, {"message", message}}}};
  return r.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string first_hello(const std::string& hint) {
  return "the first request on a TCP connection must be "
         "{\"op\":\"hello\",\"token\":…} with the server's token (see "
         + hint + "); closing the connection";
}

} // namespace

hello_verdict check_hello(std::string_view line, std::string_view token,
                          const std::string& hint) {
  if (!line.empty() && line.back() == '\r')
    line.remove_suffix(1);
  json req;
  json_read_options o;
  o.max_depth = 8;
  if (line.size() > max_hello_bytes
      || !read_json(line.data(), line.data() + line.size(), req, o).ok()
      || !req.is_object())
    return {false, refusal(nullptr, first_hello(hint))};
  json id = nullptr;
  if (auto i = req.find("id");
      i != req.end() && (i->is_number() || i->is_string()))
    id = *i;
  auto op = req.find("op");
  if (op == req.end() || *op != "hello")
    return {false, refusal(id, first_hello(hint))};
  auto given = req.find("token");
  if (given == req.end() || !given->is_string())
    return {false, refusal(id, "hello must carry the server's \"token\" (see "
                                 + hint + "); closing the connection")};
  if (!same_token(given->get_ref<const std::string&>(), token))
    return {false, refusal(id, "wrong token (see " + hint
                                 + "); closing the connection")};
  return {true, {}};
}

std::string hello_too_long(const std::string& hint) {
  return refusal(nullptr, "the first line is longer than "
                            + std::to_string(max_hello_bytes) + " bytes; "
                            + first_hello(hint));
}

std::string hello_too_slow(const std::string& hint) {
  return refusal(nullptr, "no hello in time; " + first_hello(hint));
}

} // namespace taskforce::net
