// The command line's habits as a user of git or ninja expects them: a
// misspelt command or option named with the nearest known one, `help CMD`,
// no runs answered as an empty list rather than an error, `logs` for people
// (local times, durations, the gate's tail, only paths that exist) and
// `logs -f` following a task until it ends.
#define CAF_SUITE e2e.cli_habits
#include <caf/test/unit_test.hpp>

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
  // A task file given without `run`: the command to type.
  s.tasks("- [ ] One\n  - files: a.txt\n  - run: echo a > a.txt\n");
  auto file = cli(s, {"TASKS.md"});
  CAF_CHECK_EQUAL(file.status, 2);
  CAF_CHECK(contains(file.err, "taskforce run TASKS.md"));
  CAF_CHECK(!fs::exists(s.root / ".taskforce" / "ledger.sqlite"));
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
