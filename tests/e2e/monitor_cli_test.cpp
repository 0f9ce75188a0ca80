// `taskforce monitor …` without a server, as a script runs it: a detached
// supervisor owns the process, every command prints JSON, the wake
// pattern, the exit code, the limit, bad input, kill of the whole group,
// and a supervisor that died leaving its monitor unavailable.
#define CAF_SUITE e2e.monitor_cli
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"
#include "src/control/monitor_store.hpp"

using namespace taskforce;
using namespace taskforce::test;
using json = nlohmann::json;

namespace {

/// The JSON object a command printed (its first line that is one).
json printed(const tf_result& r) {
  std::istringstream in(r.output);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty() && line.front() == '{')
      return json::parse(line);
  CAF_FAIL("no JSON in: " << r.output);
  return {};
}

/// The string at `path` in what a command printed ("" when absent).
std::string field(const tf_result& r, std::vector<std::string> path) {
  auto j = printed(r);
  for (auto& key : path) {
    if (!j.is_object() || !j.contains(key))
      return "";
    j = json(j[key]);
  }
  return j.is_string() ? j.get<std::string>() : j.dump();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

bool alive(int64_t pid) {
  return pid > 0 && ::kill(static_cast<pid_t>(pid), 0) == 0;
}

} // namespace

CAF_TEST(a monitor wakes on its pattern and kill ends its process) {
  scenario s;
  auto r = s.tf({"monitor", "run", "--wake-pattern", "ready now", "--",
                 "echo starting; sleep 0.3; echo ready now; exec sleep 60"});
  CAF_REQUIRE_EQUAL(r.code, 0);
  auto m = printed(r)["monitor"];
  CAF_CHECK_EQUAL(m["id"], "mon-1");
  CAF_CHECK_EQUAL(m["state"], "running");
  CAF_CHECK(m["live"].get<bool>());
  auto pid = m["pid"].get<int64_t>();
  CAF_CHECK(alive(pid));
  auto w = printed(s.tf({"monitor", "wait", "mon-1", "--timeout-ms", "60000"}));
  CAF_CHECK_EQUAL(w["reason"], "ready");
  CAF_CHECK_EQUAL(w["monitor"]["state"], "running");
  auto out = printed(s.tf({"monitor", "read", "mon-1"}));
  CAF_CHECK(contains(out["output"].get<std::string>(), "ready now"));
  CAF_CHECK(!out["eof"].get<bool>());
  auto all = printed(s.tf({"monitor", "status"}));
  CAF_CHECK_EQUAL(all["monitors"].size(), 1u);
  auto k = s.tf({"monitor", "kill", "mon-1"});
  CAF_REQUIRE_EQUAL(k.code, 0);
  CAF_CHECK_EQUAL(field(k, {"monitor", "state"}), "killed");
  CAF_CHECK(!alive(pid));
  CAF_CHECK_EQUAL(
    field(s.tf({"monitor", "status", "mon-1"}), {"monitor", "live"}), "false");
  // Its files are no untracked changes of the repository.
  CAF_CHECK_EQUAL(git_ok(s.root, {"status", "--porcelain"}), "");
}

CAF_TEST(an exit code and both streams are kept and a wait says exit) {
  scenario s;
  CAF_REQUIRE_EQUAL(
    s.tf({"monitor", "run", "echo to-out; echo to-err >&2; exit 7"}).code, 0);
  auto w = printed(s.tf({"monitor", "wait", "mon-1", "--timeout-ms", "60000"}));
  CAF_CHECK_EQUAL(w["reason"], "exit");
  CAF_CHECK_EQUAL(w["monitor"]["state"], "done");
  CAF_CHECK_EQUAL(w["monitor"]["exit_code"], 7);
  auto out = printed(s.tf({"monitor", "read", "mon-1"}));
  CAF_CHECK(contains(out["output"].get<std::string>(), "to-out"));
  CAF_CHECK(contains(out["output"].get<std::string>(), "to-err"));
  CAF_CHECK(out["eof"].get<bool>());
}

CAF_TEST(a wait without an event times out and a time limit ends it) {
  scenario s;
  CAF_REQUIRE_EQUAL(
    s.tf({"monitor", "run", "--timeout-ms", "200", "--", "exec sleep 30"}).code,
    0);
  auto w = printed(s.tf({"monitor", "wait", "mon-1", "--timeout-ms", "60000"}));
  CAF_CHECK_EQUAL(w["reason"], "exit");
  CAF_CHECK_EQUAL(w["monitor"]["state"], "timeout");
  CAF_REQUIRE_EQUAL(s.tf({"monitor", "run", "exec sleep 30"}).code, 0);
  auto t = printed(s.tf({"monitor", "wait", "mon-2", "--timeout-ms", "50"}));
  CAF_CHECK_EQUAL(t["reason"], "timeout");
  CAF_CHECK_EQUAL(t["monitor"]["state"], "running");
  CAF_CHECK_EQUAL(
    field(s.tf({"monitor", "kill", "mon-2"}), {"monitor", "state"}), "killed");
}

CAF_TEST(more monitors than the limit and bad input are refused) {
  scenario s;
  s.set_config(R"({"control": {"maxMonitors": 1}})");
  CAF_REQUIRE_EQUAL(s.tf({"monitor", "run", "exec sleep 60"}).code, 0);
  auto refused = s.tf({"monitor", "run", "exec sleep 60"});
  CAF_CHECK_EQUAL(refused.code, 1);
  CAF_CHECK_EQUAL(field(refused, {"error", "code"}), "limit");
  CAF_CHECK(contains(refused.output, "Monitor limit"));
  auto bad = s.tf({"monitor", "run", "--wake-pattern", "[", "--", "true"});
  CAF_CHECK_EQUAL(bad.code, 2);
  CAF_CHECK(contains(bad.output, "invalid wake_pattern"));
  auto out = s.tf({"monitor", "run", "--cwd", "../outside", "--", "true"});
  CAF_CHECK_EQUAL(out.code, 2);
  CAF_CHECK(contains(out.output, "inside the repository"));
  auto unknown = s.tf({"monitor", "status", "mon-9"});
  CAF_CHECK_EQUAL(unknown.code, 2);
  CAF_CHECK_EQUAL(field(unknown, {"error", "code"}), "not_found");
  auto listed = printed(s.tf({"monitor", "status"}));
  CAF_CHECK_EQUAL(listed["monitors"].size(), 1u);
  CAF_CHECK_EQUAL(
    field(s.tf({"monitor", "kill", "mon-1"}), {"monitor", "state"}), "killed");
}

CAF_TEST(a monitor whose supervisor died is unavailable and cannot be killed) {
  scenario s;
  auto m = printed(s.tf({"monitor", "run", "exec sleep 300"}))["monitor"];
  auto owner = m["owner"].get<std::string>();
  auto supervisor = control::owner_lock::pid_of(s.root, owner);
  CAF_REQUIRE_GREATER(supervisor, 0);
  ::kill(static_cast<pid_t>(supervisor), SIGKILL);
  CAF_REQUIRE(eventually([&] {
    return field(s.tf({"monitor", "status", "mon-1"}), {"monitor", "state"})
           == "unavailable";
  }));
  auto now = printed(s.tf({"monitor", "status", "mon-1"}))["monitor"];
  CAF_CHECK(!now["live"].get<bool>());
  CAF_CHECK_EQUAL(now["log_file"],
                  (s.root / ".taskforce/logs/monitors/mon-1.log").string());
  auto k = s.tf({"monitor", "kill", "mon-1"});
  CAF_CHECK_EQUAL(k.code, 1);
  CAF_CHECK_EQUAL(field(k, {"error", "code"}), "unavailable");
  CAF_CHECK(contains(k.output, "cannot be killed"));
  // Nobody controls its process any more: the test ends it itself.
  ::kill(static_cast<pid_t>(m["pid"].get<int64_t>()), SIGKILL);
}
