#include "actors/runtime_config.hpp"

#include <cstdlib>
#include <string>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>

#include "messages/control.hpp"
#include "messages/interfaces.hpp"

namespace taskforce {

namespace {

std::string render_errc(uint8_t code, caf::atom_value,
                        const caf::message& ctx) {
  std::string result = to_string(static_cast<errc>(code));
  if (ctx.match_elements<std::string>())
    result += ": " + ctx.get_as<std::string>(0);
  return result;
}

std::string render_run_errc(uint8_t code, caf::atom_value,
                            const caf::message& ctx) {
  std::string result = to_string(static_cast<run_errc>(code));
  if (ctx.match_elements<std::string>())
    result += ": " + ctx.get_as<std::string>(0);
  return result;
}

std::string render_control_errc(uint8_t code, caf::atom_value,
                                const caf::message& ctx) {
  std::string result = to_string(static_cast<control_errc>(code));
  if (ctx.match_elements<std::string>())
    result += ": " + ctx.get_as<std::string>(0);
  return result;
}

} // namespace

runtime_config::runtime_config(size_t threads, bool with_io) {
  add_message_types<caf::id_block::taskforce>();
  add_message_types<caf::id_block::taskforce_run>();
  add_message_types<caf::id_block::taskforce_control>();
  add_error_category(caf::atom("taskforce"), render_errc);
  add_error_category(caf::atom(run_errc_category), render_run_errc);
  add_error_category(caf::atom(control_errc_category), render_control_errc);
  // Work sharing wakes an idle worker at once instead of letting it back off
  // while stealing; with two cores it cut a round trip from ~64 to ~9 us.
  set("scheduler.policy", caf::atom("sharing"));
  if (threads == 0) {
    // Blocking work runs on detached actors' own threads, so the scheduler
    // only routes messages; bench/pool measured one worker 2-4x faster than
    // two on a 2-core machine (no hand-offs between cores).
    threads = 1;
    if (auto env = std::getenv("TASKFORCE_THREADS"); env != nullptr) {
      auto n = std::strtoull(env, nullptr, 10);
      if (n > 0 && n <= 256)
        threads = n;
    }
  }
  set("scheduler.max-threads", threads);
  if (with_io)
    load<caf::io::middleman>();
}

} // namespace taskforce
