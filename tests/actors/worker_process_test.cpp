// The worker with real process helpers and real commands on the real
// scheduler (the git service is played by the test, which hears of each
// start through a relay and waits on pidfds, never on a clock): a cancel kills
// the running command at once and the attempt is interrupted; a worker that
// dies while its command runs takes the command with it.
#define CAF_SUITE actors.worker_process
#include <caf/test/unit_test.hpp>

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

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

/// Stands between a helper and its worker: forwards what the helper says
/// as the helper (the worker knows its helper by the sender), and tells
/// `test` when the command started.
caf::behavior relay(caf::event_based_actor* self, caf::actor worker,
                    caf::actor test) {
  auto as_helper = [self] {
    return caf::actor_cast<caf::actor>(self->current_sender());
  };
  return {
    [=](proc_started& x) {
      caf::anon_send(test, x);
      caf::send_as(as_helper(), worker, x);
    },
    [=](proc_output& x) {
      caf::send_as(as_helper(), worker, x);
    },
    [=](proc_exited& x) {
      caf::send_as(as_helper(), worker, x);
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

  /// A worker whose task sleeps.
  void start() {
    worker_job j;
    j.run_id = "r1";
    j.task.id = "t1";
    j.task.run = "exec sleep 60";
    j.cfg.worker = "shell";
    j.root = root.path();
    j.git = sys.spawn(fake_git, worktree.path().string());
    j.orchestrator = caf::actor_cast<caf::actor>(self);
    auto h = helpers;
    auto test = caf::actor_cast<caf::actor>(self);
    j.processes = [h, test](caf::actor_system& s, process_job pj) {
      pj.owner = s.spawn(relay, pj.owner, test);
      auto helper = spawn_process(s, std::move(pj));
      h->push_back(helper);
      return helper;
    };
    worker = spawn_worker(sys, std::move(j));
  }

  /// The command's pid, once it started.
  pid_t command_pid() {
    pid_t pid = -1;
    self->receive(
      [&](proc_started& x) {
        pid = static_cast<pid_t>(x.pid);
      },
      caf::after(std::chrono::seconds(60)) >>
        [] {
          CAF_FAIL("the command never started");
        });
    return pid;
  }

  /// Whether `pid` ends within `patience`: waits on its pidfd, not a clock.
  static bool ends_within(pid_t pid, std::chrono::milliseconds patience) {
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0)
      return true; // gone already
    pollfd p{fd, POLLIN, 0};
    int rc;
    while ((rc = ::poll(&p, 1, static_cast<int>(patience.count()))) < 0
           && errno == EINTR)
      ;
    ::close(fd);
    return rc > 0 || dead(pid);
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
  CAF_CHECK(ends_within(pid, 5s));
}

CAF_TEST_FIXTURE_SCOPE_END()
