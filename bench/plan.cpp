// bench/plan: parse and plan generated task files of 1k, 10k and 20k tasks.
//
// Each task declares three scope entries (literal paths, `*` and `**` globs,
// whole directories), a quarter have deps, a fifth hold a named lock shared
// within a group of modules, some have a priority. Prints the time of each
// phase, the 20k/10k ratio (near 2 when the conflict index keeps the work
// near-linear) and the peak resident memory, then one summary line.
//
// Each size is measured five times and the fastest round kept: the machine
// is shared, so the minimum is the figure least disturbed by other work.
// The CPU time of the same round is printed beside the wall time.
#include <sys/resource.h>
#include <time.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/plan/report.hpp"
#include "src/proc/spawn.hpp"
#include "src/taskfile/parse.hpp"

using namespace taskforce;
using clock_type = std::chrono::steady_clock;

namespace {

std::string generate(size_t n) {
  std::string text = "# Generated tasks\n\n";
  for (size_t i = 0; i < n; ++i) {
    size_t module = i / 10;
    auto m = std::to_string(module);
    auto id = std::to_string(i + 1);
    text += "- [ ] Task " + id + " in module " + m + "\n";
    text += "  id: task-" + id + "\n";
    std::string files = "src/mod" + m + "/file" + id + ".ts";
    if (i % 3 == 0)
      files += ", src/mod" + m + "/sub" + std::to_string(i % 5) + "/*.ts";
    else
      files += ", src/mod" + m + "/file" + id + ".test.ts";
    if (i % 10 == 0)
      files += ", test/mod" + m + "/**";
    else if (i % 7 == 0)
      files += ", docs/mod" + m + "/";
    else
      files += ", test/mod" + m + "/t" + id + ".spec.ts";
    text += "  files: " + files + "\n";
    if (i % 4 == 3)
      text += "  deps: task-" + std::to_string(i) + ", task-"
              + std::to_string(i - 2) + "\n";
    if (i % 5 == 0)
      text += "  locks: lock-" + std::to_string(module / 10) + "\n";
    if (i % 11 == 0)
      text += "  priority: " + std::to_string(i % 3) + "\n";
    text += "  verify: make test MODULE=" + m + "\n";
    text += "  Implement part " + id + " of the module.\n";
  }
  return text;
}

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start)
    .count();
}

double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3
         + static_cast<double>(ts.tv_nsec) / 1e6;
}

double peak_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0; // KiB on Linux
}

struct figures {
  double parse_ms = 0;
  double graph_ms = 0;
  double waves_ms = 0;
  double json_ms = 0;
  double cpu_ms = 0;
  size_t conflicts = 0;
  size_t waves = 0;
  double total() const {
    return parse_ms + graph_ms + waves_ms;
  }
};

figures measure(size_t n) {
  auto text = generate(n);
  taskfile::parse_options opts;
  figures best;
  for (int round = 0; round < 5; ++round) {
    figures f;
    auto cpu_start = cpu_ms();
    auto start = clock_type::now();
    auto parsed = taskfile::parse(text, "bench.md", opts);
    f.parse_ms = ms_since(start);
    if (!parsed.ok()) {
      std::fprintf(stderr, "generated file does not parse: %s\n",
                   parsed.errors[0].message.c_str());
      std::exit(1);
    }
    start = clock_type::now();
    plan::plan_result result;
    result.graph.emplace(std::move(parsed.tasks));
    result.conflicts = result.graph->conflict_pairs();
    f.graph_ms = ms_since(start);
    start = clock_type::now();
    result.waves = plan::simulate_waves(*result.graph, 3);
    f.waves_ms = ms_since(start);
    f.cpu_ms = cpu_ms() - cpu_start;
    start = clock_type::now();
    auto json = plan::plan_json(result);
    f.json_ms = ms_since(start);
    f.conflicts = result.conflicts.size();
    f.waves = result.waves.size();
    if (round == 0 || f.total() < best.total())
      best = f;
  }
  std::printf(
    "%6zu tasks: parse %8.1f ms  graph+conflicts %8.1f ms  waves "
    "%7.1f ms  plan total %8.1f ms (cpu %8.1f ms)  json %7.1f ms  %zu "
    "conflicts, %zu waves, peak %.1f MB\n",
    n, best.parse_ms, best.graph_ms, best.waves_ms, best.total(), best.cpu_ms,
    best.json_ms, best.conflicts, best.waves, peak_mb());
  return best;
}

/// The whole command, `taskforce plan FILE --json`, as a user runs it:
/// process start, reading, parsing, planning and printing.
double measure_cli(size_t n) {
  auto dir = std::filesystem::temp_directory_path()
             / ("taskforce-bench-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto file = dir / "TASKS.md";
  std::ofstream(file) << generate(n);
  double best = 0;
  for (int round = 0; round < 3; ++round) {
    proc::spawn_options opts;
    opts.argv = {TASKFORCE_BINARY, "plan", file.string(), "--json"};
    opts.cwd = dir.string();
    opts.in = proc::stdio::null();
    opts.out = proc::stdio::null();
    auto start = clock_type::now();
    auto status = proc::wait_for(proc::spawn(opts).pid);
    auto ms = ms_since(start);
    if (!status.success()) {
      std::fprintf(stderr, "taskforce plan failed: %s\n",
                   proc::to_string(status).c_str());
      std::exit(1);
    }
    if (round == 0 || ms < best)
      best = ms;
  }
  std::filesystem::remove_all(dir);
  std::printf("%6zu tasks: `taskforce plan --json` end to end %8.1f ms\n", n,
              best);
  return best;
}

} // namespace

int main() {
  auto f1 = measure(1000);
  auto f10 = measure(10000);
  auto f20 = measure(20000);
  double ratio = f20.total() / f10.total();
  auto cli10 = measure_cli(10000);
  std::printf("20k/10k ratio: %.2f (target <= 2.5); 10k plan: %.0f ms "
              "(target <= 1000)\n",
              ratio, f10.total());
  std::printf("bench plan: tasks_1k_ms=%.1f tasks_10k_ms=%.1f "
              "tasks_20k_ms=%.1f ratio_20k_10k=%.2f cpu_10k_ms=%.1f "
              "cpu_20k_ms=%.1f cli_10k_ms=%.1f peak_mb=%.1f\n",
              f1.total(), f10.total(), f20.total(), ratio, f10.cpu_ms,
              f20.cpu_ms, cli10, peak_mb());
  return 0;
}
