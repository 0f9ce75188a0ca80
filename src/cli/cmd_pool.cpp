// `taskforce pool status`: the per-user server's pools as the protocol's
// `status` answers them.
#include <iostream>

#include <nlohmann/json.hpp>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/server_call.hpp"
#include "src/net/endpoint.hpp"

namespace taskforce::cli {

const char* pool_help
  = "usage: taskforce pool status\n\n"
    "Prints the per-user server's answer to the protocol's `status` as JSON:\n"
    "mode, max_parallel and pools, each with key, running (holder, session,\n"
    "kind, held_ms, lent) and queued (holder, session, position, waited_ms).\n"
    "Starts the server when none runs (it then shows its config and no\n"
    "pools). Exits 1 when no server could be reached.\n";

namespace {

using json = nlohmann::json;

/// How long the answer may take, the server's start included.
constexpr auto status_patience = std::chrono::seconds(20);

} // namespace

int run_pool_command(const std::vector<std::string>& argv,
                     const global_options&) {
  args parsed(argv, {}, {});
  auto& words = parsed.positionals();
  if (words.empty())
    throw usage_error("pool needs a subcommand: status");
  if (words[0] != "status") {
    auto hint = did_you_mean(words[0], {"status"});
    throw usage_error("unknown pool subcommand \"" + words[0] + "\""
                      + (hint.empty() ? " (there is: status)" : hint));
  }
  if (words.size() > 1)
    throw usage_error("pool status takes no arguments (got \"" + words[1]
                      + "\")");
  try {
    auto answer
      = ask_user_server(json{{"op", "status"}}, true,
                        std::chrono::steady_clock::now() + status_patience);
    if (!answer->ok) {
      std::cerr << "taskforce: " << answer->code << ": " << answer->message
                << std::endl;
      return exit_failed;
    }
    std::cout << json::parse(answer->fields).dump(2) << std::endl;
    return exit_ok;
  } catch (const net::endpoint_error& e) {
    std::cerr << "taskforce: " << e.what() << std::endl;
    return exit_failed;
  }
}

} // namespace taskforce::cli
