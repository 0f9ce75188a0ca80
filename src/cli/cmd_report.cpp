// `taskforce report TEXT`: from inside a worker, a message up to the run.
#include <iostream>
#include <iterator>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/steer.hpp"
#include "src/store/mailbox.hpp"

namespace taskforce::cli {

const char* report_help
  = "usage: taskforce report TEXT...\n"
    "       taskforce report -        (the text from standard input)\n\n"
    "Run inside a worker (or gate) process: records TEXT (the words joined\n"
    "by spaces) as a report from its task to the run, shown by\n"
    "taskforce logs TASK. At most 64 KiB. The task comes from\n"
    "TASKFORCE_RUN_ID, TASKFORCE_TASK_ID and TASKFORCE_REPO, which taskforce\n"
    "sets for every worker; outside a worker report exits 2. Works whether\n"
    "or not a process drives the run.\n";

namespace {

/// The most a report may hold.
constexpr size_t report_limit = 64 * 1024;

} // namespace

int run_report_command(const std::vector<std::string>& argv,
                       const global_options&) {
  args parsed(argv, {}, {});
  auto& words = parsed.positionals();
  std::string text;
  if (words.size() == 1 && words[0] == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin),
                std::istreambuf_iterator<char>());
  } else {
    for (auto& w : words)
      text += (text.empty() ? "" : " ") + w;
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw usage_error("report needs a TEXT (or - to read it from standard "
                      "input)");
  if (text.size() > report_limit)
    throw usage_error("a report holds at most 64 KiB; this one has "
                      + std::to_string(text.size()) + " bytes");
  auto w = worker_environment("report");
  auto db = open_worker_ledger(w, "report");
  store::new_mail m;
  m.run_id = w.run_id;
  m.task_id = w.task_id;
  m.kind = store::mail_kind::report;
  m.text = text;
  m.attempt = w.attempt;
  auto row = store::mailbox{db}.post(m, store::wall_clock_ms());
  std::cout << "report " << row.id << " recorded for task " << w.task_id
            << " of run " << w.run_id << '\n';
  return exit_ok;
}

} // namespace taskforce::cli
