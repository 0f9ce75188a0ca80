// The per-user server through the client commands: started on demand under
// XDG_RUNTIME_DIR, configured from XDG_CONFIG_HOME, one per user however
// many clients start it at once, gone when idle with nothing held.
#define CAF_SUITE e2e.user_server
#include <caf/test/unit_test.hpp>

#include <sys/stat.h>

#include "e2e/user_server.hpp"

using namespace taskforce::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

/// The mode bits of `path` (without following a symlink).
unsigned mode_of(const fs::path& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0)
    return 0;
  return st.st_mode & 07777;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + 1))
    ++n;
  return n;
}

} // namespace

CAF_TEST(pool status starts a private server with the config of the user) {
  user_world w;
  w.set_config(R"({"pool": {"maxParallel": 3, "mode": "global"}})");
  CAF_CHECK(!fs::exists(w.socket()));
  auto r = w.run({"pool", "status"});
  CAF_REQUIRE_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(r.answer["max_parallel"], 3);
  CAF_CHECK_EQUAL(r.answer["mode"], "global");
  CAF_CHECK(r.answer["pools"].is_array());
  CAF_CHECK_EQUAL(mode_of(w.folder()), 0700u);
  CAF_CHECK_EQUAL(mode_of(w.socket()), 0600u);
  CAF_CHECK(user_world::alive(w.server_pid()));
}

CAF_TEST(without a config file the defaults apply) {
  user_world w;
  auto r = w.run({"pool", "status"});
  CAF_REQUIRE_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(r.answer["max_parallel"], 2);
  CAF_CHECK_EQUAL(r.answer["mode"], "session");
}

CAF_TEST(a bad config file is named and no server stays) {
  user_world w;
  w.set_config(R"({"pool": {"maxParallel": 0}})");
  auto r = w.run({"pool", "status"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK(r.err.find("could not start") != std::string::npos);
  CAF_CHECK(r.err.find("maxParallel") != std::string::npos);
  CAF_CHECK_EQUAL(w.server_pid(), 0);
}

CAF_TEST(clients that start the server at once share one server) {
  user_world w;
  std::vector<std::unique_ptr<client_process>> clients;
  for (int i = 0; i < 6; ++i)
    clients.push_back(w.start({"pool", "status"}));
  for (auto& c : clients) {
    CAF_CHECK_EQUAL(c->finish(), 0);
    CAF_CHECK(c->out.find("max_parallel") != std::string::npos);
  }
  // One server took the socket; any other started exited at once.
  CAF_CHECK_EQUAL(count(w.log(), "taskforce: serving on"), 1u);
  auto pid = w.server_pid();
  CAF_CHECK(user_world::alive(pid));
  CAF_CHECK_EQUAL(w.run({"pool", "status"}).code, 0);
  CAF_CHECK_EQUAL(w.server_pid(), pid);
}

CAF_TEST(the server exits when idle and the next client starts another) {
  user_world w;
  w.set_config(R"({"server": {"idleExitMs": 300}})");
  CAF_REQUIRE_EQUAL(w.run({"pool", "status"}).code, 0);
  auto pid = w.server_pid();
  CAF_REQUIRE(pid > 0);
  CAF_CHECK(eventually(
    [&] {
      return !user_world::alive(pid);
    },
    20s));
  CAF_CHECK(!fs::exists(w.socket()));
  CAF_CHECK_EQUAL(w.run({"pool", "status"}).code, 0);
  CAF_CHECK(w.server_pid() > 0);
  CAF_CHECK(w.server_pid() != pid);
}

CAF_TEST(a folder open to others is refused and nothing is served there) {
  user_world w;
  fs::create_directories(w.folder());
  ::chmod(w.folder().c_str(), 0755);
  auto r = w.run({"pool", "status"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK(r.err.find("open to others (mode 0755)") != std::string::npos);
  CAF_CHECK(!fs::exists(w.socket()));
}

CAF_TEST(a symbolic link in place of the folder is refused) {
  user_world w;
  fs::create_directories(w.dir.path() / "elsewhere");
  fs::create_directory_symlink(w.dir.path() / "elsewhere", w.folder());
  auto r = w.run({"pool", "status"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK(r.err.find("symbolic link") != std::string::npos);
  CAF_CHECK(!fs::exists(w.dir.path() / "elsewhere" / "pool.sock"));
}

CAF_TEST(release and session end start no server) {
  user_world w;
  auto r = w.run({"release", "--holder", "h1"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(r.answer["released"], false);
  nlohmann::json end{{"session_id", "s1"},
                     {"hook_event_name", "SessionEnd"},
                     {"reason", "other"}};
  CAF_CHECK_EQUAL(w.hook(end).code, 0);
  CAF_CHECK(!fs::exists(w.socket()));
  CAF_CHECK_EQUAL(w.server_pid(), 0);
}

CAF_TEST(bad arguments are usage errors) {
  user_world w;
  CAF_CHECK_EQUAL(w.run({"acquire", "--holder", "h"}).code, 2);
  CAF_CHECK_EQUAL(
    w.run({"acquire", "--session", "s", "--holder", "h", "--kind", "bg"}).code,
    2);
  CAF_CHECK_EQUAL(w.run({"release"}).code, 2);
  CAF_CHECK_EQUAL(w.run({"release", "--holder", "h", "--reason", "x"}).code, 2);
  CAF_CHECK_EQUAL(w.run({"pool"}).code, 2);
  CAF_CHECK_EQUAL(w.run({"pool", "stats"}).code, 2);
  CAF_CHECK_EQUAL(w.run({"hook", "codex"}).code, 2);
  CAF_CHECK_EQUAL(w.run({"serve", "--user", "--stdio"}).code, 2);
}
