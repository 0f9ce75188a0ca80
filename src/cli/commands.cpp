// The subcommand table. Each command lives in its own file, cmd_<name>.cpp.
#include "src/cli/cli.hpp"

namespace taskforce::cli {

int run_config_command(const std::vector<std::string>&, const global_options&);
extern const char* config_help;
int run_run_command(const std::vector<std::string>&, const global_options&);
extern const char* run_help;
int run_resume_command(const std::vector<std::string>&, const global_options&);
extern const char* resume_help;

const std::vector<command>& commands() {
  static const std::vector<command> table{
    {"config", "check a config file and print the effective config",
     config_help, run_config_command},
    {"run", "run a task file: worktrees, gates, merges", run_help,
     run_run_command},
    {"resume", "continue the latest unfinished run", resume_help,
     run_resume_command},
  };
  return table;
}

} // namespace taskforce::cli
