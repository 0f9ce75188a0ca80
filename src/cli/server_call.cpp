#include "src/cli/server_call.hpp"

#include <nlohmann/json.hpp>

#include "src/net/endpoint.hpp"
#include "src/net/user_server.hpp"

namespace taskforce::cli {

using ordered = nlohmann::ordered_json;

control_outcome refused_outcome(std::string code, std::string message) {
  control_outcome o;
  o.code = std::move(code);
  o.message = std::move(message);
  return o;
}

std::optional<control_outcome> ask_server(const std::filesystem::path& top,
                                          control::control_op op,
                                          const nlohmann::json& req,
                                          std::chrono::milliseconds patience) {
  auto line = req;
  line["op"] = control::to_string(op);
  if (!line.contains("id"))
    line["id"] = 1;
  std::string response;
  try {
    response
      = net::request_once(net::endpoint_file(top), line.dump(), patience);
  } catch (const net::endpoint_error& e) {
    if (e.code() == net::endpoint_errc::no_server)
      return std::nullopt;
    return refused_outcome("unavailable", e.what());
  }
  return outcome_of(response);
}

control_outcome outcome_of(const std::string& response) {
  auto answer = ordered::parse(response, nullptr, false);
  if (!answer.is_object())
    return refused_outcome(
      "unavailable", "the server's answer is not a JSON object: " + response);
  if (answer.value("ok", false)) {
    answer.erase("id");
    answer.erase("ok");
    control_outcome o;
    o.ok = true;
    o.fields = answer.dump();
    return o;
  }
  auto error = answer.value("error", ordered::object());
  return refused_outcome(
    error.value("code", "unavailable"),
    error.value("message", "the server refused: " + response));
}

namespace {

std::optional<control_outcome>
user_call(const nlohmann::json& req, const net::user_server_options& opts,
          std::chrono::steady_clock::time_point deadline) {
  auto start = opts.start;
  try {
    return outcome_of(net::user_request(opts, req.dump(), deadline));
  } catch (const net::endpoint_error& e) {
    if (!start && e.code() == net::endpoint_errc::no_server)
      return std::nullopt;
    throw;
  }
}

} // namespace

std::optional<control_outcome>
ask_user_server(nlohmann::json req, bool start,
                std::chrono::steady_clock::time_point deadline) {
  if (!req.contains("id"))
    req["id"] = 1;
  net::user_server_options opts;
  opts.start = start;
  return user_call(req, opts, deadline);
}

std::optional<control_outcome>
acquire_from_user_server(nlohmann::json req, bool start,
                         std::chrono::steady_clock::time_point deadline) {
  if (!req.contains("id"))
    req["id"] = 1;
  net::user_server_options opts;
  opts.start = start;
  nlohmann::json release{{"id", "give-up"},
                         {"op", "release"},
                         {"holder", req.value("holder", "")},
                         {"reason", "aborted"}};
  opts.give_up_line = release.dump();
  return user_call(req, opts, deadline);
}

} // namespace taskforce::cli
