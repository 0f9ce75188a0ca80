#include "src/cli/args.hpp"

#include "src/cli/cli.hpp"

namespace taskforce::cli {

args::args(const std::vector<std::string>& argv, std::set<std::string> valued,
           std::set<std::string> flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const auto& arg = argv[i];
    if (arg == "--") {
      positionals_.insert(positionals_.end(), argv.begin() + i + 1, argv.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      positionals_.push_back(arg);
      continue;
    }
    auto eq = arg.find('=');
    auto name = arg.substr(0, eq);
    if (valued.count(name) > 0) {
      if (eq != std::string::npos) {
        values_[name] = arg.substr(eq + 1);
      } else if (i + 1 < argv.size()) {
        values_[name] = argv[++i];
      } else {
        throw usage_error("option " + name + " needs a value");
      }
      given_.emplace_back(name, values_[name]);
    } else if (flags.count(name) > 0 && eq == std::string::npos) {
      flags_.insert(name);
    } else {
      throw usage_error("unknown option " + arg);
    }
  }
}

bool args::flag(const std::string& name) const {
  return flags_.count(name) > 0;
}

bool args::has(const std::string& name) const {
  return values_.count(name) > 0;
}

std::vector<std::string> args::all(const std::string& name) const {
  std::vector<std::string> out;
  for (const auto& [key, value] : given_)
    if (key == name)
      out.push_back(value);
  return out;
}

std::string args::value(const std::string& name,
                        const std::string& fallback) const {
  auto i = values_.find(name);
  return i == values_.end() ? fallback : i->second;
}

uint64_t args::positive(const std::string& name, uint64_t fallback) const {
  if (!has(name))
    return fallback;
  const auto& text = values_.at(name);
  uint64_t result = 0;
  bool digits = !text.empty() && text.size() <= 15;
  for (char c : text) {
    if (c < '0' || c > '9') {
      digits = false;
      break;
    }
    result = result * 10 + static_cast<uint64_t>(c - '0');
  }
  if (!digits || result == 0)
    throw usage_error(name + " must be a positive integer, got \"" + text
                      + "\"");
  return result;
}

} // namespace taskforce::cli
