#include "src/cli/args.hpp"

#include "src/time/duration.hpp"

#include <algorithm>

#include "src/cli/cli.hpp"
#include "src/text/edit_distance.hpp"

namespace taskforce::cli {

const std::vector<std::string> global_option_names{"--config", "--repo",
                                                   "--log-level"};

std::string did_you_mean(const std::string& word,
                         const std::vector<std::string>& candidates) {
  // A beginning that only one candidate has (`--fol` for `--follow`),
  // else the nearest by edit distance.
  auto bare = word.find_first_not_of('-');
  std::string found;
  if (bare != std::string::npos && word.size() - bare >= 3) {
    for (const auto& c : candidates) {
      if (c.size() <= word.size() || c.compare(0, word.size(), word) != 0)
        continue;
      if (!found.empty() && found != c) {
        found.clear();
        break;
      }
      found = c;
    }
  }
  // A guess keeps something of what was typed: `go` is not `bg`.
  if (found.empty() && word.size() > 1)
    found = nearest(
      word, candidates,
      std::min(std::max<size_t>(2, word.size() / 3), word.size() - 1));
  return found.empty() ? "" : " (did you mean \"" + found + "\"?)";
}

std::string unknown_option_message(const std::string& arg,
                                   const std::vector<std::string>& known) {
  auto name = arg.substr(0, arg.find('='));
  auto candidates = known;
  candidates.insert(candidates.end(), global_option_names.begin(),
                    global_option_names.end());
  candidates.emplace_back("--help");
  return "unknown option " + name + did_you_mean(name, candidates);
}

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
    } else if (flags.count(name) > 0) {
      if (eq != std::string::npos)
        throw usage_error("option " + name + " takes no value");
      flags_.insert(name);
    } else {
      std::vector<std::string> known(valued.begin(), valued.end());
      known.insert(known.end(), flags.begin(), flags.end());
      throw usage_error(unknown_option_message(arg, known));
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
  bool digits = !text.empty() && text.size() <= max_safe_digits;
  for (char c : text) {
    if (c < '0' || c > '9') {
      digits = false;
      break;
    }
    result = result * 10 + static_cast<uint64_t>(c - '0');
  }
  if (!digits || result == 0
      || result > static_cast<uint64_t>(max_safe_integer))
    throw usage_error(name + " must be a positive integer (at most 2^53-1), "
                      + "got \"" + text + "\"");
  return result;
}

} // namespace taskforce::cli
