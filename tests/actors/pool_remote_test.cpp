#define CAF_SUITE actors.pool_remote
#include <caf/test/unit_test.hpp>

#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include "actors/pool.hpp"

using namespace taskforce;
using namespace std::chrono_literals;

namespace {

struct node_config : caf::actor_system_config {
  node_config() {
    load<caf::io::middleman>();
    add_message_types<caf::id_block::taskforce>();
  }
};

} // namespace

// A real loopback connection between two actor systems: every pool message,
// answer, error and event crosses the network, so a missing type
// registration fails here instead of in production.
CAF_TEST(a remote process shares the pool over the network) {
  node_config server_cfg;
  caf::actor_system server{server_cfg};
  pool_config pc;
  pc.max_parallel = 1;
  pc.mode = pool_mode::global;
  auto pool = spawn_pool(server, pc);
  auto port = server.middleman().publish(pool, 0, "127.0.0.1", true);
  CAF_REQUIRE(port);
  {
    node_config client_cfg;
    caf::actor_system client{client_cfg};
    auto remote
      = client.middleman().remote_actor<pool_actor>("127.0.0.1", *port);
    CAF_REQUIRE(remote);
    caf::scoped_actor self{client};
    auto fail = [](caf::error& e) {
      CAF_FAIL("error: " << to_string(e));
    };
    uint64_t conn = 0;
    self->request(*remote, 5s, attach_atom_v, caf::actor{self})
      .receive(
        [&](uint64_t id) {
          conn = id;
        },
        fail);
    CAF_REQUIRE_NOT_EQUAL(conn, 0u);
    acquire_request first{"s1", "r1", holder_kind::foreground, "", "",
                          "",   conn};
    self->request(*remote, 5s, acquire_atom_v, first)
      .receive(
        [](grant& g) {
          CAF_CHECK_EQUAL(g.permit, 1u);
        },
        fail);
    acquire_request second{"s2", "r2", holder_kind::background, "", "",
                           "",   conn};
    auto pending = self->request(*remote, 5s, acquire_atom_v, second);
    // Events cross too: started for r1, then queued for r2.
    std::vector<pool_event> events;
    for (int i = 0; i < 2; ++i)
      self->receive(
        [&](event_atom, pool_event& ev) {
          events.push_back(ev);
        },
        caf::after(5s) >>
          [] {
            CAF_FAIL("no event");
          });
    CAF_REQUIRE_EQUAL(events.size(), 2u);
    CAF_CHECK(events[0].kind == pool_event_kind::started);
    CAF_CHECK(events[1].kind == pool_event_kind::queued);
    CAF_CHECK_EQUAL(events[1].position, 1u);
    CAF_CHECK_EQUAL(events[1].background, true);
    self->request(*remote, 5s, status_atom_v)
      .receive(
        [](pool_status& st) {
          CAF_CHECK_EQUAL(st.mode, "global");
          CAF_REQUIRE_EQUAL(st.pools.size(), 1u);
          CAF_CHECK_EQUAL(st.pools[0].running.size(), 1u);
          CAF_CHECK_EQUAL(st.pools[0].queued.size(), 1u);
        },
        fail);
    // A duplicate is refused with the taskforce error category intact.
    self->request(*remote, 5s, acquire_atom_v, first)
      .receive(
        [](grant&) {
          CAF_FAIL("duplicate granted");
        },
        [](caf::error& e) {
          CAF_CHECK(e == caf::make_error(errc::duplicate_holder));
        });
    self
      ->request(*remote, 5s, release_atom_v, std::string{"r1"},
                release_reason::completed)
      .receive(
        [](bool released) {
          CAF_CHECK(released);
        },
        fail);
    pending.receive(
      [](grant& g) {
        CAF_CHECK_EQUAL(g.permit, 1u);
      },
      fail);
    self->request(*remote, 5s, detach_atom_v, conn)
      .receive(
        [](std::vector<std::string>& names) {
          CAF_CHECK(names == std::vector<std::string>{"r2"});
        },
        fail);
  }
  caf::anon_send_exit(pool, caf::exit_reason::user_shutdown);
}
