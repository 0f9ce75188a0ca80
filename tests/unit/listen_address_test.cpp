#define CAF_SUITE unit.listen_address
#include <caf/test/unit_test.hpp>

#include <stdexcept>
#include <string>

#include "src/net/listen_address.hpp"

using namespace taskforce;

CAF_TEST(host and port are split at the last colon) {
  auto a = parse_listen_address("0.0.0.0:7411");
  CAF_CHECK_EQUAL(a.host, "0.0.0.0");
  CAF_CHECK_EQUAL(a.port, 7411);
  auto b = parse_listen_address("[::1]:80");
  CAF_CHECK_EQUAL(b.host, "::1");
  CAF_CHECK_EQUAL(b.port, 80);
}

CAF_TEST(a bare port or an empty host binds loopback) {
  CAF_CHECK_EQUAL(parse_listen_address("9000").host, "127.0.0.1");
  CAF_CHECK_EQUAL(parse_listen_address(":0").host, "127.0.0.1");
  CAF_CHECK_EQUAL(parse_listen_address(":0").port, 0);
}

CAF_TEST(bad addresses are refused with the reason) {
  for (auto text : {"host:", "host:99999", "host:x1", "::1:80", "", "a:-1"}) {
    bool refused = false;
    try {
      parse_listen_address(text);
    } catch (const std::invalid_argument& e) {
      refused = std::string{e.what()}.find(text) != std::string::npos;
    }
    CAF_CHECK(refused);
  }
}

CAF_TEST(hosts with spaces controls or empty brackets are refused) {
  for (auto text :
       {"a b:80", "[]:80", "host\n:80", "[::1]x:80", "[12]:80", "h/x:80"}) {
    CAF_MESSAGE(text);
    CAF_CHECK_NOT_EQUAL(listen_address_problem(text), "");
    bool refused = false;
    try {
      parse_listen_address(text);
    } catch (const std::invalid_argument&) {
      refused = true;
    }
    CAF_CHECK(refused);
  }
  for (auto text : {"localhost:80", "my-host.example_1:0", "[fe80::1%eth0]:9",
                    "[::ffff:127.0.0.1]:80", "9"})
    CAF_CHECK_EQUAL(listen_address_problem(text), "");
}
