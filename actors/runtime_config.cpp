#include "actors/runtime_config.hpp"

#include <cstdlib>
#include <string>

#include <caf/all.hpp>
#include <caf/io/middleman.hpp>
#include <spdlog/spdlog.h>

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

thread_count scheduler_threads(const char* value) {
  if (value == nullptr || *value == '\0')
    return {default_scheduler_threads, {}};
  std::string text = value;
  size_t n = 0;
  bool ok = text.size() <= 3;
  for (char c : text) {
    ok = ok && c >= '0' && c <= '9';
    if (ok)
      n = n * 10 + static_cast<size_t>(c - '0');
  }
  if (ok && n >= 1 && n <= 256)
    return {n, {}};
  return {default_scheduler_threads,
          "TASKFORCE_THREADS=" + text
            + " is not a number of threads from 1 to 256; using "
            + std::to_string(default_scheduler_threads)};
}

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
    auto chosen = scheduler_threads(std::getenv("TASKFORCE_THREADS"));
    if (!chosen.warning.empty())
      spdlog::warn("{}", chosen.warning);
    threads = chosen.threads;
  }
  set("scheduler.max-threads", threads);
  if (with_io)
    load<caf::io::middleman>();
}

} // namespace taskforce
