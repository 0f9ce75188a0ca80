// `taskforce monitor run|status|read|wait|kill`: monitored processes
// without a server, each command printing one JSON object. `run` hands the
// process to a detached supervisor (the hidden `monitor supervise`).
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/server_call.hpp"
#include "src/control/error.hpp"
#include "src/control/monitor_supervisor.hpp"
#include "src/git/repository.hpp"
#include "src/run/run_setup.hpp"
#include "src/store/ledger.hpp"
#include "src/time/duration.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace taskforce::cli {

const char* monitor_help
  = "usage: taskforce monitor run [--cwd DIR] [--wake-pattern REGEX]\n"
    "                             [--timeout-ms N] [--session S] [--] "
    "COMMAND...\n"
    "       taskforce monitor status [ID]\n"
    "       taskforce monitor read ID [--offset N] [--max N]\n"
    "       taskforce monitor wait ID [--timeout-ms N]\n"
    "       taskforce monitor kill ID\n\n"
    "Monitored processes: a command (a shell command line; several words\n"
    "are joined with spaces) run in its own process group by a detached\n"
    "supervisor, its output kept whole in .taskforce/logs/monitors/ID.log.\n"
    "  run     start it (cwd inside the repository; at most\n"
    "          control.maxMonitors live); --wake-pattern is an ECMAScript\n"
    "          regular expression searched in the output, --timeout-ms ends\n"
    "          the whole group after that long (0 = never)\n"
    "  status  one monitor, or all as {\"monitors\": [...]}\n"
    "  read    its output from byte --offset (default 0), at most --max\n"
    "          bytes (default and cap: control.maxOutputBytes)\n"
    "  wait    until it ends (\"exit\"), its wake pattern matched (\"ready\")\n"
    "          or --timeout-ms passed (\"timeout\", default 30000)\n"
    "  kill    end its whole process group, descendants included\n"
    "Each prints one JSON object; a monitor is {\"id\", \"command\", \"cwd\",\n"
    "\"wake_pattern\", \"timeout_ms\", \"session\", \"state\" (running, done,\n"
    "killed, timeout, failed, unavailable), \"exit_code\", \"pid\", "
    "\"owner\",\n"
    "\"live\", "
    "\"ready\", \"log_file\", \"reason\", \"created_ms\", \"updated_ms\"}.\n"
    "A refusal prints {\"error\": {\"code\", \"message\"}} and the message on\n"
    "standard error: exit 2 for bad input or an unknown monitor, 1 for\n"
    "the others (limit, unavailable). A monitor whose supervisor died is\n"
    "unavailable: its process is not controllable, and kill says so.\n";

namespace {

/// A non-negative integer option; `fallback` when absent.
int64_t count_option(const args& parsed, const std::string& name,
                     int64_t fallback) {
  if (!parsed.has(name))
    return fallback;
  auto text = parsed.value(name);
  if (text.empty() || text.size() > max_safe_digits
      || text.find_first_not_of("0123456789") != std::string::npos
      || std::stoll(text) > max_safe_integer)
    throw usage_error(name + " must be 0 or a positive integer (at most "
                      + "2^53-1), got \"" + text + "\"");
  return std::stoll(text);
}

control::monitor_place place_of(const global_options& opts) {
  auto top = fs::path{repository_of(opts)};
  return {top, run::state_dir(top) / store::ledger_file_name};
}

void print(const json& j) {
  std::cout << j.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
}

json monitor_json(const control::monitor_view& m) {
  return json::parse(control::to_json(m));
}

/// The one ID a command takes.
std::string the_id(const args& parsed, const char* verb) {
  if (parsed.positionals().size() != 2)
    throw usage_error(std::string{"monitor "} + verb
                      + " takes one monitor id (see taskforce monitor "
                        "--help)");
  return parsed.positionals()[1];
}

std::string own_program() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string{"taskforce"} : self.string();
}

/// Prints a refusal (its protocol code and message) and chooses the exit
/// status: 2 for bad input or an unknown monitor, 1 otherwise.
int refused(const std::string& code, const std::string& message) {
  print({{"error", {{"code", code}, {"message", message}}}});
  std::cerr << "taskforce: " << message << '\n';
  bool bad_input = code == "bad_request" || code == "not_found";
  return bad_input ? exit_usage : exit_failed;
}

int refused(const control::control_error& e) {
  return refused(to_string(e.code()), e.what());
}

int monitor_run(const std::vector<std::string>& argv,
                const global_options& opts) {
  args parsed(argv, {"--cwd", "--wake-pattern", "--timeout-ms", "--session"},
              {});
  auto& words = parsed.positionals();
  std::string command;
  for (size_t i = 1; i < words.size(); ++i)
    command += (i > 1 ? " " : "") + words[i];
  auto place = place_of(opts);
  auto cfg = effective_config(opts);
  auto m = control::check_monitor_spec(
    place.repository, command, parsed.value("--cwd"),
    parsed.value("--wake-pattern"), count_option(parsed, "--timeout-ms", 0),
    parsed.value("--session"));
  {
    // The monitor's files appear under .taskforce/: never as untracked
    // changes of the repository.
    auto repo = git::open(place.repository);
    git::ensure_excluded(repo, "/.taskforce/");
  }
  auto started = control::start_supervised(place, m, cfg.control.max_monitors,
                                           own_program());
  print({{"monitor", monitor_json(started)}});
  return exit_ok;
}

int monitor_status(const std::vector<std::string>& argv,
                   const global_options& opts) {
  args parsed(argv, {}, {"--json"});
  auto place = place_of(opts);
  if (parsed.positionals().size() == 1) {
    auto all = json::array();
    for (auto& m : control::monitor_list(place))
      all.push_back(monitor_json(m));
    print({{"monitors", all}});
    return exit_ok;
  }
  print({{"monitor", monitor_json(control::monitor_status(
                       place, the_id(parsed, "status")))}});
  return exit_ok;
}

int monitor_read(const std::vector<std::string>& argv,
                 const global_options& opts) {
  args parsed(argv, {"--offset", "--max"}, {"--json"});
  auto id = the_id(parsed, "read");
  auto place = place_of(opts);
  auto cap
    = static_cast<int64_t>(effective_config(opts).control.max_output_bytes);
  auto max = count_option(parsed, "--max", cap);
  auto m = control::monitor_status(place, id);
  auto piece
    = control::read_log(m.log_file, count_option(parsed, "--offset", 0),
                        std::min(max, cap), control::ended(m.row.state));
  print({{"monitor", id},
         {"offset", piece.offset},
         {"next_offset", piece.next_offset},
         {"size", piece.size},
         {"output", piece.data},
         {"eof", piece.eof}});
  return exit_ok;
}

int monitor_wait(const std::vector<std::string>& argv,
                 const global_options& opts) {
  args parsed(argv, {"--timeout-ms"}, {"--json"});
  auto id = the_id(parsed, "wait");
  auto timeout
    = std::chrono::milliseconds(count_option(parsed, "--timeout-ms", 30000));
  auto [reason, m] = control::monitor_wait(place_of(opts), id, timeout);
  print({{"reason", reason}, {"monitor", monitor_json(m)}});
  return exit_ok;
}

int monitor_kill(const std::vector<std::string>& argv,
                 const global_options& opts) {
  args parsed(argv, {}, {"--json"});
  auto id = the_id(parsed, "kill");
  print({{"monitor", monitor_json(control::monitor_kill(place_of(opts), id))}});
  return exit_ok;
}

/// A monitor command sent to the repository's running server, which owns
/// the monitors it starts: its answer printed and the exit status chosen;
/// nullopt when no server runs (or for a monitor the server does not
/// watch: one of a supervisor, which the command then handles itself).
std::optional<int> via_server(const std::string& verb,
                              const std::vector<std::string>& argv,
                              const global_options& opts) {
  using control::control_op;
  nlohmann::json req;
  control_op op;
  auto patience = std::chrono::milliseconds(30000);
  if (verb == "run") {
    args parsed(argv, {"--cwd", "--wake-pattern", "--timeout-ms", "--session"},
                {});
    std::string command;
    auto& words = parsed.positionals();
    for (size_t i = 1; i < words.size(); ++i)
      command += (i > 1 ? " " : "") + words[i];
    op = control_op::monitor_run;
    req["command"] = command;
    for (auto [option, field] : {std::pair{"--cwd", "cwd"},
                                 std::pair{"--wake-pattern", "wake_pattern"},
                                 std::pair{"--session", "session"}})
      if (parsed.has(option))
        req[field] = parsed.value(option);
    req["timeout_ms"] = count_option(parsed, "--timeout-ms", 0);
  } else if (verb == "status") {
    args parsed(argv, {}, {"--json"});
    op = control_op::monitor_status;
    if (parsed.positionals().size() > 1)
      req["monitor"] = the_id(parsed, "status");
  } else if (verb == "read") {
    args parsed(argv, {"--offset", "--max"}, {"--json"});
    op = control_op::monitor_read;
    req["monitor"] = the_id(parsed, "read");
    req["offset"] = count_option(parsed, "--offset", 0);
    req["max_bytes"] = count_option(parsed, "--max", 0);
  } else if (verb == "wait") {
    args parsed(argv, {"--timeout-ms"}, {"--json"});
    op = control_op::monitor_wait;
    req["monitor"] = the_id(parsed, "wait");
    auto timeout = count_option(parsed, "--timeout-ms", 30000);
    req["timeout_ms"] = timeout;
    patience += std::chrono::milliseconds(timeout);
  } else if (verb == "kill") {
    args parsed(argv, {}, {"--json"});
    op = control_op::monitor_kill;
    req["monitor"] = the_id(parsed, "kill");
  } else {
    return std::nullopt;
  }
  auto top = place_of(opts).repository;
  auto answer = ask_server(top, op, req, patience);
  if (!answer)
    return std::nullopt;
  if (!answer->ok) {
    // A monitor of a supervisor is watched by its supervisor, not by the
    // server: the command waits on it or kills it itself.
    if (answer->code == "unavailable" && (verb == "wait" || verb == "kill")
        && answer->message.find("run by another process") != std::string::npos)
      return std::nullopt;
    return refused(answer->code, answer->message);
  }
  std::cout << answer->fields << std::endl;
  return exit_ok;
}

int monitor_supervise(const std::vector<std::string>& argv,
                      const global_options& opts) {
  args parsed(argv, {"--owner", "--lock-fd"}, {});
  auto id = the_id(parsed, "supervise");
  auto fd = count_option(parsed, "--lock-fd", -1);
  if (fd < 0 || !parsed.has("--owner"))
    throw usage_error("monitor supervise is started by monitor run");
  return control::supervise(place_of(opts), id, parsed.value("--owner"),
                            static_cast<int>(fd), std::chrono::seconds(2));
}

} // namespace

int run_monitor_command(const std::vector<std::string>& argv,
                        const global_options& opts) {
  if (argv.empty())
    throw usage_error("monitor needs a command: run, status, read, wait or "
                      "kill (see taskforce monitor --help)");
  auto& verb = argv[0];
  try {
    if (auto answer = via_server(verb, argv, opts))
      return *answer;
    if (verb == "run")
      return monitor_run(argv, opts);
    if (verb == "status")
      return monitor_status(argv, opts);
    if (verb == "read")
      return monitor_read(argv, opts);
    if (verb == "wait")
      return monitor_wait(argv, opts);
    if (verb == "kill")
      return monitor_kill(argv, opts);
    if (verb == "supervise")
      return monitor_supervise(argv, opts);
  } catch (const control::control_error& e) {
    return refused(e);
  }
  auto hint = did_you_mean(verb, {"run", "status", "read", "wait", "kill"});
  throw usage_error(
    "unknown monitor command \"" + verb + "\""
    + (hint.empty() ? ": run, status, read, wait or kill" : hint));
}

} // namespace taskforce::cli
