// The session actor on the deterministic scheduler: it turns a harness's
// calls into pool requests, and it watches the pool it waits on.
#define CAF_SUITE actors.session
#define FAIL(m) CAF_FAIL(m)
#include <caf/test/dsl.hpp>

#include "actors/session.hpp"

using namespace taskforce;

namespace {

struct session_cfg : caf::actor_system_config {
  session_cfg() {
    add_message_types<caf::id_block::taskforce>();
  }
};

/// A pool that takes every acquire and never answers it (a queued wait),
/// and attaches nobody.
pool_actor::behavior_type
silent_pool(pool_actor::stateful_pointer<caf::unit_t> self) {
  return {
    [self](acquire_atom, acquire_request&) -> caf::result<grant> {
      return self->make_response_promise<grant>();
    },
    [](adopt_atom, adopt_request&) -> caf::result<grant> {
      return grant{};
    },
    [](release_atom, std::string&, release_reason) {
      return true;
    },
    [](bind_atom, std::string&, std::string&) {
      return false;
    },
    [](caf::idle_atom, std::string&) {
      return std::vector<std::string>{};
    },
    [](end_atom, std::string&) {
      return std::vector<std::string>{};
    },
    [](status_atom) {
      return pool_status{};
    },
    [](attach_atom, caf::actor&) {
      return uint64_t{1};
    },
    [](subscribe_atom, uint64_t) {
      return true;
    },
    [](detach_atom, uint64_t) {
      return std::vector<std::string>{};
    },
    [](expired_atom, uint64_t, uint64_t) {},
  };
}

struct fixture : test_coordinator_fixture<session_cfg> {
  pool_actor pool = sys.spawn(silent_pool);
  session_actor session = spawn_session(sys, "s1", pool, 1);
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(session_tests, fixture)

CAF_TEST(a call still waiting fails with shutting_down when the pool dies) {
  run();
  auto waiting = self->request(session, caf::infinite, acquire_atom::value,
                               std::string{"call-1"}, holder_kind::foreground,
                               std::string{}, std::string{}, std::string{});
  run();
  // The pool holds the wait: no answer yet.
  CAF_CHECK(self->mailbox().empty());
  // The pool is killed with the wait in hand: its promise dies unanswered,
  // and the session answers for it.
  anon_send_exit(pool, caf::exit_reason::kill);
  run();
  caf::error failed;
  bool granted = false;
  waiting.receive(
    [&](grant&) {
      granted = true;
    },
    [&](caf::error& err) {
      failed = err;
    });
  CAF_CHECK(!granted);
  CAF_REQUIRE(failed);
  CAF_CHECK_EQUAL(failed.category(), caf::atom("taskforce"));
  CAF_CHECK_EQUAL(static_cast<errc>(failed.code()), errc::shutting_down);
  // And the session went with its pool.
  CAF_CHECK(session->getf(caf::abstract_actor::is_terminated_flag));
}

CAF_TEST_FIXTURE_SCOPE_END()
