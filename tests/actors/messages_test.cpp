#define CAF_SUITE actors.messages
#include <caf/test/unit_test.hpp>

#include <caf/all.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include "messages/interfaces.hpp"

using namespace taskforce;

namespace {

struct registered_config : caf::actor_system_config {
  registered_config() {
    add_message_types<caf::id_block::taskforce>();
  }
};

template <class T>
T round_trip(caf::actor_system& sys, T value) {
  std::vector<char> buffer;
  caf::binary_serializer sink{sys, buffer};
  if (auto err = sink(value))
    CAF_FAIL("serialization failed: " << sys.render(err));
  T copy;
  caf::binary_deserializer source{sys, buffer};
  if (auto err = source(copy))
    CAF_FAIL("deserialization failed: " << sys.render(err));
  return copy;
}

} // namespace

CAF_TEST(every pool message survives serialization) {
  registered_config cfg;
  caf::actor_system sys{cfg};
  acquire_request req{"s1", "h1", holder_kind::background, "c1", "p", "task",
                      7};
  CAF_CHECK(round_trip(sys, req) == req);
  pool_event ev;
  ev.kind = pool_event_kind::released;
  ev.holder = "h1";
  ev.reason = release_reason::disconnected;
  CAF_CHECK(round_trip(sys, ev) == ev);
  pool_status st{"global", 2, {{"*", {{"h", "s", holder_kind::foreground, 5,
                                       true}},
                                {{"q", "s", 1, 3}}}}};
  CAF_CHECK(round_trip(sys, st) == st);
}

CAF_TEST(error codes render with their protocol names) {
  auto err = caf::make_error(errc::pool_full, "no permit free");
  CAF_CHECK_EQUAL(err.category(), caf::atom("taskforce"));
  CAF_CHECK_EQUAL(to_string(static_cast<errc>(err.code())),
                  std::string{"pool_full"});
}
