// The validations of a completion gate with real processes: in order, each
// in its own process group with a time limit that reaches descendants
// ignoring SIGTERM, stopping at the first failure, output capped in the
// result and whole in the log, run inside the repository only.
#define CAF_SUITE unit.validation
#include <caf/test/unit_test.hpp>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "src/control/error.hpp"
#include "src/control/validation.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::control;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct fixture {
  test::temp_dir repo;
  test::temp_dir outside;

  validation_options options() {
    validation_options o;
    o.repository = repo.path();
    o.task_id = "bg-1";
    o.timeout = 60s;
    o.kill_grace = 200ms;
    return o;
  }

  /// The pid a command wrote to `name` in the repository, once written.
  pid_t pid_in(const std::string& name) {
    pid_t pid = -1;
    test::eventually([&] {
      std::ifstream in(repo.path() / name);
      return static_cast<bool>(in >> pid);
    });
    return pid;
  }
};

bool alive(pid_t pid) {
  return pid > 0 && ::kill(pid, 0) == 0;
}

/// A shell that ignores SIGTERM and starts a descendant that ignores it
/// too, leaves the process group, writes its pid and loops for ever.
const char* stubborn = "trap '' TERM; "
                       "setsid sh -c 'trap \"\" TERM; echo $$ > desc.pid; "
                       "while :; do sleep 0.05; done' & "
                       "while :; do sleep 0.05; done";

} // namespace

CAF_TEST_FIXTURE_SCOPE(validation_tests, fixture)

CAF_TEST(a passing command succeeds with its output and a full log) {
  auto report = run_validations({"printf success"}, options());
  CAF_REQUIRE_EQUAL(report.results.size(), 1u);
  auto& r = report.results[0];
  CAF_CHECK_EQUAL(r.status, validation_status::success);
  CAF_CHECK_EQUAL(r.exit_code, 0);
  CAF_CHECK_EQUAL(r.output, "success");
  CAF_CHECK(report.passed());
  CAF_CHECK_EQUAL(report.reason(), "");
  CAF_CHECK_EQUAL(
    r.log_file,
    (repo.path() / ".taskforce/logs/bg/bg-1/validation-1.log").string());
  CAF_CHECK_EQUAL(test::read_file(r.log_file), "success");
}

CAF_TEST(the first failure stops the rest and names the command) {
  auto report = run_validations({"exit 7", "touch marker"}, options());
  CAF_REQUIRE_EQUAL(report.results.size(), 1u);
  CAF_CHECK_EQUAL(report.results[0].status, validation_status::failure);
  CAF_CHECK_EQUAL(report.results[0].exit_code, 7);
  CAF_CHECK(!fs::exists(repo.path() / "marker"));
  CAF_CHECK(!report.passed());
  CAF_CHECK(report.reason().find("Validation failed") != std::string::npos);
  CAF_CHECK(report.reason().find("`exit 7`") != std::string::npos);
}

CAF_TEST(a command past its time limit is a timeout and ends soon after) {
  auto o = options();
  o.timeout = 30ms;
  auto report = run_validations({"sleep 2"}, o);
  CAF_REQUIRE_EQUAL(report.results.size(), 1u);
  CAF_CHECK_EQUAL(report.results[0].status, validation_status::timeout);
  // Killed by the limit, not waited out.
  CAF_CHECK_LESS(report.results[0].duration_ms, 1500);
  CAF_CHECK(report.reason().find("timed out") != std::string::npos);
}

CAF_TEST(an abort from another thread stops the command as aborted) {
  auto o = options();
  std::thread aborter([&] {
    test::eventually([&] {
      return fs::exists(repo.path() / "started");
    });
    o.cancel.cancel();
  });
  auto report = run_validations({"touch started; sleep 30", "touch next"}, o);
  aborter.join();
  CAF_REQUIRE_EQUAL(report.results.size(), 1u);
  CAF_CHECK_EQUAL(report.results[0].status, validation_status::aborted);
  CAF_CHECK(!fs::exists(repo.path() / "next"));
}

CAF_TEST(an abort before the start runs nothing) {
  auto o = options();
  o.cancel.cancel();
  auto report = run_validations({"touch ran"}, o);
  CAF_REQUIRE_EQUAL(report.results.size(), 1u);
  CAF_CHECK_EQUAL(report.results[0].status, validation_status::aborted);
  CAF_CHECK(!fs::exists(repo.path() / "ran"));
}

CAF_TEST(a timeout kills a descendant that ignores TERM and left the group) {
  auto o = options();
  o.timeout = 300ms;
  auto report = run_validations({stubborn}, o);
  CAF_REQUIRE_EQUAL(report.results.size(), 1u);
  CAF_CHECK_EQUAL(report.results[0].status, validation_status::timeout);
  auto pid = pid_in("desc.pid");
  CAF_REQUIRE_GREATER(pid, 0);
  CAF_CHECK(!alive(pid));
}

CAF_TEST(an abort kills a descendant that ignores TERM and left the group) {
  auto o = options();
  std::thread aborter([&] {
    test::eventually([&] {
      return fs::exists(repo.path() / "desc.pid");
    });
    o.cancel.cancel();
  });
  auto report = run_validations({stubborn}, o);
  aborter.join();
  CAF_REQUIRE_EQUAL(report.results.size(), 1u);
  CAF_CHECK_EQUAL(report.results[0].status, validation_status::aborted);
  auto pid = pid_in("desc.pid");
  CAF_REQUIRE_GREATER(pid, 0);
  CAF_CHECK(!alive(pid));
}

CAF_TEST(a descendant left behind by a command that exited is cleaned up) {
  auto report = run_validations(
    {"(trap '' TERM; sleep 30) & echo $! > bg.pid; exit 0"}, options());
  CAF_REQUIRE_EQUAL(report.results.size(), 1u);
  CAF_CHECK_EQUAL(report.results[0].status, validation_status::success);
  auto pid = pid_in("bg.pid");
  CAF_REQUIRE_GREATER(pid, 0);
  CAF_CHECK(!alive(pid));
}

CAF_TEST(the answer carries at most the output cap and the log all of it) {
  auto o = options();
  o.max_output_bytes = 32;
  auto report = run_validations({"head -c 1024 /dev/zero | tr '\\0' x"}, o);
  CAF_REQUIRE_EQUAL(report.results.size(), 1u);
  auto& r = report.results[0];
  CAF_CHECK_EQUAL(r.status, validation_status::success);
  CAF_CHECK_LESS_OR_EQUAL(r.output.size(), 32u);
  CAF_CHECK(r.output_truncated);
  CAF_CHECK_EQUAL(test::read_file(r.log_file), std::string(1024, 'x'));
}

CAF_TEST(later completions keep the logs of earlier ones) {
  auto first = run_validations({"echo one", "echo two"}, options());
  auto second = run_validations({"echo three"}, options());
  CAF_REQUIRE_EQUAL(second.results.size(), 1u);
  CAF_CHECK(second.results[0].log_file.find("validation-3.log")
            != std::string::npos);
  CAF_CHECK_EQUAL(test::read_file(first.results[0].log_file), "one\n");
  CAF_CHECK_EQUAL(test::read_file(second.results[0].log_file), "three\n");
}

CAF_TEST(commands run in the given folder inside the repository) {
  fs::create_directories(repo.path() / "sub");
  auto o = options();
  o.cwd = "sub";
  auto report = run_validations({"pwd -P"}, o);
  CAF_REQUIRE_EQUAL(report.results.size(), 1u);
  CAF_CHECK_EQUAL(report.results[0].output,
                  fs::canonical(repo.path() / "sub").string() + "\n");
}

CAF_TEST(a cwd outside the repository is refused and nothing runs) {
  fs::create_directories(repo.path() / "inside");
  fs::create_symlink(outside.path(), repo.path() / "escape");
  for (std::string cwd :
       std::vector<std::string>{"../outside", outside.path().string(), "escape",
                                "escape/x/..", ".git", "nope"}) {
    auto o = options();
    o.cwd = cwd;
    try {
      run_validations({"touch ran"}, o);
      CAF_FAIL("cwd " << cwd << " was accepted");
    } catch (const control_error& e) {
      CAF_CHECK_EQUAL(e.code(), control_errc::bad_request);
      CAF_CHECK(std::string{e.what()}.find("must be inside the repository")
                != std::string::npos);
      CAF_MESSAGE(e.what());
    }
  }
  CAF_CHECK(!fs::exists(repo.path() / "ran"));
  CAF_CHECK(!fs::exists(outside.path() / "ran"));
  // The top folder itself, spelled in any way, is fine.
  for (std::string cwd :
       std::vector<std::string>{"", ".", "inside/..", repo.path().string()})
    CAF_CHECK_EQUAL(resolve_cwd(repo.path(), cwd), fs::canonical(repo.path()));
}

CAF_TEST_FIXTURE_SCOPE_END()
