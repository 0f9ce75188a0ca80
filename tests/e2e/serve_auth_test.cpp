// Who may connect to `taskforce serve`: TCP clients present the token from
// the endpoint file first; stdio needs none. The real binary, real sockets.
#define CAF_SUITE e2e.serve_auth
#include <caf/test/unit_test.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

/// The port at the end of a "… HOST:PORT" line on standard error.
uint16_t port_of(const std::optional<std::string>& line, const char* what) {
  CAF_REQUIRE(line.has_value());
  CAF_REQUIRE(line->find(what) != std::string::npos);
  return static_cast<uint16_t>(std::stoi(line->substr(line->rfind(':') + 1)));
}

/// Why reading the next line fails ("" when a line came).
std::string read_error(protocol_peer& peer) {
  try {
    peer.next(10000ms);
    return "";
  } catch (const std::runtime_error& e) {
    return e.what();
  }
}

unsigned mode_of(const fs::path& file) {
  struct stat st {};
  ::stat(file.c_str(), &st);
  return st.st_mode & 07777;
}

/// A listening server whose endpoint file is in a temporary directory.
struct fixture {
  temp_dir dir;
  std::unique_ptr<serve_process> server;
  uint16_t port = 0;
  std::string token;

  fs::path endpoint() const {
    return dir.path() / "endpoint.json";
  }

  void start(std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"serve", "--listen", "127.0.0.1:0",
                                  "--token-file", endpoint().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    server = std::make_unique<serve_process>(TASKFORCE_BINARY, args);
    port = port_of(server->stderr_line(), "listening on 127.0.0.1:");
    token = token_in(endpoint().string());
  }

  /// Whether an authenticated client is still served.
  bool still_serving() {
    tcp_peer ok{port, token};
    auto st = ok.peer.call({{"id", "check"}, {"op", "status"}});
    return st["ok"] == true;
  }

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

} // namespace

CAF_TEST_FIXTURE_SCOPE(serve_auth_tests, fixture)

CAF_TEST(a request before hello is refused and the connection closed) {
  start();
  tcp_peer stranger{port};
  stranger.peer.send(acquire(7, "s", "h"));
  auto r = stranger.peer.next();
  CAF_CHECK_EQUAL(r["id"], 7);
  CAF_CHECK_EQUAL(r["ok"], false);
  CAF_CHECK_EQUAL(r["error"]["code"], "unauthorized");
  CAF_CHECK(r["error"]["message"].get<std::string>().find(endpoint().string())
            != std::string::npos);
  // Closed, and the acquire never reached the pool.
  CAF_CHECK_EQUAL(read_error(stranger.peer),
                  "the server closed the connection");
  tcp_peer owner{port, token};
  auto st = owner.peer.call({{"id", 1}, {"op", "status"}});
  CAF_CHECK_EQUAL(st["pools"].size(), 0u);
}

CAF_TEST(hello without the token or with a wrong one is refused) {
  start();
  {
    tcp_peer bare{port};
    auto r = bare.peer.call({{"id", 1}, {"op", "hello"}});
    CAF_CHECK_EQUAL(r["error"]["code"], "unauthorized");
  }
  auto wrong = token;
  wrong[10] = wrong[10] == '0' ? '1' : '0';
  try {
    tcp_peer impostor{port, wrong};
    CAF_FAIL("a wrong token was accepted");
  } catch (const std::runtime_error& e) {
    CAF_CHECK(std::string{e.what()}.find("unauthorized") != std::string::npos);
  }
  CAF_CHECK(still_serving());
}

CAF_TEST(a refused connection is closed by the server) {
  start();
  tcp_peer stranger{port};
  stranger.peer.send_line(R"({"id":1,"op":"subscribe"})");
  stranger.peer.send_line(R"({"id":2,"op":"status"})");
  auto r = stranger.peer.next();
  CAF_CHECK_EQUAL(r["error"]["code"], "unauthorized");
  // The second line gets no answer: the connection ends.
  CAF_CHECK_EQUAL(read_error(stranger.peer),
                  "the server closed the connection");
}

CAF_TEST(the right token is served and hello keeps its fields) {
  start();
  tcp_peer client{port};
  // The hello and what follows it may come in one write.
  client.peer.send_line(R"({"id":1,"op":"hello","token":")" + token + "\"}\n"
                        + R"({"id":2,"op":"status"})");
  auto hello = client.peer.response(1);
  CAF_CHECK_EQUAL(hello["ok"], true);
  CAF_CHECK(hello["protocol"].is_number_integer());
  CAF_CHECK(hello["version"].is_string());
  CAF_CHECK(hello["config"].is_object());
  CAF_CHECK(!hello.contains("token"));
  auto st = client.peer.response(2);
  CAF_CHECK_EQUAL(st["ok"], true);
  auto granted = client.peer.call(acquire(3, "s", "h"));
  CAF_CHECK_EQUAL(granted["ok"], true);
}

CAF_TEST(a first line longer than the hello limit is refused) {
  start();
  tcp_peer stranger{port};
  auto huge = std::string(200000, 'x');
  write_until_stalled(stranger.peer.out_fd(), huge, 2000ms);
  auto r = stranger.peer.next(10000ms);
  CAF_CHECK_EQUAL(r["error"]["code"], "unauthorized");
  CAF_CHECK(r["error"]["message"].get<std::string>().find("longer than")
            != std::string::npos);
  CAF_CHECK(still_serving());
}

CAF_TEST(a connection that never says hello is closed) {
  start();
  tcp_peer silent{port};
  // The server gives it a few seconds, then says why and closes.
  auto r = silent.peer.next(30000ms);
  CAF_CHECK_EQUAL(r["error"]["code"], "unauthorized");
  CAF_CHECK(r["error"]["message"].get<std::string>().find("no hello in time")
            != std::string::npos);
  CAF_CHECK(still_serving());
}

CAF_TEST(a stop signal does not wait for connections that never said hello) {
  start();
  tcp_peer silent{port};
  tcp_peer half{port};
  write_until_stalled(half.peer.out_fd(), R"({"id":1,"op":"hel)", 1000ms);
  tcp_peer admitted{port, token};
  server->signal(SIGTERM);
  // Well before the 10 s a silent connection is given.
  CAF_CHECK_EQUAL(server->wait(5000ms), 0);
  CAF_CHECK(!fs::exists(endpoint()));
}

CAF_TEST(the endpoint file is private names the address and goes at exit) {
  start();
  CAF_CHECK_EQUAL(mode_of(endpoint()), 0600u);
  auto info = json::parse(read_file(endpoint()));
  CAF_CHECK_EQUAL(info["address"], "127.0.0.1:" + std::to_string(port));
  CAF_CHECK_EQUAL(info["pid"], server->pid());
  CAF_CHECK_EQUAL(info["token"].get<std::string>().size(), 64u);
  CAF_CHECK(!info.contains("publish"));
  server->signal(SIGTERM);
  CAF_CHECK_EQUAL(server->wait(), 0);
  CAF_CHECK(!fs::exists(endpoint()));
}

CAF_TEST(every server start makes a new token) {
  start();
  auto first = token;
  server->signal(SIGTERM);
  server->wait();
  start();
  CAF_CHECK_NOT_EQUAL(token, first);
  // The old token no longer opens the server.
  tcp_peer old{port};
  auto r = old.peer.call({{"id", 1}, {"op", "hello"}, {"token", first}});
  CAF_CHECK_EQUAL(r["error"]["code"], "unauthorized");
}

CAF_TEST(stdio needs no token) {
  serve_process srv{TASKFORCE_BINARY, {"serve", "--stdio"}};
  auto r = srv.peer.call({{"id", 1}, {"op", "status"}});
  CAF_CHECK_EQUAL(r["ok"], true);
  srv.close_input();
  CAF_CHECK_EQUAL(srv.wait(), 0);
}

CAF_TEST(in a repository the endpoint file is its.taskforce / endpoint.json) {
  fs::create_directories(dir.path() / "repo" / ".git");
  auto repo = (dir.path() / "repo").string();
  serve_process srv{TASKFORCE_BINARY,
                    {"--repo", repo, "serve", "--listen", "127.0.0.1:0"}};
  auto p = port_of(srv.stderr_line(), "listening on 127.0.0.1:");
  auto file = fs::path{repo} / ".taskforce" / "endpoint.json";
  CAF_REQUIRE(fs::exists(file));
  CAF_CHECK_EQUAL(mode_of(file), 0600u);
  tcp_peer client{p, token_in(file.string())};
  auto st = client.peer.call({{"id", 1}, {"op", "status"}});
  CAF_CHECK_EQUAL(st["ok"], true);
  // A second server for the same repository refuses to start.
  serve_process second{TASKFORCE_BINARY,
                       {"--repo", repo, "serve", "--listen", "127.0.0.1:0"}};
  CAF_CHECK_EQUAL(second.wait(), 2);
  auto err = second.drain_stderr();
  CAF_MESSAGE(err);
  CAF_CHECK(err.find("a server already runs for " + file.string())
            != std::string::npos);
  CAF_CHECK(err.find(std::to_string(srv.pid())) != std::string::npos);
  // The first keeps its file and its clients.
  auto info = json::parse(read_file(file));
  CAF_CHECK_EQUAL(info["pid"], srv.pid());
  auto again = client.peer.call({{"id", 2}, {"op", "status"}});
  CAF_CHECK_EQUAL(again["ok"], true);
  srv.signal(SIGTERM);
  CAF_CHECK_EQUAL(srv.wait(), 0);
  CAF_CHECK(!fs::exists(file));
}

CAF_TEST(a file left by a killed server does not stop the next one) {
  start();
  auto old = token;
  server->signal(SIGKILL);
  server->wait();
  CAF_REQUIRE(fs::exists(endpoint()));
  start();
  CAF_CHECK_NOT_EQUAL(token, old);
  CAF_CHECK(still_serving());
}

CAF_TEST(outside a repository listen needs a token file) {
  serve_process srv{TASKFORCE_BINARY,
                    {"serve", "--listen", "127.0.0.1:0"},
                    dir.path().string()};
  CAF_CHECK_EQUAL(srv.wait(), 2);
  auto err = srv.drain_stderr();
  CAF_CHECK(err.find("--token-file") != std::string::npos);
  CAF_CHECK(!fs::exists(dir.path() / ".taskforce"));
}

CAF_TEST(a port in use is one line and exit 2 for listen and publish) {
  start();
  auto busy = "127.0.0.1:" + std::to_string(port);
  temp_dir other;
  for (auto& args : std::vector<std::vector<std::string>>{
         {"serve", "--listen", busy},
         {"serve", "--stdio", "--publish", busy}}) {
    args.push_back("--token-file");
    args.push_back((other.path() / "endpoint.json").string());
    serve_process srv{TASKFORCE_BINARY, args};
    CAF_CHECK_EQUAL(srv.wait(), 2);
    auto err = srv.drain_stderr();
    CAF_MESSAGE(err);
    CAF_CHECK_EQUAL(err, "taskforce: cannot listen on " + busy
                           + ": address in use\n");
    CAF_CHECK(!fs::exists(other.path() / "endpoint.json"));
  }
  CAF_CHECK(still_serving());
}

CAF_TEST(an endpoint file that cannot be written stops the server at once) {
  auto missing = (dir.path() / "missing" / "endpoint.json").string();
  for (auto& args : std::vector<std::vector<std::string>>{
         {"serve", "--listen", "127.0.0.1:0", "--token-file", missing},
         {"serve", "--stdio", "--publish", "127.0.0.1:0", "--token-file",
          missing}}) {
    serve_process srv{TASKFORCE_BINARY, args};
    CAF_CHECK_EQUAL(srv.wait(10000ms), 2);
    auto err = srv.drain_stderr();
    CAF_CHECK_EQUAL(err, "taskforce: cannot write " + missing
                           + ": No such file or directory\n");
  }
}

CAF_TEST_FIXTURE_SCOPE_END()
