// `taskforce scripted-worker`: the hidden worker of the `scripted` backend.
// The worker actor starts it in the task's worktree; it performs one
// invocation of the JSON script (see src/worker/script.hpp).
#include <unistd.h>

#include <iostream>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/worker/script.hpp"

namespace taskforce::cli {

const char* scripted_worker_help
  = "usage: taskforce scripted-worker --script FILE --task ID "
    "--invocation N\n\n"
    "Performs invocation N (1-based) of task ID from the JSON script FILE in\n"
    "the current directory: writes and deletes files, prints, sleeps,\n"
    "reports, exits, hangs or crashes as the script says. Used by the\n"
    "`scripted` worker backend, for tests and the demo. Exit 2 on a bad\n"
    "script or a task the script does not cover.\n";

int run_scripted_worker_command(const std::vector<std::string>& argv,
                                const global_options&) {
  args parsed(argv, {"--script", "--task", "--invocation", "--join-group"},
              {"--hang-child", "--escape"});
  if (parsed.flag("--hang-child")) {
    // A child started by a hanging invocation: joins its parent's group
    // (or leaves it) and hangs too.
    if (parsed.has("--join-group"))
      ::setpgid(0, static_cast<pid_t>(parsed.positive("--join-group", 1)));
    hang_forever(parsed.flag("--escape"));
  }
  if (!parsed.positionals().empty())
    throw usage_error("scripted-worker takes no positional arguments");
  for (const char* required : {"--script", "--task", "--invocation"})
    if (!parsed.has(required))
      throw usage_error(std::string{"scripted-worker needs "} + required);
  auto invocation = parsed.positive("--invocation", 1);
  auto task = parsed.value("--task");
  worker_script script;
  try {
    script = load_worker_script(parsed.value("--script"));
  } catch (const script_error& e) {
    throw usage_error(e.what());
  }
  auto step = script.step_for(task, invocation);
  if (step == nullptr)
    throw usage_error("the script " + parsed.value("--script")
                      + " has no entry for task \"" + task
                      + "\" and no \"default\"");
  std::cerr << "scripted worker: task " << task << ", invocation " << invocation
            << std::endl;
  return perform_script_step(*step, current_executable());
}

} // namespace taskforce::cli
