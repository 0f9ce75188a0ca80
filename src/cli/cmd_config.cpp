// `taskforce config`: validates the config and prints the effective values.
#include <iostream>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"

namespace taskforce::cli {

const char* config_help
  = "usage: taskforce config [--config FILE]\n\n"
    "Validates the config (--config FILE, else .taskforce/config.json in the\n"
    "repository, else the built-in defaults) and prints every effective\n"
    "setting as JSON. Exit 2 names the key, the value and the rule broken.\n";

int run_config_command(const std::vector<std::string>& argv,
                       const global_options& opts) {
  args parsed(argv, {}, {});
  if (!parsed.positionals().empty())
    throw usage_error("config takes no arguments");
  std::cout << config_json(effective_config(opts)) << '\n';
  return exit_ok;
}

} // namespace taskforce::cli
