// `taskforce demo --pool`: five subagents admitted through the real pool, two
// at a time, with their queue positions as the pool reports them.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "taskforce/runtime.hpp"

namespace taskforce::cli {

const char* pool_demo_help
  = "usage: taskforce demo --pool [--agents N] [--work-ms MS] [--config "
    "FILE]\n\n"
    "Runs N simulated subagents (default 5) in one session through the\n"
    "admission pool (maxParallel from the config, default 2). Each waits for\n"
    "a permit in FIFO order, works for MS milliseconds (default 300) and\n"
    "releases it. Prints every queue position and start as the pool reports\n"
    "them, then checks that the bound held.\n";

int run_pool_demo_command(const std::vector<std::string>& argv,
                          const global_options& opts) {
  args parsed(argv, {"--agents", "--work-ms"}, {});
  if (!parsed.positionals().empty())
    throw usage_error("demo takes no positional arguments");
  auto agents = parsed.positive("--agents", 5);
  auto work_ms = parsed.positive("--work-ms", 300);
  auto cfg = effective_config(opts);
  runtime_options ropts;
  ropts.config_file = opts.config_file;
  runtime rt{ropts};
  auto start = std::chrono::steady_clock::now();
  std::mutex mtx;
  uint64_t running = 0;
  uint64_t peak = 0;
  auto stamp = [&] {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                std::chrono::steady_clock::now() - start)
                .count();
    char buf[32];
    std::snprintf(buf, sizeof buf, "[%5lld ms] ", static_cast<long long>(ms));
    return std::string{buf};
  };
  std::cout << "taskforce demo: " << agents << " subagents in one session, "
            << "maxParallel " << cfg.pool.max_parallel << " ("
            << to_string(cfg.pool.mode) << " mode)\n"
            << std::flush;
  auto pool = rt.pool();
  pool.on_event([&](const holder_event& ev) {
    std::lock_guard<std::mutex> guard{mtx};
    if (ev.event == "queued") {
      std::cout << stamp() << ev.holder << " queued: position " << ev.position
                << " of " << ev.of << ", " << ev.running << " running\n";
    } else if (ev.event == "started") {
      ++running;
      peak = std::max(peak, running);
      std::cout << stamp() << ev.holder << " started";
      if (ev.queued_ms > 0)
        std::cout << " after " << ev.queued_ms << " ms in the queue";
      std::cout << " (" << running << " running)\n";
    } else if (ev.event == "released" || ev.event == "force_released") {
      --running;
      std::cout << stamp() << ev.holder << " finished, permit released\n";
    }
    std::cout << std::flush;
  });
  auto session = rt.session("demo");
  std::vector<std::thread> subagents;
  for (uint64_t i = 1; i <= agents; ++i) {
    subagents.emplace_back([&, i] {
      auto name = "agent-" + std::to_string(i);
      session.call_started(name).get();
      std::this_thread::sleep_for(std::chrono::milliseconds(work_ms));
      session.call_ended(name).get();
    });
    // Calls arrive one after another, as a fan-out from one agent does.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (auto& t : subagents)
    t.join();
  session.dispose().get();
  std::lock_guard<std::mutex> guard{mtx};
  bool ok = peak <= cfg.pool.max_parallel && running == 0;
  std::cout << "all " << agents << " subagents ran in FIFO order; at most "
            << peak << " at once" << (ok ? "" : " (BOUND BROKEN)") << '\n';
  return ok ? exit_ok : exit_failed;
}

} // namespace taskforce::cli
