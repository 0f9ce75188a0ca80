#define CAF_SUITE unit.listen_address
#include <caf/test/unit_test.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

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

CAF_TEST(an address prints as HOST : PORT with an IPv6 host in brackets) {
  CAF_CHECK_EQUAL(to_string(listen_address{"127.0.0.1", 7411}),
                  "127.0.0.1:7411");
  CAF_CHECK_EQUAL(to_string(listen_address{"::1", 80}), "[::1]:80");
}

CAF_TEST(a bound port is in use and a free one is no problem) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  CAF_REQUIRE_EQUAL(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  CAF_REQUIRE_EQUAL(::listen(fd, 1), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  listen_address busy{"127.0.0.1", ntohs(addr.sin_port)};
  CAF_CHECK_EQUAL(bind_problem(busy), "address in use");
  ::close(fd);
  CAF_CHECK_EQUAL(bind_problem(listen_address{"127.0.0.1", 0}), "");
  // An address of no interface here.
  CAF_CHECK_EQUAL(bind_problem(listen_address{"192.0.2.1", 0}),
                  "cannot assign requested address");
}
