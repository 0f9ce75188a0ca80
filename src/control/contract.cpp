#include "src/control/contract.hpp"

#include <algorithm>
#include <set>

#include "src/control/error.hpp"

namespace taskforce::control {

namespace {

[[noreturn]] void refuse(const std::string& why) {
  throw control_error(control_errc::bad_request, why);
}

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
  });
}

bool has_control(const std::string& s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) {
    return c < 0x20 || c == 0x7f;
  });
}

void check_name(const char* field, const std::string& value) {
  if (blank(value))
    refuse(std::string{"the contract's "} + field + " is empty");
  if (value.size() > max_name_bytes)
    refuse(std::string{"the contract's "} + field + " is longer than "
           + std::to_string(max_name_bytes) + " bytes");
  if (has_control(value))
    refuse(std::string{"the contract's "} + field
           + " contains control characters");
}

void check_list(const char* field, const std::vector<std::string>& xs) {
  for (size_t i = 0; i < xs.size(); ++i)
    if (blank(xs[i]) || xs[i].find('\0') != std::string::npos)
      refuse(std::string{"the contract's "} + field + " entry "
             + std::to_string(i + 1) + " is empty");
}

} // namespace

void validate_contract(const bg_contract& c) {
  check_name("title", c.title);
  check_name("agent", c.agent);
  if (blank(c.prompt))
    refuse("the contract's prompt is empty");
  if (c.session && blank(*c.session))
    refuse("the contract's session is empty");
  check_list("roots", c.roots);
  check_list("locks", c.locks);
  for (auto& lock : c.locks)
    check_name("lock name", lock);
  check_list("deps", c.deps);
  check_list("validations", c.validations);
}

std::vector<std::string> unique_in_order(const std::vector<std::string>& xs) {
  std::vector<std::string> result;
  std::set<std::string> seen;
  for (auto& x : xs)
    if (seen.insert(x).second)
      result.push_back(x);
  return result;
}

} // namespace taskforce::control
