// The subcommand table. Each command lives in its own file, cmd_<name>.cpp.
#include "src/cli/cli.hpp"

namespace taskforce::cli {

int run_config_command(const std::vector<std::string>&, const global_options&);
extern const char* config_help;
int run_plan_command(const std::vector<std::string>&, const global_options&);
extern const char* plan_help;
int run_run_command(const std::vector<std::string>&, const global_options&);
extern const char* run_help;
int run_resume_command(const std::vector<std::string>&, const global_options&);
extern const char* resume_help;
int run_status_command(const std::vector<std::string>&, const global_options&);
extern const char* status_help;
int run_list_command(const std::vector<std::string>&, const global_options&);
extern const char* list_help;
int run_logs_command(const std::vector<std::string>&, const global_options&);
extern const char* logs_help;
int run_diff_command(const std::vector<std::string>&, const global_options&);
extern const char* diff_help;
int run_abort_command(const std::vector<std::string>&, const global_options&);
extern const char* abort_help;
int run_discard_command(const std::vector<std::string>&, const global_options&);
extern const char* discard_help;
int run_clean_command(const std::vector<std::string>&, const global_options&);
extern const char* clean_help;
int run_approve_command(const std::vector<std::string>&, const global_options&);
extern const char* approve_help;
int run_reject_command(const std::vector<std::string>&, const global_options&);
extern const char* reject_help;
int run_answer_command(const std::vector<std::string>&, const global_options&);
extern const char* answer_help;
int run_send_command(const std::vector<std::string>&, const global_options&);
extern const char* send_help;
int run_broadcast_command(const std::vector<std::string>&,
                          const global_options&);
extern const char* broadcast_help;
int run_add_command(const std::vector<std::string>&, const global_options&);
extern const char* add_help;
int run_inbox_command(const std::vector<std::string>&, const global_options&);
extern const char* inbox_help;
int run_report_command(const std::vector<std::string>&, const global_options&);
extern const char* report_help;
int run_demo_command(const std::vector<std::string>&, const global_options&);
extern const char* demo_help;
int run_serve_command(const std::vector<std::string>&, const global_options&);
extern const char* serve_help;
int run_bg_command(const std::vector<std::string>&, const global_options&);
extern const char* bg_help;
int run_monitor_command(const std::vector<std::string>&, const global_options&);
extern const char* monitor_help;
int run_acquire_command(const std::vector<std::string>&, const global_options&);
extern const char* acquire_help;
int run_release_command(const std::vector<std::string>&, const global_options&);
extern const char* release_help;
int run_pool_command(const std::vector<std::string>&, const global_options&);
extern const char* pool_help;
int run_hook_command(const std::vector<std::string>&, const global_options&);
extern const char* hook_help;
int run_scripted_worker_command(const std::vector<std::string>&,
                                const global_options&);
extern const char* scripted_worker_help;

const std::vector<command>& commands() {
  static const std::vector<command> table{
    {"config", "check a config file and print the effective config",
     config_help, run_config_command},
    {"plan", "parse a task file and print its schedule, running nothing",
     plan_help, run_plan_command},
    {"run", "run a task file: worktrees, gates, merges", run_help,
     run_run_command},
    {"resume", "continue the latest unfinished run", resume_help,
     run_resume_command},
    {"status", "show where the latest run stands", status_help,
     run_status_command},
    {"list", "one line per run", list_help, run_list_command},
    {"logs", "a task's state, gate output and history", logs_help,
     run_logs_command},
    {"diff", "a task's changes as a patch", diff_help, run_diff_command},
    {"abort", "stop the latest unfinished run", abort_help, run_abort_command},
    {"discard", "remove a task's worktree and branch", discard_help,
     run_discard_command},
    {"clean", "list (--yes: remove) what runs that are over left behind",
     clean_help, run_clean_command},
    {"approve", "approve a task in review (merge it) or lift a hold",
     approve_help, run_approve_command},
    {"reject", "turn down a task in review or held: it is blocked", reject_help,
     run_reject_command},
    {"answer", "answer a blocked task: it runs again with the answer",
     answer_help, run_answer_command},
    {"send", "a message to a task's worker, read once", send_help,
     run_send_command},
    {"broadcast", "a message to every working task of the run", broadcast_help,
     run_broadcast_command},
    {"add", "add the tasks of a file to an unfinished run", add_help,
     run_add_command},
    {"inbox", "inside a worker: the messages sent to its task, read once",
     inbox_help, run_inbox_command},
    {"report", "inside a worker: record a message up to the run", report_help,
     run_report_command},
    {"demo", "a small project run end to end (--pool: the admission pool)",
     demo_help, run_demo_command},
    {"serve", "serve the pool over JSON lines (stdio or TCP)", serve_help,
     run_serve_command},
    {"bg", "managed background work: prepare, link, complete… (JSON)", bg_help,
     run_bg_command},
    {"monitor", "monitored processes: run, status, read, wait, kill",
     monitor_help, run_monitor_command},
    {"acquire", "take a permit of the per-user server (for scripts, hooks)",
     acquire_help, run_acquire_command},
    {"release", "give back a permit taken with acquire", release_help,
     run_release_command},
    {"pool", "the per-user server's pools: pool status (JSON)", pool_help,
     run_pool_command},
    {"hook", "a harness's hook: hook claude-code (one event on stdin)",
     hook_help, run_hook_command},
    // Hidden (empty summary): the worker process of the `scripted` backend.
    {"scripted-worker", "", scripted_worker_help, run_scripted_worker_command},
  };
  return table;
}

} // namespace taskforce::cli
