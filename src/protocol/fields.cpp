#include "src/protocol/fields.hpp"

#include <cmath>

#include "src/text/strings.hpp"
#include <nlohmann/json.hpp>

namespace taskforce::protocol {

using json = nlohmann::json;

namespace {

/// The first max_quoted_bytes of `text`, not splitting a UTF-8 character.
std::string head(const std::string& text) {
  size_t cut = max_quoted_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xc0) == 0x80)
    --cut;
  return text.substr(0, cut);
}

/// The largest integer a double holds exactly (JavaScript's safe limit).
constexpr uint64_t max_safe_integer = (uint64_t{1} << 53) - 1;

} // namespace

std::string excerpt(const std::string& text) {
  if (text.size() <= max_quoted_bytes)
    return text;
  return head(text) + "\xe2\x80\xa6 (" + std::to_string(text.size())
         + " bytes)";
}

std::string quote_text(const std::string& text, char quote) {
  if (text.size() <= max_quoted_bytes)
    return quote + text + quote;
  return quote + head(text) + "\xe2\x80\xa6" + quote + " ("
         + std::to_string(text.size()) + " bytes)";
}

std::string quote_value(const json& value) {
  return excerpt(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string need_string(const json& req, const std::string& key) {
  auto i = req.find(key);
  if (i == req.end() || i->is_null())
    throw bad_field("missing field " + in_quotes(key));
  if (!i->is_string())
    throw bad_field("field " + in_quotes(key) + " must be a string, got "
                    + quote_value(*i));
  auto value = i->get<std::string>();
  if (value.empty())
    throw bad_field("field " + in_quotes(key) + " must not be empty");
  return value;
}

std::string opt_string(const json& req, const std::string& key) {
  auto i = req.find(key);
  if (i == req.end() || i->is_null())
    return {};
  return need_string(req, key);
}

std::string opt_text(const json& req, const std::string& key) {
  auto i = req.find(key);
  if (i == req.end() || i->is_null())
    return {};
  if (!i->is_string())
    throw bad_field("field " + in_quotes(key) + " must be a string, got "
                    + quote_value(*i));
  return i->get<std::string>();
}

std::vector<std::string> opt_strings(const json& req, const std::string& key) {
  auto i = req.find(key);
  if (i == req.end() || i->is_null())
    return {};
  if (!i->is_array())
    throw bad_field("field " + in_quotes(key)
                    + " must be a list of strings, got " + quote_value(*i));
  std::vector<std::string> out;
  for (const auto& item : *i) {
    if (!item.is_string() || item.get<std::string>().empty())
      throw bad_field("field " + in_quotes(key)
                      + " must be a list of non-empty strings, got "
                      + quote_value(item) + " in it");
    out.push_back(item.get<std::string>());
  }
  return out;
}

bool opt_flag(const json& req, const std::string& key) {
  auto i = req.find(key);
  if (i == req.end() || i->is_null())
    return false;
  if (!i->is_boolean())
    throw bad_field("field " + in_quotes(key) + " must be true or false, got "
                    + quote_value(*i));
  return i->get<bool>();
}

uint64_t opt_count(const json& req, const std::string& key, uint64_t fallback) {
  auto i = req.find(key);
  if (i == req.end() || i->is_null())
    return fallback;
  auto refuse = [&] {
    return bad_field("field " + in_quotes(key)
                     + " must be a whole number from 0 to 2^53-1, got "
                     + quote_value(*i));
  };
  if (i->is_number_unsigned()) {
    auto x = i->get<uint64_t>();
    if (x > max_safe_integer)
      throw refuse();
    return x;
  }
  if (i->is_number_integer()) {
    auto x = i->get<int64_t>();
    if (x < 0)
      throw refuse();
    return static_cast<uint64_t>(x);
  }
  if (i->is_number_float()) {
    auto x = i->get<double>();
    if (!std::isfinite(x) || x < 0 || std::trunc(x) != x
        || x > static_cast<double>(max_safe_integer))
      throw refuse();
    return static_cast<uint64_t>(x);
  }
  throw refuse();
}

} // namespace taskforce::protocol
