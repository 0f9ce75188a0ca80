// The `taskforce` command: global options, the subcommand table, exit codes.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/config/config.hpp"

namespace taskforce::cli {

/// Exit statuses (documented in docs/cli.md): success, the work failed or
/// paused, bad input.
constexpr int exit_ok = 0;
constexpr int exit_failed = 1;
constexpr int exit_usage = 2;

/// Bad input or usage: printed on standard error, exit 2.
class usage_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Options every command accepts.
struct global_options {
  /// --config FILE; empty = the repository's .taskforce/config.json or the
  /// built-in defaults.
  std::string config_file;
  /// --repo DIR; empty = the git repository containing the current directory.
  std::string repo;
  std::string log_level;
};

/// A subcommand: its name, a one-line summary, its help text and its entry.
struct command {
  const char* name;
  const char* summary;
  const char* help;
  int (*run)(const std::vector<std::string>& args, const global_options& opts);
};

/// Every subcommand, in the order `taskforce --help` lists them.
const std::vector<command>& commands();

/// The entry point of the `taskforce` executable.
int main(int argc, char** argv);

/// The top-level directory of the git repository containing `start` (or
/// the current directory); nullopt outside a repository.
std::optional<std::string> find_repository(const std::string& start);

/// The repository of `opts`: --repo, else the one around the current
/// directory. Throws usage_error when there is none.
std::string repository_of(const global_options& opts);

/// The effective config of `opts`: --config FILE, else
/// `<repo>/.taskforce/config.json` when it exists, else the defaults.
/// Throws config_error.
config effective_config(const global_options& opts);

} // namespace taskforce::cli
