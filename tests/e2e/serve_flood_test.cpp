// `taskforce serve --listen` under a flood of connections that never say
// hello, with few descriptors (prlimit): a client that says hello is still
// served at once, and the flooded server stays idle instead of spinning.
#define CAF_SUITE e2e.serve_flood
#include <caf/test/unit_test.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

/// The CPU time (user and system) process `pid` used so far, in seconds.
double cpu_seconds(pid_t pid) {
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  // Fields 3… after the name; utime and stime are the 14th and 15th.
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14)
      utime = std::stoull(field);
    if (i == 15)
      stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime)
         / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

/// A connection to 127.0.0.1:`port` that sends nothing (its handshake
/// finishes in the background); -1 when the test ran out of descriptors.
int silent_connection(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  return fd;
}

} // namespace

CAF_TEST(silent connections past the descriptor limit do not keep a client out
           nor make the server spin) {
  temp_dir dir;
  auto file = (dir.path() / "endpoint.json").string();
  auto log = (dir.path() / "server.log").string();
  // Its log goes to a file: a line per refused connection would fill a
  // pipe nobody reads.
  serve_process srv{"/bin/sh",
                    {"-c",
                     "exec /usr/bin/prlimit --nofile=256:256 \"$0\" serve "
                     "--listen 127.0.0.1:0 --token-file \"$1\" 2>>\"$2\"",
                     TASKFORCE_BINARY, file, log}};
  CAF_REQUIRE(eventually(
    [&] {
      return read_file(file).find("address") != std::string::npos;
    },
    30s));
  auto address = json::parse(read_file(file))["address"].get<std::string>();
  auto port
    = static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
  auto token = token_in(file);
  // Far more than the server may hold, held open.
  std::vector<int> silent;
  for (int i = 0; i < 1100; ++i)
    if (int fd = silent_connection(port); fd >= 0)
      silent.push_back(fd);
  CAF_CHECK_EQUAL(silent.size(), 1100u);
  // A client that says hello is served (tcp_peer throws if not in 5 s).
  {
    tcp_peer client{port, token};
    auto st = client.peer.call({{"id", 1}, {"op", "status"}});
    CAF_CHECK_EQUAL(st["ok"], true);
  }
  // Idle while flooded: the server does not spin on a full descriptor
  // table (it used its whole CPU before).
  auto before = cpu_seconds(srv.pid());
  auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(3s);
  auto window
    = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
        .count();
  auto used = cpu_seconds(srv.pid()) - before;
  CAF_MESSAGE("server CPU while flooded: " << used << " s in " << window
                                           << " s");
  CAF_CHECK(used < window / 3);
  // Still served, the flood still open.
  {
    tcp_peer client{port, token};
    auto st = client.peer.call({{"id", 2}, {"op", "status"}});
    CAF_CHECK_EQUAL(st["ok"], true);
    CAF_MESSAGE(st.dump());
  }
  for (int fd : silent)
    ::close(fd);
  srv.signal(SIGTERM);
  CAF_CHECK_EQUAL(srv.wait(10s), 0);
}
