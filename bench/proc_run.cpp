// What watching a process costs: proc::run (log file, tail, timeout, group
// cleanup, orphan sweep) against a bare posix_spawn + waitpid of the same
// command, and two threads of proc::run against `xargs -P2` launching the
// same commands. Prints the figures and the ratios.
//
//   build/bench_proc_run [COUNT]     (default 400)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "src/proc/run.hpp"
#include "src/proc/spawn.hpp"

using namespace taskforce::proc;
using clock_type = std::chrono::steady_clock;

namespace {

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start)
    .count();
}

} // namespace

int main(int argc, char** argv) {
  int count = argc > 1 ? std::atoi(argv[1]) : 400;
  if (count <= 0) {
    std::fprintf(stderr, "usage: bench_proc_run [COUNT]\n");
    return 2;
  }
  auto dir = std::filesystem::temp_directory_path() / "taskforce-bench-proc";
  std::filesystem::create_directories(dir);
  auto log = (dir / "run.log").string();

  // 1. The bare minimum: posix_spawn and waitpid.
  auto start = clock_type::now();
  for (int i = 0; i < count; ++i) {
    spawn_options o;
    o.argv = {"true"};
    wait_for(spawn(o).pid);
  }
  double bare = ms_since(start);

  // 2. proc::run with a log file and a timeout.
  start = clock_type::now();
  for (int i = 0; i < count; ++i) {
    run_options o;
    o.argv = {"true"};
    o.log_file = log;
    o.timeout = std::chrono::seconds(60);
    run(o);
  }
  double watched = ms_since(start);

  // 3. Two threads of proc::run against xargs -P2, same commands.
  start = clock_type::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([count, t, &dir] {
      for (int i = t; i < count; i += 2) {
        run_options o;
        o.argv = {"true"};
        o.log_file = (dir / ("run-" + std::to_string(t) + ".log")).string();
        run(o);
      }
    });
  for (auto& th : threads)
    th.join();
  double parallel = ms_since(start);
  start = clock_type::now();
  {
    run_options o;
    o.argv = {"sh", "-c",
              "i=0; while [ $i -lt " + std::to_string(count)
                + " ]; do echo x; i=$((i+1)); done | xargs -P2 -n1 true"};
    run(o);
  }
  double xargs = ms_since(start);

  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  std::printf("processes: %d of `true`\n", count);
  std::printf("posix_spawn + waitpid      %8.1f ms  %6.3f ms each\n", bare,
              bare / count);
  std::printf("proc::run (log, timeout)   %8.1f ms  %6.3f ms each  %.2fx\n",
              watched, watched / count, watched / bare);
  std::printf("proc::run on 2 threads     %8.1f ms  %6.3f ms each\n", parallel,
              parallel / count);
  std::printf("xargs -P2 -n1 true         %8.1f ms  %6.3f ms each  "
              "ratio %.2fx\n",
              xargs, xargs / count, parallel / xargs);
  std::printf("peak memory: %ld KiB\n", usage.ru_maxrss);
  std::filesystem::remove_all(dir);
  return 0;
}
