// The command line's habits as a user of git or ninja expects them: a
// misspelt command or option named with the nearest known one, `help CMD`,
// no runs answered as an empty list rather than an error, `logs` for people
// (local times, durations, the gate's tail, only paths that exist) and
// `logs -f` following a task until it ends.
#define CAF_SUITE e2e.cli_habits
#include <caf/test/unit_test.hpp>

#include <sys/wait.h>

#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "scenarios/scenario.hpp"
#include "src/proc/spawn.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

namespace {

struct outcome {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `taskforce --repo ROOT --config CONFIG args...` with stdout and
/// stderr apart and `env` on top of the environment.
outcome cli(scenario& s, const std::vector<std::string>& args,
            std::vector<std::pair<std::string, std::string>> env = {}) {
  if (!fs::exists(s.config))
    s.set_config(s.config_text);
  temp_dir scratch;
  proc::spawn_options o;
  o.argv = {TASKFORCE_BINARY, "--repo", s.root.string(), "--config",
            s.config.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.cwd = s.root.string();
  o.env = std::move(env);
  o.env.emplace_back("NO_COLOR", "1");
  o.in = proc::stdio::null();
  o.out = proc::stdio::file((scratch.path() / "out").string());
  o.err = proc::stdio::file((scratch.path() / "err").string());
  auto child = proc::spawn(o);
  auto status = proc::wait_for(child.pid);
  return {status.code, read_file(scratch.path() / "out"),
          read_file(scratch.path() / "err")};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// `ms` as `%Y-%m-%d %H:%M:%S` in a zone `east_hours` ahead of UTC.
std::string shifted_time(int64_t ms, int east_hours) {
  std::time_t secs = static_cast<std::time_t>(ms / 1000) + east_hours * 3600;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

/// How child `pid` ended, waiting at most a minute; nullopt (and the child
/// killed) when it did not end by itself.
std::optional<proc::exit_status> ended(pid_t pid) {
  int raw = 0;
  bool gone = eventually([&] {
    return ::waitpid(pid, &raw, WNOHANG) == pid;
  });
  if (gone)
    return proc::decode_wait_status(raw);
  ::kill(-pid, SIGKILL);
  proc::wait_for(pid);
  return std::nullopt;
}

} // namespace

// -- suggestions --------------------------------------------------------------

CAF_TEST(a misspelt option before the command is an unknown option with the
           nearest one named) {
  scenario s;
  auto r = cli(s, {"--confg", "x.json", "status"});
  CAF_MESSAGE(r.err);
  CAF_CHECK_EQUAL(r.status, 2);
  CAF_CHECK(contains(r.err, "unknown option --confg"));
  CAF_CHECK(contains(r.err, "did you mean \"--config\"?"));
  CAF_CHECK(!contains(r.err, "unknown command"));
  auto eq = cli(s, {"--lg-level=debug", "list"});
  CAF_CHECK_EQUAL(eq.status, 2);
  CAF_CHECK(contains(eq.err, "unknown option --lg-level (did you mean "
                             "\"--log-level\"?)"));
}

CAF_TEST(a misspelt option of a command names the nearest one it takes) {
  scenario s;
  auto list = cli(s, {"list", "--jsn"});
  CAF_MESSAGE(list.err);
  CAF_CHECK_EQUAL(list.status, 2);
  CAF_CHECK(contains(list.err, "unknown option --jsn (did you mean "
                               "\"--json\"?)"));
  // A global option misspelt after the command is one too.
  auto run = cli(s, {"run", "--confg", "x.json", "TASKS.md"});
  CAF_CHECK_EQUAL(run.status, 2);
  CAF_CHECK(contains(run.err, "did you mean \"--config\"?"));
  // A beginning only one option has.
  auto prefix = cli(s, {"run", "TASKS.md", "--max-conc", "2"});
  CAF_CHECK_EQUAL(prefix.status, 2);
  CAF_CHECK(contains(prefix.err, "did you mean \"--max-concurrency\"?"));
  auto logs = cli(s, {"logs", "t1", "--foll"});
  CAF_CHECK_EQUAL(logs.status, 2);
  CAF_CHECK(contains(logs.err, "did you mean \"--follow\"?"));
  // A flag given a value is told so.
  auto valued = cli(s, {"list", "--json=yes"});
  CAF_CHECK_EQUAL(valued.status, 2);
  CAF_CHECK(contains(valued.err, "option --json takes no value"));
}

CAF_TEST(a misspelt command names the nearest command) {
  scenario s;
  auto r = cli(s, {"stauts"});
  CAF_MESSAGE(r.err);
  CAF_CHECK_EQUAL(r.status, 2);
  CAF_CHECK(contains(r.err, "unknown command \"stauts\" (did you mean "
                            "\"status\"?)"));
  // Nothing near: no guess.
  auto far = cli(s, {"xyzzyplugh"});
  CAF_CHECK_EQUAL(far.status, 2);
  CAF_CHECK(contains(far.err, "unknown command \"xyzzyplugh\""));
  CAF_CHECK(!contains(far.err, "did you mean"));
  // A guess keeps something of what was typed.
  auto two = cli(s, {"go"});
  CAF_CHECK_EQUAL(two.status, 2);
  CAF_CHECK(!contains(two.err, "did you mean"));
  // A task file given without `run`: the command to type.
  s.tasks("- [ ] One\n  - files: a.txt\n  - run: echo a > a.txt\n");
  auto file = cli(s, {"TASKS.md"});
  CAF_CHECK_EQUAL(file.status, 2);
  CAF_CHECK(contains(file.err, "taskforce run TASKS.md"));
  CAF_CHECK(!fs::exists(s.root / ".taskforce" / "ledger.sqlite"));
}

CAF_TEST(a misspelt subcommand names the nearest one) {
  scenario s;
  auto bg = cli(s, {"bg", "stauts"});
  CAF_CHECK_EQUAL(bg.status, 2);
  CAF_CHECK(contains(bg.err, "unknown subcommand \"stauts\" (did you mean "
                             "\"status\"?)"));
  auto monitor = cli(s, {"monitor", "kil"});
  CAF_CHECK_EQUAL(monitor.status, 2);
  CAF_CHECK(contains(monitor.err, "(did you mean \"kill\"?)"));
  auto pool = cli(s, {"pool", "stats"});
  CAF_CHECK_EQUAL(pool.status, 2);
  CAF_CHECK(contains(pool.err, "(did you mean \"status\"?)"));
  // Nothing near: the list of what there is.
  auto far = cli(s, {"bg", "xyzzy"});
  CAF_CHECK_EQUAL(far.status, 2);
  CAF_CHECK(contains(far.err, "(one of prepare, link, start"));
}

// -- help ---------------------------------------------------------------------

CAF_TEST(help CMD prints the help of that command as CMD-- help does) {
  scenario s;
  auto help = cli(s, {"help", "logs"});
  auto dash = cli(s, {"logs", "--help"});
  CAF_CHECK_EQUAL(help.status, 0);
  CAF_CHECK_EQUAL(dash.status, 0);
  CAF_CHECK(help.out.rfind("usage: taskforce logs TASK", 0) == 0);
  CAF_CHECK_EQUAL(help.out, dash.out);
  auto run = cli(s, {"help", "run"});
  CAF_CHECK(run.out.rfind("usage: taskforce run", 0) == 0);
  // `help` alone is the overview, and a success.
  auto overview = cli(s, {"help"});
  CAF_CHECK_EQUAL(overview.status, 0);
  CAF_CHECK(contains(overview.out, "commands:"));
  CAF_CHECK_EQUAL(cli(s, {"help", "--help"}).out, overview.out);
  // An unknown command asked about is one, with the nearest named.
  auto bad = cli(s, {"help", "lgos"});
  CAF_CHECK_EQUAL(bad.status, 2);
  CAF_CHECK(contains(bad.err, "unknown command \"lgos\" (did you mean "
                              "\"logs\"?)"));
}

// -- empty states -------------------------------------------------------------

CAF_TEST(no runs yet is an empty answer for list and status not an error) {
  scenario s;
  auto list = cli(s, {"list"});
  CAF_MESSAGE(list.err);
  CAF_CHECK_EQUAL(list.status, 0);
  CAF_CHECK_EQUAL(list.err, "");
  auto json_list = cli(s, {"list", "--json"});
  CAF_CHECK_EQUAL(json_list.status, 0);
  CAF_CHECK_EQUAL(json_list.out, "[]\n");
  auto status = cli(s, {"status"});
  CAF_CHECK_EQUAL(status.status, 0);
  CAF_CHECK(contains(status.out, "no run yet"));
  auto json_status = cli(s, {"status", "--json"});
  CAF_CHECK_EQUAL(json_status.status, 0);
  CAF_CHECK_EQUAL(json_status.out, "{\"run\":null,\"tasks\":[]}\n");
  // Reading made nothing.
  CAF_CHECK(!fs::exists(s.root / ".taskforce" / "ledger.sqlite"));
  // A run asked for by id that is not there is still an error.
  auto missing = cli(s, {"status", "--run", "20990101-000000-none"});
  CAF_CHECK_EQUAL(missing.status, 2);
  CAF_CHECK(contains(missing.err, "no run 20990101-000000-none"));
}

// -- logs ---------------------------------------------------------------------

CAF_TEST(logs reads as text with local times durations the gate tail and only
           paths that exist) {
  scenario s;
  s.set_config(R"({"run": {"maxAttempts": 1, "repairOnFailure": false,
                  "continueOnError": true}})");
  // Two in a row: the second takes over the first one's worktree folder
  // once the first is merged, and keeps it when its gate fails.
  s.tasks("- [ ] One\n  - files: a.txt\n"
          "  - run: echo WORKER-ONE; echo a > a.txt\n"
          "  - verify: echo GATE-ONE-FINE\n"
          "- [ ] Two\n  - files: b.txt\n  - deps: 1\n"
          "  - run: echo b > b.txt\n  - verify: echo GATE-TWO-NO; exit 1\n");
  CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  auto run_id = s.run().id;
  auto one = s.task("t1");
  auto two = s.task("t2");
  CAF_REQUIRE(one.worktree.has_value());
  CAF_REQUIRE(two.worktree.has_value());
  // Five hours east of UTC, named XYZ.
  std::vector<std::pair<std::string, std::string>> tz{{"TZ", "XYZ-5"}};
  auto r = cli(s, {"logs", "t1"}, tz);
  CAF_MESSAGE(r.out);
  CAF_CHECK_EQUAL(r.status, 0);
  auto h = s.ledger().history(run_id, "t1");
  CAF_REQUIRE(h && !h->events.empty());
  // Times are local: each event at its time five hours on, no epoch
  // milliseconds, no raw ledger JSON.
  for (auto& e : h->events)
    CAF_CHECK(contains(r.out, "  " + shifted_time(e.at_ms, 5) + "  "));
  CAF_CHECK(contains(r.out, "started: " + shifted_time(*one.started_ms, 5)
                              + " XYZ, took "));
  CAF_CHECK(!contains(r.out, std::to_string(h->events.front().at_ms)));
  CAF_CHECK(!contains(r.out, "\"kind\""));
  CAF_CHECK(contains(r.out, "ready -> running (attempt 1)\n"));
  CAF_CHECK(contains(r.out, "verifying -> merging (attempt 1, exit 0)\n"));
  // Each attempt with its start and duration.
  CAF_CHECK(contains(r.out, "attempt 1: passed (exit 0), started "
                              + shifted_time(h->attempts.front().started_ms, 5)
                              + ", took "));
  CAF_CHECK(contains(r.out, "gate output of attempt 1 (tail):\n"
                            "GATE-ONE-FINE\n"));
  CAF_CHECK(contains(r.out, "worker output of attempt 1 (tail):\n"
                            "WORKER-ONE\n"));
  // The first task's folder holds the second one's work now: not shown as
  // the first one's worktree; its merged branch is gone.
  CAF_CHECK(!contains(r.out, "worktree: " + *one.worktree + "\n"));
  CAF_CHECK(contains(r.out, "worktree: removed (its folder now holds taskforce/"
                              + run_id + "/t2)\n"));
  CAF_CHECK(contains(r.out, "branch: taskforce/" + run_id + "/t1 (removed)\n"));
  // Every path it names exists.
  for (auto& line : lines_of(r.out)) {
    auto at = line.find('/');
    if (line.rfind("  /", 0) == 0)
      CAF_CHECK(fs::exists(line.substr(at)));
  }
  // The second task's worktree is its own: shown, with its failed gate.
  auto r2 = cli(s, {"logs", "t2"}, tz);
  CAF_CHECK_EQUAL(r2.status, 0);
  CAF_CHECK(contains(r2.out, "worktree: " + *two.worktree + "\n"));
  CAF_CHECK(contains(r2.out, "branch: taskforce/" + run_id + "/t2\n"));
  CAF_CHECK(contains(r2.out, "verifying -> failed (attempt 1, exit 1): gate "
                             "failed (exit 1)\n"));
  CAF_CHECK(
    contains(r2.out, "gate output of attempt 1 (tail):\nGATE-TWO-NO\n"));
  // Once the log files are gone, the ledger's tail of the gate stays, and
  // no removed file is named.
  fs::remove_all(s.root / ".taskforce" / "logs");
  auto r3 = cli(s, {"logs", "t2"}, tz);
  CAF_CHECK_EQUAL(r3.status, 0);
  CAF_CHECK(contains(r3.out, "last gate output (tail):\nGATE-TWO-NO\n"));
  CAF_CHECK(!contains(r3.out, "worker.log"));
  CAF_CHECK(!contains(r3.out, "verify.log"));
}

CAF_TEST(diff shows a task its own work and nothing for one that changed
           nothing) {
  for (auto in_place : {false, true}) {
    CAF_MESSAGE("in place: " << in_place);
    scenario s;
    s.set_config(in_place ? R"({"run": {"useWorktrees": false}})" : "{}");
    // The second task changes nothing; the base it found holds the first
    // one's work (and, before it, the commit of the task file).
    s.tasks("- [ ] One\n  - files: a.txt\n  - run: echo A-LINE > a.txt\n"
            "- [ ] Two\n  - files: b.txt\n  - deps: 1\n  - run: true\n");
    CAF_REQUIRE_EQUAL(s.tf({"run", "TASKS.md"}).code, 0);
    auto one = cli(s, {"diff", "t1"});
    CAF_CHECK_EQUAL(one.status, 0);
    CAF_CHECK(contains(one.out, "+A-LINE"));
    auto two = cli(s, {"diff", "t2"});
    CAF_MESSAGE(two.out << two.err);
    CAF_CHECK_EQUAL(two.status, 0);
    CAF_CHECK_EQUAL(two.out, "");
    CAF_CHECK(contains(two.err, "task t2 changed nothing"));
  }
}

CAF_TEST(logs follow prints a running task output as it comes until it ends) {
  scenario s;
  auto flag = (s.dir.path() / "go.flag").string();
  s.tasks("- [ ] Slow\n  - files: a.txt\n"
          "  - run: echo BEFORE-THE-FLAG; for i in $(seq 1200); do test -f "
          + flag
          + " && break; sleep 0.05; done; echo AFTER-THE-FLAG; echo a > a.txt\n"
            "  - verify: echo GATE-RAN\n");
  auto driver = start_taskforce(s, {"run", "TASKS.md"}, "run.log");
  // The worker runs and has written its first line.
  CAF_REQUIRE(eventually([&] {
    return contains(s.tf({"logs", "t1"}).output, "BEFORE-THE-FLAG");
  }));
  proc::spawn_options o;
  o.argv = {TASKFORCE_BINARY,
            "--repo",
            s.root.string(),
            "--config",
            s.config.string(),
            "logs",
            "-f",
            "t1"};
  o.env = {{"NO_COLOR", "1"}};
  o.in = proc::stdio::null();
  auto out = s.dir.path() / "follow.out";
  o.out = proc::stdio::file(out.string());
  o.err = proc::stdio::file((s.dir.path() / "follow.err").string());
  auto follower = proc::spawn(o);
  // It shows what is there already and keeps following.
  CAF_REQUIRE(eventually([&] {
    return contains(read_file(out), "BEFORE-THE-FLAG");
  }));
  CAF_CHECK(!contains(read_file(out), "AFTER-THE-FLAG"));
  { std::ofstream{flag} << "go\n"; }
  // It ends by itself once the task is done, with what came after.
  auto status = ended(follower.pid);
  auto text = read_file(out);
  CAF_MESSAGE(text);
  CAF_CHECK(status.has_value());
  CAF_CHECK(status && status->code == 0);
  CAF_CHECK(contains(text, "AFTER-THE-FLAG\n"));
  CAF_CHECK(text.find("BEFORE-THE-FLAG") < text.find("AFTER-THE-FLAG"));
  CAF_CHECK(contains(text, "GATE-RAN\n"));
  CAF_CHECK(contains(text, "t1 running -> verifying (attempt 1)"));
  CAF_CHECK(contains(text, "-- t1 is done\n"));
  CAF_CHECK(text.find("AFTER-THE-FLAG") < text.find("-- t1 is done"));
  CAF_CHECK_EQUAL(proc::wait_for(driver.pid).code, 0);
  // A task that is over: its output and how it ended, at once.
  auto again = s.tf({"logs", "--follow", "t1"});
  CAF_CHECK_EQUAL(again.code, 0);
  CAF_CHECK(contains(again.output, "AFTER-THE-FLAG\n"));
  CAF_CHECK(contains(again.output, "-- t1 is done\n"));
  // --json is for a finished picture; following prints text.
  auto both = s.tf({"logs", "-f", "--json", "t1"});
  CAF_CHECK_EQUAL(both.code, 2);
}
