// Reading an enum back from the name its to_string() gives it.
#pragma once

#include <initializer_list>
#include <string_view>

namespace taskforce {

/// Sets `out` to the value of `all` whose to_string() is `name`; false
/// (and `out` untouched) when none is.
template<class Enum, class Values>
bool from_name(std::string_view name, const Values& all, Enum& out) {
  for (auto x : all)
    if (name == to_string(x)) {
      out = x;
      return true;
    }
  return false;
}

template<class Enum>
bool from_name(std::string_view name, std::initializer_list<Enum> all,
               Enum& out) {
  return from_name<Enum, std::initializer_list<Enum>>(name, all, out);
}

} // namespace taskforce
