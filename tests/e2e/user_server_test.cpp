// The per-user server through the client commands: started on demand under
// XDG_RUNTIME_DIR, configured from XDG_CONFIG_HOME, one per user however
// many clients start it at once, gone when idle with nothing held.
#define CAF_SUITE e2e.user_server
#include <caf/test/unit_test.hpp>

#include <sys/stat.h>

#include "e2e/user_server.hpp"
#include "src/proc/run.hpp"

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

CAF_TEST(a folder another user made in tmp is passed over for one in the
           cache) {
  // Without XDG_RUNTIME_DIR, in a /tmp of its own (a private mount
  // namespace), where another user made /tmp/taskforce-<uid> first.
  temp_dir dir;
  auto script = dir.write(
    "squat.sh",
    "set -e\n"
    "mount -t tmpfs tmpfs /tmp\n"
    "mkdir -p /tmp/home /tmp/cfg/taskforce\n"
    "echo '{\"server\": {\"idleExitMs\": 300}}' > "
    "/tmp/cfg/taskforce/config.json\n"
    "mkdir -m 700 /tmp/taskforce-$(id -u)\n"
    "chown 65534:65534 /tmp/taskforce-$(id -u)\n"
    "export HOME=/tmp/home XDG_CONFIG_HOME=/tmp/cfg\n"
    "unset XDG_RUNTIME_DIR XDG_CACHE_HOME\n"
    "echo '{\"hook_event_name\":\"PreToolUse\",\"session_id\":\"s\","
    "\"tool_name\":\"Agent\",\"tool_use_id\":\"t1\",\"tool_input\":{}}' "
    "| \"$1\" hook claude-code > /tmp/hook.out\n"
    "echo \"hook said: [$(cat /tmp/hook.out)]\"\n"
    "\"$1\" pool status\n"
    "test -S /tmp/home/.cache/taskforce/run/pool.sock && echo socket-in-cache\n"
    "stat -c '%u' /tmp/taskforce-$(id -u)\n");
  taskforce::proc::run_options o;
  o.argv = {"unshare", "-m", "sh", script.string(), TASKFORCE_BINARY};
  o.log_file = (dir.path() / "out.log").string();
  o.timeout = 60s;
  auto r = taskforce::proc::run(o);
  auto out = read_file(dir.path() / "out.log");
  CAF_MESSAGE(out);
  if (out.find("mount:") != std::string::npos
      || out.find("unshare:") != std::string::npos) {
    CAF_MESSAGE("SKIPPED: no private mount namespace here");
    return;
  }
  CAF_CHECK_EQUAL(r.exit_code, 0);
  // The call was admitted (no deny), the pool answered, from the cache.
  CAF_CHECK(out.find("hook said: []") != std::string::npos);
  CAF_CHECK(out.find("\"t1\"") != std::string::npos);
  CAF_CHECK(out.find("socket-in-cache") != std::string::npos);
  // The other user's folder is left alone.
  CAF_CHECK(out.find("65534") != std::string::npos);
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
