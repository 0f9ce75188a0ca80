// A small argument parser for subcommands: `--name value`, `--name=value`,
// boolean flags and positionals. Anything unknown is a usage_error that
// names the nearest known option.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace taskforce::cli {

/// The options every command takes besides its own (`taskforce --help`).
extern const std::vector<std::string> global_option_names;

/// ` (did you mean "X"?)` for the candidate nearest to `word` (a typo of a
/// command or an option), or "" when none is near.
std::string did_you_mean(const std::string& word,
                         const std::vector<std::string>& candidates);

/// The usage_error message for `arg`, an option no one takes: `unknown
/// option --confg (did you mean "--config"?)`; `known` are the options of
/// the command it was given to.
std::string unknown_option_message(const std::string& arg,
                                   const std::vector<std::string>& known);

/// Parsed arguments of one subcommand.
class args {
 public:
  /// Parses `argv`; `valued` take a value, `flags` do not. Throws
  /// usage_error naming the offending argument (and, for an unknown option,
  /// the nearest one known).
  args(const std::vector<std::string>& argv, std::set<std::string> valued,
       std::set<std::string> flags);

  /// Whether the boolean flag `name` (e.g. "--json") was given.
  bool flag(const std::string& name) const;

  /// The value of `name`, or `fallback` when absent.
  std::string value(const std::string& name,
                    const std::string& fallback = "") const;

  /// Whether the valued option `name` was given.
  bool has(const std::string& name) const;

  /// Every value of the valued option `name`, in the order given (an
  /// option that may repeat, e.g. `--root A --root B`).
  std::vector<std::string> all(const std::string& name) const;

  /// The value of `name` as a positive integer; throws usage_error.
  uint64_t positive(const std::string& name, uint64_t fallback) const;

  /// The positional arguments in order.
  const std::vector<std::string>& positionals() const {
    return positionals_;
  }

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::pair<std::string, std::string>> given_;
  std::set<std::string> flags_;
  std::vector<std::string> positionals_;
};

} // namespace taskforce::cli
