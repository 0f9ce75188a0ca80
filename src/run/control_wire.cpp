#include "src/run/control_wire.hpp"

#include <nlohmann/json.hpp>

#include "src/net/secret.hpp"
#include "src/text/file.hpp"
#include "src/text/json_reader.hpp"

namespace fs = std::filesystem;

namespace taskforce::run {

namespace {

const char* verb_names[]
  = {"approve", "reject", "answer", "send", "broadcast", "add"};

const char* answer_names[]
  = {"accepted", "refused", "failed", "elsewhere", "unauthorized"};

/// A string member of `j`, or empty; false when present but not a string.
bool string_at(const nlohmann::json& j, const char* key, std::string& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null())
    return true;
  if (!it->is_string())
    return false;
  out = it->get<std::string>();
  return true;
}

bool read_object(std::string_view text, nlohmann::json& out) {
  if (text.size() > max_control_line)
    return false;
  json_read_options o;
  o.max_depth = 4;
  auto r = read_json(text.data(), text.data() + text.size(), out, o);
  return r.ok() && out.is_object();
}

} // namespace

const char* to_string(steer_verb x) {
  return verb_names[static_cast<size_t>(x)];
}

fs::path driver_file(const fs::path& root) {
  return root / ".taskforce" / "driver.json";
}

fs::path driver_socket(const fs::path& root) {
  return root / ".taskforce" / "driver.sock";
}

void write_driver_file(const fs::path& path, const driver_info& info) {
  nlohmann::json j{{"socket", info.socket},
                   {"token", info.token},
                   {"pid", info.pid},
                   {"run", info.run_id}};
  net::write_private_file(
    path,
    j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

std::optional<driver_info> read_driver_file(const fs::path& path) {
  auto text = read_file(path);
  if (!text)
    return std::nullopt;
  nlohmann::json j;
  if (!read_object(*text, j))
    return std::nullopt;
  driver_info info;
  auto pid = j.find("pid");
  if (pid != j.end() && pid->is_number_integer())
    info.pid = pid->get<int64_t>();
  if (!string_at(j, "socket", info.socket) || info.socket.empty()
      || info.socket.front() != '/' || info.pid <= 0
      || !string_at(j, "token", info.token) || info.token.empty()
      || !string_at(j, "run", info.run_id))
    return std::nullopt;
  return info;
}

std::string new_control_token() {
  return net::new_token();
}

std::string encode_request(const control_request& r) {
  nlohmann::json j{
    {"token", r.token},        {"verb", to_string(r.request.verb)},
    {"run", r.request.run_id}, {"task", r.request.task},
    {"text", r.request.text},  {"file", r.request.file}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
         + "\n";
}

std::optional<control_request> decode_request(std::string_view line,
                                              std::string& error) {
  nlohmann::json j;
  if (line.size() > max_control_line) {
    error = "the request is longer than " + std::to_string(max_control_line)
            + " bytes";
    return std::nullopt;
  }
  if (!read_object(line, j)) {
    error = "the request is not a JSON object";
    return std::nullopt;
  }
  control_request r;
  std::string verb;
  if (!string_at(j, "token", r.token) || !string_at(j, "verb", verb)
      || !string_at(j, "run", r.request.run_id)
      || !string_at(j, "task", r.request.task)
      || !string_at(j, "text", r.request.text)
      || !string_at(j, "file", r.request.file)) {
    error = "the request has a field that is not a string";
    return std::nullopt;
  }
  for (size_t i = 0; i < std::size(verb_names); ++i)
    if (verb == verb_names[i]) {
      r.request.verb = static_cast<steer_verb>(i);
      return r;
    }
  error = "unknown verb \"" + verb + "\"";
  return std::nullopt;
}

std::string encode_verdict(control_answer answer, const std::string& message) {
  nlohmann::json j{{"outcome", answer_names[static_cast<size_t>(answer)]},
                   {"message", message}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
         + "\n";
}

std::optional<std::pair<control_answer, std::string>>
decode_verdict(std::string_view line) {
  nlohmann::json j;
  if (!read_object(line, j))
    return std::nullopt;
  std::string outcome, message;
  if (!string_at(j, "outcome", outcome) || !string_at(j, "message", message))
    return std::nullopt;
  for (size_t i = 0; i < std::size(answer_names); ++i)
    if (outcome == answer_names[i])
      return std::make_pair(static_cast<control_answer>(i), message);
  return std::nullopt;
}

} // namespace taskforce::run
