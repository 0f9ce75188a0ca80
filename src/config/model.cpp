#include "src/config/model.hpp"

#include <algorithm>
#include <cctype>

namespace taskforce {

bool is_model(std::string_view s) {
  bool blank = std::any_of(s.begin(), s.end(), [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
  });
  if (s.empty() || blank)
    return false;
  auto slash = s.find('/');
  if (slash == 0 || slash == std::string_view::npos || slash + 1 == s.size())
    return false;
  auto hash = s.find('#');
  if (hash == std::string_view::npos)
    return true;
  return hash > slash + 1 && hash + 1 < s.size()
         && s.find('#', hash + 1) == std::string_view::npos;
}

} // namespace taskforce
