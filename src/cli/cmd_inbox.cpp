// `taskforce inbox`: from inside a worker, the mail sent down to its task
// that it has not read yet.
#include <iostream>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/run_view.hpp"
#include "src/cli/steer.hpp"
#include "src/store/mailbox.hpp"

namespace taskforce::cli {

const char* inbox_help
  = "usage: taskforce inbox [--json]\n\n"
    "Run inside a worker (or gate) process: prints the messages (taskforce\n"
    "send, broadcast) and answers (taskforce answer) sent to its task that\n"
    "it has not read yet, oldest first, each under a line\n"
    "  [message 3 at 2026-12-01 17:07:22Z]\n"
    "and from then on they count as delivered: each is printed by exactly\n"
    "one inbox, also when several run at once. Prints nothing when there is\n"
    "nothing new. --json prints a JSON array of {\"id\", \"task\", \"kind\",\n"
    "\"direction\", \"text\", \"created_ms\", \"delivered_ms\", \"attempt\"}.\n"
    "The task comes from TASKFORCE_RUN_ID, TASKFORCE_TASK_ID and\n"
    "TASKFORCE_REPO, which taskforce sets for every worker; outside a worker\n"
    "inbox exits 2. Works whether or not a process drives the run.\n";

int run_inbox_command(const std::vector<std::string>& argv,
                      const global_options&) {
  args parsed(argv, {}, {"--json"});
  if (!parsed.positionals().empty())
    throw usage_error("inbox takes no arguments");
  auto w = worker_environment("inbox");
  auto db = open_worker_ledger(w, "inbox");
  // Delivered once this returns: whatever happens next, no other inbox
  // prints these again.
  auto mail = store::mailbox{db}.take_undelivered(
    w.run_id, w.task_id, store::wall_clock_ms(), w.attempt);
  if (parsed.flag("--json")) {
    std::cout << '[';
    for (size_t i = 0; i < mail.size(); ++i)
      std::cout << (i ? "," : "") << to_json_line(mail[i]);
    std::cout << "]\n";
    return exit_ok;
  }
  for (auto& m : mail) {
    std::cout << '[' << to_string(m.kind) << ' ' << m.id << " at "
              << format_time(m.created_ms) << "]\n"
              << m.text;
    if (m.text.empty() || m.text.back() != '\n')
      std::cout << '\n';
  }
  return exit_ok;
}

} // namespace taskforce::cli
