// The subcommand table. Each command lives in its own file, cmd_<name>.cpp.
#include "src/cli/cli.hpp"

namespace taskforce::cli {

int run_config_command(const std::vector<std::string>&, const global_options&);
extern const char* config_help;
int run_plan_command(const std::vector<std::string>&, const global_options&);
extern const char* plan_help;

const std::vector<command>& commands() {
  static const std::vector<command> table{
    {"config", "check a config file and print the effective config",
     config_help, run_config_command},
    {"plan", "parse a task file and print its schedule, running nothing",
     plan_help, run_plan_command},
  };
  return table;
}

} // namespace taskforce::cli
