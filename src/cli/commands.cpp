// The subcommand table. Each command lives in its own file, cmd_<name>.cpp.
#include "src/cli/cli.hpp"

namespace taskforce::cli {

int run_config_command(const std::vector<std::string>&, const global_options&);
extern const char* config_help;
int run_plan_command(const std::vector<std::string>&, const global_options&);
extern const char* plan_help;
int run_demo_command(const std::vector<std::string>&, const global_options&);
extern const char* demo_help;
int run_serve_command(const std::vector<std::string>&, const global_options&);
extern const char* serve_help;
int run_scripted_worker_command(const std::vector<std::string>&,
                                const global_options&);
extern const char* scripted_worker_help;

const std::vector<command>& commands() {
  static const std::vector<command> table{
    {"config", "check a config file and print the effective config",
     config_help, run_config_command},
    {"plan", "parse a task file and print its schedule, running nothing",
     plan_help, run_plan_command},
    {"demo", "five subagents admitted through the pool, two at a time",
     demo_help, run_demo_command},
    {"serve", "serve the pool over JSON lines (stdio or TCP)", serve_help,
     run_serve_command},
    // Hidden (empty summary): the worker process of the `scripted` backend.
    {"scripted-worker", "", scripted_worker_help,
     run_scripted_worker_command},
  };
  return table;
}

} // namespace taskforce::cli
