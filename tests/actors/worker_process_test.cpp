// The worker with real process helpers and real commands on the real
// scheduler (the git service is played by the test): a cancel kills the
// running command at once and the attempt is interrupted; a worker that
// dies while its command runs takes the command with it.
#define CAF_SUITE actors.worker_process
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <thread>

#include <caf/all.hpp>

#include "actors/runtime_config.hpp"
#include "actors/worker.hpp"
#include "src/proc/registry.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace std::chrono_literals;

namespace {

git_actor::behavior_type fake_git(std::string worktree) {
  return {
    [worktree](lease_atom, worktree_request&) {
      return worktree_lease{worktree, "taskforce/r1/t1", false, "c0"};
    },
    [](snapshot_atom, scope_request&) {
      return std::string{"c0"};
    },
    [](release_atom, scope_request&) {
      // The attempt in place is over.
    },
    [](changed_atom, scope_request&) {
      return scope_report{};
    },
    [](merge_atom, merge_request&) {
      return merge_outcome{};
    },
    [](check_atom, merge_request&) {
      return merge_outcome{};
    },
    [](review_atom, scope_request&, std::vector<std::string>&) {
      return caf::result<std::string, std::string>{std::string{},
                                                   std::string{}};
    },
    [](reviewed_atom, scope_request&, std::string&) {
      return std::vector<std::string>{};
    },
    [](discard_atom, std::string&, std::string&) {
      return true;
    },
    [](finished_atom) {
      return true;
    },
  };
}

struct fixture {
  runtime_config cfg{2, false};
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  test::temp_dir root;
  test::temp_dir worktree;
  std::shared_ptr<std::vector<caf::actor>> helpers
    = std::make_shared<std::vector<caf::actor>>();
  caf::actor worker;

  /// A worker whose task writes its pid to `pid` and sleeps.
  void start() {
    worker_job j;
    j.run_id = "r1";
    j.task.id = "t1";
    j.task.run = "echo $$ > pid; exec sleep 60";
    j.cfg.worker = "shell";
    j.root = root.path();
    j.git = sys.spawn(fake_git, worktree.path().string());
    j.orchestrator = caf::actor_cast<caf::actor>(self);
    auto h = helpers;
    j.processes = [h](caf::actor_system& s, process_job pj) {
      auto helper = spawn_process(s, std::move(pj));
      h->push_back(helper);
      return helper;
    };
    worker = spawn_worker(sys, std::move(j));
  }

  /// The command's pid, once it wrote it.
  pid_t command_pid() {
    auto file = worktree.path() / "pid";
    for (int i = 0; i < 6000; ++i) {
      auto text = test::read_file(file);
      if (!text.empty() && text.back() == '\n')
        return std::stoi(text);
      std::this_thread::sleep_for(10ms);
    }
    CAF_FAIL("the command never started");
  }

  /// The attempt's outcome (progress messages skipped).
  attempt_outcome outcome() {
    attempt_outcome got;
    bool done = false;
    while (!done)
      self->receive([&](progress_atom, attempt_progress&) {},
                    [&](outcome_atom, attempt_outcome& o) {
                      got = std::move(o);
                      done = true;
                    },
                    caf::after(std::chrono::seconds(60)) >>
                      [] {
                        CAF_FAIL("no outcome within 60 s");
                      });
    return got;
  }

  static bool dead(pid_t pid) {
    return ::kill(pid, 0) != 0 || proc::is_zombie(pid);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(worker_process_tests, fixture)

CAF_TEST(a cancel kills the running command and the attempt is interrupted) {
  start();
  auto pid = command_pid();
  CAF_CHECK(!dead(pid));
  self->send(worker, cancel_atom::value);
  auto o = outcome();
  CAF_CHECK(o.end == run::attempt_end::interrupted);
  CAF_CHECK_EQUAL(o.reason, "interrupted");
  // Interrupted only once nothing of it runs.
  CAF_CHECK(dead(pid));
}

CAF_TEST(a worker that dies takes its running command along) {
  start();
  auto pid = command_pid();
  anon_send_exit(worker, caf::exit_reason::kill);
  for (int i = 0; i < 500 && !dead(pid); ++i)
    std::this_thread::sleep_for(10ms);
  CAF_CHECK(dead(pid));
}

CAF_TEST_FIXTURE_SCOPE_END()
