// `taskforce acquire` and `taskforce release`: a permit of the per-user
// server for scripts and hooks, which live shorter than the work they
// admit. The permit is detached: it outlives this process and is given back
// by `release` (from any process), by the end of its session, by the idle
// of its child session, or by the server's maxHoldMs watchdog.
#include <iostream>

#include <nlohmann/json.hpp>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/server_call.hpp"
#include "src/net/endpoint.hpp"
#include "src/time/duration.hpp"

namespace taskforce::cli {

const char* acquire_help
  = "usage: taskforce acquire --session NAME --holder NAME\n"
    "                         [--kind foreground|background] [--tool NAME]\n"
    "                         [--child-session NAME] [--parent HOLDER]\n"
    "                         [--timeout MS]\n\n"
    "Asks the per-user server (started when none runs; see `taskforce serve\n"
    "--help`, --user) for a permit and waits until it is granted. The permit\n"
    "outlives this command: give it back with `taskforce release --holder\n"
    "NAME`; the end of its session, the idle of its child session\n"
    "(background) or the server's maxHoldMs watchdog also release it.\n\n"
    "  --session NAME        the requesting session (in session mode, one\n"
    "                        pool per session)\n"
    "  --holder NAME         the permit's name, unique on the server\n"
    "  --kind KIND           foreground (default) or background\n"
    "  --tool NAME           the harness's tool; one not in\n"
    "                        pool.subagentToolNames is granted at once,\n"
    "                        uncounted (permit null)\n"
    "  --child-session NAME  the child session a background permit ends with\n"
    "  --parent HOLDER       the holder that delegates (a nested call: never\n"
    "                        waits)\n"
    "  --timeout MS          give up after MS milliseconds (the wait is\n"
    "                        cancelled, and a permit granted just then\n"
    "                        released); default: the server's\n"
    "                        pool.queueTimeoutMs alone bounds it\n\n"
    "Prints the grant as JSON ({\"permit\":…, \"queued_ms\":…, \"lent\":…})\n"
    "and exits 0. A refusal or a timeout prints {\"error\":{\"code\":…,\n"
    "\"message\":…}}, the message also on standard error, and exits 1\n"
    "(codes as in the protocol: queue_timeout, pool_full, duplicate_holder,\n"
    "cancelled, bad_request; `timeout` for --timeout, `unavailable` when no\n"
    "server could be reached).\n";

const char* release_help
  = "usage: taskforce release --holder NAME [--reason "
    "completed|error|aborted]\n\n"
    "Gives back the permit `taskforce acquire` took (or cancels its wait),\n"
    "from any process. Prints {\"released\": true|false} and exits 0; an\n"
    "unknown or already released holder answers false (as does a server\n"
    "that is not running: nothing is held then). The reason defaults to\n"
    "completed.\n";

namespace {

using json = nlohmann::json;
using steady = std::chrono::steady_clock;

/// How long a request other than a waiting acquire may take, the server's
/// start included.
constexpr auto request_patience = std::chrono::seconds(20);

/// Prints a refusal: {"error": …} on standard output, the message on
/// standard error; exit 1.
int refused(const std::string& code, const std::string& message) {
  std::cout << json{{"error", {{"code", code}, {"message", message}}}}.dump()
            << std::endl;
  std::cerr << "taskforce: " << code << ": " << message << std::endl;
  return exit_failed;
}

/// A required option's value; usage_error when it is missing or empty.
std::string required(const args& parsed, const std::string& name) {
  auto v = parsed.value(name);
  if (v.empty())
    throw usage_error(name + " NAME is required");
  return v;
}

} // namespace

int run_acquire_command(const std::vector<std::string>& argv,
                        const global_options&) {
  args parsed(argv,
              {"--session", "--holder", "--kind", "--tool", "--child-session",
               "--parent", "--timeout"},
              {});
  if (!parsed.positionals().empty())
    throw usage_error("acquire takes no positional arguments (got \""
                      + parsed.positionals().front() + "\")");
  json req{{"op", "acquire"},
           {"session", required(parsed, "--session")},
           {"holder", required(parsed, "--holder")},
           {"kind", parsed.value("--kind", "foreground")},
           {"detach", true}};
  auto kind = req["kind"].get<std::string>();
  if (kind != "foreground" && kind != "background")
    throw usage_error("--kind must be foreground or background (got \"" + kind
                      + "\")");
  for (auto [option, field] : {std::pair{"--tool", "tool"},
                               std::pair{"--child-session", "child_session"},
                               std::pair{"--parent", "parent"}})
    if (parsed.has(option))
      req[field] = parsed.value(option);
  auto deadline = steady::time_point::max();
  if (parsed.has("--timeout"))
    deadline = saturating_deadline<steady>(
      steady::now(),
      saturating_ms(static_cast<int64_t>(parsed.positive("--timeout", 1))));
  try {
    auto answer = acquire_from_user_server(req, true, deadline);
    if (!answer->ok)
      return refused(answer->code, answer->message);
    std::cout << answer->fields << std::endl;
    return exit_ok;
  } catch (const net::endpoint_error& e) {
    if (e.code() == net::endpoint_errc::timeout && parsed.has("--timeout"))
      return refused("timeout", "no permit within --timeout "
                                  + parsed.value("--timeout")
                                  + " ms; the wait is cancelled");
    return refused("unavailable", e.what());
  }
}

int run_release_command(const std::vector<std::string>& argv,
                        const global_options&) {
  args parsed(argv, {"--holder", "--reason"}, {});
  if (!parsed.positionals().empty())
    throw usage_error("release takes no positional arguments (got \""
                      + parsed.positionals().front() + "\")");
  auto reason = parsed.value("--reason", "completed");
  if (reason != "completed" && reason != "error" && reason != "aborted")
    throw usage_error("--reason must be completed, error or aborted (got \""
                      + reason + "\")");
  json req{{"op", "release"},
           {"holder", required(parsed, "--holder")},
           {"reason", reason}};
  try {
    auto answer = ask_user_server(req, false, steady::now() + request_patience);
    if (!answer) {
      std::cout << R"({"released":false})" << std::endl;
      return exit_ok;
    }
    if (!answer->ok)
      return refused(answer->code, answer->message);
    std::cout << answer->fields << std::endl;
    return exit_ok;
  } catch (const net::endpoint_error& e) {
    return refused("unavailable", e.what());
  }
}

} // namespace taskforce::cli
