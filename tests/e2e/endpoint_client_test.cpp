// The client commands use to reach a running server (src/net/endpoint),
// against the real `taskforce serve --listen`.
#define CAF_SUITE e2e.endpoint_client
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>

#include "e2e/protocol_client.hpp"
#include "e2e/stranger.hpp"
#include "src/net/endpoint.hpp"
#include "src/proc/spawn.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct fixture {
  temp_dir dir;
  std::unique_ptr<serve_process> server;

  fs::path endpoint() const {
    return dir.path() / "endpoint.json";
  }

  void start() {
    server = std::make_unique<serve_process>(
      TASKFORCE_BINARY,
      std::vector<std::string>{"serve", "--listen", "127.0.0.1:0",
                               "--token-file", endpoint().string()});
    CAF_REQUIRE(server->stderr_line().has_value());
  }

  /// The code of the endpoint_error that `f` throws; 0 when none.
  template<class F>
  int failure(F f) {
    try {
      f();
      return 0;
    } catch (const net::endpoint_error& e) {
      CAF_MESSAGE(e.what());
      last_message = e.what();
      return static_cast<int>(e.code());
    }
  }

  std::string last_message;

  ~fixture() {
    if (server && server->running()) {
      server->signal(SIGTERM);
      try {
        server->wait();
      } catch (const std::runtime_error&) {
      }
    }
  }
};

int code(net::endpoint_errc x) {
  return static_cast<int>(x);
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(endpoint_client_tests, fixture)

CAF_TEST(one request to a running server gets its response) {
  start();
  auto line
    = net::request_once(endpoint(), R"({"id":"q","op":"status"})", 5000ms);
  auto r = json::parse(line);
  CAF_CHECK_EQUAL(r["id"], "q");
  CAF_CHECK_EQUAL(r["ok"], true);
  CAF_CHECK(r.contains("pools"));
}

CAF_TEST(a client keeps its connection for several requests) {
  start();
  net::endpoint_client client{endpoint(), 5000ms};
  auto hello = json::parse(client.hello());
  CAF_CHECK_EQUAL(hello["ok"], true);
  auto a = json::parse(client.call(acquire(1, "s", "h").dump(), 5000ms));
  CAF_CHECK_EQUAL(a["ok"], true);
  // The started event of its holder is skipped; the next line is the answer.
  auto r = json::parse(client.call(release(2, "h").dump(), 5000ms));
  CAF_CHECK_EQUAL(r["id"], 2);
  CAF_CHECK_EQUAL(r["ok"], true);
}

CAF_TEST(no file means no server) {
  CAF_CHECK_EQUAL(failure([&] {
                    net::request_once(endpoint(), "{}", 1000ms);
                  }),
                  code(net::endpoint_errc::no_server));
}

CAF_TEST(a file left by a killed server means no server) {
  start();
  server->signal(SIGKILL);
  server->wait();
  CAF_REQUIRE(fs::exists(endpoint()));
  CAF_CHECK_EQUAL(failure([&] {
                    net::request_once(endpoint(), "{}", 1000ms);
                  }),
                  code(net::endpoint_errc::no_server));
}

CAF_TEST(a file whose address nobody listens on means no server) {
  // A live process (this one) but a port nothing listens on.
  net::endpoint_info info;
  info.address = "127.0.0.1:1";
  info.token = std::string(64, 'a');
  info.pid = ::getpid();
  net::write_endpoint_file(endpoint(), info);
  CAF_CHECK_EQUAL(failure([&] {
                    net::request_once(endpoint(), "{}", 1000ms);
                  }),
                  code(net::endpoint_errc::no_server));
}

CAF_TEST(a file others may read is refused before anything is sent) {
  start();
  fs::permissions(endpoint(), fs::perms::others_read, fs::perm_options::add);
  CAF_CHECK_EQUAL(failure([&] {
                    net::request_once(endpoint(), "{}", 1000ms);
                  }),
                  code(net::endpoint_errc::bad_file));
  CAF_CHECK(last_message.find("open to others") != std::string::npos);
  CAF_CHECK(last_message.find("refusing to use the token: /") == 0);
}

CAF_TEST(a wrong token is unauthorized) {
  start();
  auto info = net::read_endpoint_file(endpoint());
  info.token = std::string(64, '0');
  net::write_endpoint_file(endpoint(), info);
  CAF_CHECK_EQUAL(failure([&] {
                    net::request_once(endpoint(), "{}", 2000ms);
                  }),
                  code(net::endpoint_errc::unauthorized));
}

CAF_TEST(a file that is not an endpoint file is refused) {
  dir.write("endpoint.json", "not json");
  fs::permissions(endpoint(), fs::perms::owner_read | fs::perms::owner_write);
  CAF_CHECK_EQUAL(failure([&] {
                    net::request_once(endpoint(), "{}", 1000ms);
                  }),
                  code(net::endpoint_errc::bad_file));
}

CAF_TEST(a server that does not answer in time is a timeout) {
  // A listener that accepts and never answers.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  CAF_REQUIRE_EQUAL(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  CAF_REQUIRE_EQUAL(::listen(fd, 4), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  net::endpoint_info info;
  info.address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  info.token = std::string(64, 'a');
  info.pid = ::getpid();
  net::write_endpoint_file(endpoint(), info);
  CAF_CHECK_EQUAL(failure([&] {
                    net::request_once(endpoint(), "{}", 300ms);
                  }),
                  code(net::endpoint_errc::timeout));
  ::close(fd);
}

CAF_TEST(a process of another user on the recorded port gets nothing) {
  if (!stranger_listener::usable()) {
    CAF_MESSAGE("SKIPPED: needs root, setpriv and perl");
    return;
  }
  // A server that crashed left its file; another user now listens on its
  // port and answers everything "ok".
  stranger_listener fake{true, R"({"id":1,"ok":true,"allowed":true})"};
  net::endpoint_info info;
  info.address = "127.0.0.1:" + std::to_string(fake.port());
  info.token = std::string(64, 'c');
  info.pid = fake.pid();
  net::write_endpoint_file(endpoint(), info);
  CAF_CHECK_EQUAL(failure([&] {
                    net::request_once(endpoint(), R"({"id":1,"op":"status"})",
                                      2000ms);
                  }),
                  code(net::endpoint_errc::no_server));
  CAF_CHECK(last_message.find("user 65534") != std::string::npos);
  CAF_CHECK(!net::server_running(info, 2000ms));
  CAF_CHECK_EQUAL(fake.received(), "");
}

CAF_TEST(a listener that is not the process the file names gets nothing) {
  // This user's listener (here, this test), while the file names another
  // live process of this user.
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  CAF_REQUIRE_EQUAL(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  CAF_REQUIRE_EQUAL(::listen(fd, 4), 0);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  proc::spawn_options o;
  o.argv = {"sleep", "30"};
  auto other = proc::spawn(o);
  net::endpoint_info info;
  info.address = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));
  info.token = std::string(64, 'a');
  info.pid = other.pid;
  net::write_endpoint_file(endpoint(), info);
  CAF_CHECK_EQUAL(failure([&] {
                    net::request_once(endpoint(), "{}", 2000ms);
                  }),
                  code(net::endpoint_errc::no_server));
  // Nothing was sent: the connection waits unread.
  int conn = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK);
  if (conn >= 0) {
    char buf[256];
    CAF_CHECK(::recv(conn, buf, sizeof buf, 0) <= 0);
    ::close(conn);
  }
  ::kill(other.pid, SIGKILL);
  proc::wait_for(other.pid);
  ::close(fd);
}

CAF_TEST_FIXTURE_SCOPE_END()
