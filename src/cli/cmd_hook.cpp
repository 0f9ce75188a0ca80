// `taskforce hook claude-code`: one Claude Code hook event from standard
// input, mapped onto the per-user server (src/hook/claude_code.hpp).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/server_call.hpp"
#include "src/hook/claude_code.hpp"
#include "src/net/endpoint.hpp"
#include "src/time/duration.hpp"

namespace taskforce::cli {

const char* hook_help
  = "usage: taskforce hook claude-code [--wait SECONDS]\n\n"
    "A Claude Code hook: reads one hook event (JSON) on standard input and\n"
    "admits that harness's subagents through the per-user server (started\n"
    "when none runs; see `taskforce serve --help`, --user). Configure it for\n"
    "the events PreToolUse, PostToolUse and PostToolUseFailure (matcher\n"
    "\"Agent|Task\"), SubagentStart, SubagentStop, StopFailure and\n"
    "SessionEnd; integrations/claude-code/ has the settings block.\n\n"
    "  PreToolUse           waits for a permit (the call waits with it); when\n"
    "                       none comes (queue_timeout, pool_full, --wait\n"
    "                       passed, no server) it prints a deny decision "
    "whose\n"
    "                       reason the model reads. Exit 0 either way.\n"
    "  PostToolUse…, SubagentStop, StopFailure, SessionEnd\n"
    "                       give the permit back (bind a background agent's\n"
    "                       permit to it until it stops); never start a\n"
    "                       server.\n"
    "  SubagentStart        ties the agent to its call's permit, so its own\n"
    "                       foreground subagent calls can borrow that permit\n"
    "                       when none is free; a Workflow subagent waits for\n"
    "                       a permit too (it cannot be denied: after --wait\n"
    "                       it runs anyway).\n\n"
    "  --wait SECONDS  the longest a call waits for its permit (default\n"
    "                  540); keep it below the hook's timeout (Claude Code's\n"
    "                  default 600 s), past which the call runs unadmitted.\n"
    "                  Giving up releases the call's holder first, so a\n"
    "                  permit granted just then is not left held.\n\n"
    "Input that is not a hook event: a message on standard error, exit 1\n"
    "(Claude Code goes on; the call is not admitted).\n";

namespace {

using steady = std::chrono::steady_clock;
using hook::claude_step;

/// The largest event read (a PostToolUse carries the agent's whole answer).
constexpr size_t max_event_bytes = 64 << 20;

/// How long a release, bind or idle may take.
constexpr auto tell_patience = std::chrono::seconds(10);

/// SessionEnd hooks get about 1.5 s from Claude Code; leave room to exit.
constexpr auto end_patience = std::chrono::milliseconds(1000);

/// Standard input, whole (at most max_event_bytes).
std::string read_stdin() {
  std::string text;
  char chunk[65536];
  for (;;) {
    auto n = ::read(STDIN_FILENO, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw usage_error(std::string{"cannot read standard input: "}
                        + std::strerror(errno));
    if (n == 0)
      return text;
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > max_event_bytes)
      // Not a usage error: Claude Code takes exit 2 as a blocking one.
      throw std::invalid_argument("the hook event is larger than "
                                  + std::to_string(max_event_bytes) + " bytes");
  }
}

/// Waits for a permit; "" when granted, else why not. Giving up at the
/// deadline releases the holder first: a grant that came just then is
/// given back, not left held by a call that was denied.
std::string wait_for_permit(const claude_step& step, int64_t wait_s) {
  auto deadline
    = saturating_deadline<steady>(steady::now(), saturating_ms(wait_s * 1000));
  try {
    auto answer = acquire_from_user_server(nlohmann::json::parse(step.request),
                                           true, deadline);
    if (answer->ok || answer->code == "duplicate_holder")
      return {}; // duplicate: this call already holds (or awaits) it
    return answer->code + ": " + answer->message;
  } catch (const net::endpoint_error& e) {
    if (e.code() == net::endpoint_errc::timeout)
      return "no subagent slot came within " + std::to_string(wait_s)
             + " s (the hook's --wait)";
    return std::string{"the pool is unavailable: "} + e.what();
  }
}

} // namespace

int run_hook_command(const std::vector<std::string>& argv,
                     const global_options&) {
  args parsed(argv, {"--wait"}, {});
  auto& words = parsed.positionals();
  if (words.size() != 1 || words[0] != "claude-code")
    throw usage_error("hook needs the harness: taskforce hook claude-code");
  auto wait_s = static_cast<int64_t>(parsed.positive("--wait", 540));
  claude_step step;
  try {
    step = hook::plan_claude_event(read_stdin());
  } catch (const std::invalid_argument& e) {
    std::cerr << "taskforce hook: " << e.what() << std::endl;
    return exit_failed;
  }
  switch (step.what) {
    case claude_step::kind::nothing: return exit_ok;
    case claude_step::kind::admit:
      if (auto why = wait_for_permit(step, wait_s); !why.empty())
        std::cout << hook::claude_deny("taskforce: subagent not admitted: "
                                       + why)
                  << std::endl;
      return exit_ok;
    case claude_step::kind::delay:
      if (auto why = wait_for_permit(step, wait_s); !why.empty())
        std::cerr << "taskforce hook: " << step.holder
                  << " runs without a permit: " << why << std::endl;
      return exit_ok;
    case claude_step::kind::tell: {
      auto patience = step.event == "SessionEnd"
                        ? std::chrono::milliseconds(end_patience)
                        : std::chrono::milliseconds(tell_patience);
      try {
        auto answer = ask_user_server(nlohmann::json::parse(step.request),
                                      false, steady::now() + patience);
        if (answer && !answer->ok)
          std::cerr << "taskforce hook: " << step.event << ": " << answer->code
                    << ": " << answer->message << std::endl;
      } catch (const net::endpoint_error& e) {
        std::cerr << "taskforce hook: " << step.event << ": " << e.what()
                  << std::endl;
        return exit_failed;
      }
      return exit_ok;
    }
  }
  return exit_ok;
}

} // namespace taskforce::cli
