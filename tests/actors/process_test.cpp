// The process helper with real processes on the real scheduler: it tells
// its owner the start and the exit of a command as messages, and the owner
// stops the command by its mark through the process registry alone.
#define CAF_SUITE actors.process
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <caf/all.hpp>

#include "actors/process.hpp"
#include "actors/runtime_config.hpp"
#include "src/proc/registry.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace std::chrono_literals;

namespace {

struct fixture {
  runtime_config cfg{2, false};
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  test::temp_dir dir;

  process_job job(std::vector<std::string> argv) {
    process_job j;
    j.run.argv = std::move(argv);
    j.run.label = "process-test/";
    j.run.cwd = dir.path().string();
    j.owner = caf::actor_cast<caf::actor>(self);
    return j;
  }

  /// Who sent the last message `next` returned.
  caf::strong_actor_ptr sender;

  /// The next message of the helper, whatever it is.
  caf::message next() {
    caf::message got;
    self->receive(
      [&](proc_started& x) {
        got = caf::make_message(std::move(x));
        sender = self->current_sender();
      },
      [&](proc_output& x) {
        got = caf::make_message(std::move(x));
        sender = self->current_sender();
      },
      [&](proc_exited& x) {
        got = caf::make_message(std::move(x));
        sender = self->current_sender();
      },
      caf::after(std::chrono::seconds(60)) >>
        [] {
          CAF_FAIL("the helper said nothing for 60 s");
        });
    return got;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(process_tests, fixture)

CAF_TEST(the helper reports the start and the exit of a real command) {
  spawn_process(sys, job({"sh", "-c", "echo ran in $PWD; exit 3"}));
  auto first = next();
  CAF_REQUIRE(first.match_elements<proc_started>());
  auto started = first.get_as<proc_started>(0);
  CAF_CHECK_GREATER(started.pid, 0);
  CAF_CHECK(started.mark.rfind("process-test/#", 0) == 0);
  auto second = next();
  CAF_REQUIRE(second.match_elements<proc_exited>());
  auto exit = second.get_as<proc_exited>(0);
  CAF_CHECK_EQUAL(exit.exit_code, 3);
  CAF_CHECK_EQUAL(exit.description, "exit 3");
  CAF_CHECK(exit.error.empty());
  CAF_CHECK(exit.tail.find("ran in " + dir.path().string())
            != std::string::npos);
}

CAF_TEST(a command that cannot start is an exit with the reason and no start) {
  spawn_process(sys, job({"taskforce-no-such-agent", "-p", "x"}));
  auto only = next();
  CAF_REQUIRE(only.match_elements<proc_exited>());
  auto exit = only.get_as<proc_exited>(0);
  CAF_CHECK(!exit.success());
  CAF_CHECK_EQUAL(exit.error, "cannot run 'taskforce-no-such-agent' in '"
                                + dir.path().string()
                                + "': No such file or directory");
}

CAF_TEST(the owner kills the command by its mark and nothing of it survives) {
  // It ignores TERM and leaves a child outside its group.
  spawn_process(sys, job({"sh", "-c",
                          "trap '' TERM; setsid sleep 60 & echo pid:$!; "
                          "sleep 60"}));
  auto first = next();
  CAF_REQUIRE(first.match_elements<proc_started>());
  auto started = first.get_as<proc_started>(0);
  CAF_CHECK(proc::kill_running(started.mark));
  auto second = next();
  CAF_REQUIRE(second.match_elements<proc_exited>());
  auto exit = second.get_as<proc_exited>(0);
  CAF_CHECK_EQUAL(exit.signal, SIGKILL);
  CAF_CHECK_EQUAL(exit.description, "signal 9 (Killed)");
  // The run is over: the mark names nothing any more.
  CAF_CHECK(!proc::kill_running(started.mark));
  auto at = exit.tail.find("pid:");
  if (at != std::string::npos) {
    auto child = std::stoi(exit.tail.substr(at + 4));
    CAF_CHECK(::kill(child, 0) != 0 || proc::is_zombie(child));
  }
}

CAF_TEST(the input files are written before the command reads them) {
  auto j = job({"sh", "-c", "cat; cat notes/prompt.md"});
  auto turn = (dir.path() / "logs" / "turn-2.txt").string();
  j.inputs = {{turn, "the answer\n"},
              {(dir.path() / "notes" / "prompt.md").string(), "the prompt\n"}};
  j.run.stdin_file = turn;
  spawn_process(sys, std::move(j));
  CAF_REQUIRE(next().match_elements<proc_started>());
  auto exit = next().get_as<proc_exited>(0);
  CAF_CHECK_EQUAL(exit.exit_code, 0);
  CAF_CHECK_EQUAL(exit.tail, "the answer\nthe prompt\n");
}

CAF_TEST(output progress comes at most once per interval and bounded) {
  auto j = job({"sh", "-c",
                "for i in 1 2 3 4 5; do printf 'line %s %0500d\\n' $i 0; "
                "sleep 0.02; done"});
  j.progress_every = std::chrono::hours(1);
  j.run.output_bytes = 100;
  spawn_process(sys, std::move(j));
  CAF_REQUIRE(next().match_elements<proc_started>());
  auto progress = next();
  CAF_REQUIRE(progress.match_elements<proc_output>());
  CAF_CHECK_LESS_OR_EQUAL(progress.get_as<proc_output>(0).tail.size(), 100u);
  // One hour between two: the next message is the exit.
  auto last = next();
  CAF_REQUIRE(last.match_elements<proc_exited>());
  CAF_CHECK(last.get_as<proc_exited>(0).tail.find("line 5")
            != std::string::npos);
}

// -- lanes --------------------------------------------------------------------

namespace {

/// The lane `borrower` gets from `lanes`.
caf::actor borrow(caf::scoped_actor& borrower, const caf::actor& lanes) {
  caf::actor lane;
  borrower->request(lanes, caf::infinite, acquire_atom::value)
    .receive(
      [&](caf::actor& x) {
        lane = std::move(x);
      },
      [](caf::error& err) {
        CAF_FAIL("no lane: " << caf::to_string(err));
      });
  return lane;
}

} // namespace

CAF_TEST(a lane runs the commands of its borrower one after the other) {
  auto lanes = spawn_process_lanes(sys);
  auto lane = borrow(self, lanes);
  CAF_REQUIRE(lane);
  CAF_CHECK_EQUAL(borrow(self, lanes), lane);
  for (auto code : {"3", "4"}) {
    self->send(lane, start_atom::value,
               job({"sh", "-c", std::string{"exit "} + code}));
    CAF_REQUIRE(next().match_elements<proc_started>());
    CAF_CHECK(sender == caf::actor_cast<caf::strong_actor_ptr>(lane));
    auto exit = next();
    CAF_REQUIRE(exit.match_elements<proc_exited>());
    CAF_CHECK(sender == caf::actor_cast<caf::strong_actor_ptr>(lane));
    CAF_CHECK_EQUAL(exit.get_as<proc_exited>(0).description,
                    std::string{"exit "} + code);
  }
  caf::anon_send_exit(lanes, caf::exit_reason::user_shutdown);
}

CAF_TEST(
  a lane is lent to one borrower at a time and comes back when it is gone) {
  auto lanes = spawn_process_lanes(sys);
  auto mine = borrow(self, lanes);
  caf::actor theirs;
  {
    caf::scoped_actor other{sys};
    theirs = borrow(other, lanes);
    CAF_CHECK_NOT_EQUAL(theirs, mine);
  }
  // The other borrower is gone: its lane goes to the next one that asks, as
  // soon as the lanes saw it go.
  bool reused = false;
  for (int tries = 0; tries < 10000 && !reused; ++tries) {
    caf::scoped_actor next_one{sys};
    auto lane = borrow(next_one, lanes);
    CAF_REQUIRE_NOT_EQUAL(lane, mine);
    reused = lane == theirs;
  }
  CAF_CHECK(reused);
  caf::anon_send_exit(lanes, caf::exit_reason::user_shutdown);
}

CAF_TEST(the threads of the lanes end with them) {
  auto lanes = spawn_process_lanes(sys);
  auto lane = borrow(self, lanes);
  self->monitor(lane);
  caf::anon_send_exit(lanes, caf::exit_reason::user_shutdown);
  bool down = false;
  self->receive(
    [&](caf::down_msg& d) {
      down = d.source == lane.address();
    },
    caf::after(std::chrono::seconds(60)) >>
      [] {
        CAF_FAIL("the lane outlived its lanes for 60 s");
      });
  CAF_CHECK(down);
}

CAF_TEST_FIXTURE_SCOPE_END()
