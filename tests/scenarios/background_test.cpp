// Managed background work as a harness drives it: the real `taskforce serve
// --stdio` in a real repository, one JSON object per line. The harness
// prepares a task, runs its subagent (here: the test writes the files the
// subagent would), links the child, and completes it through the gate.
#define CAF_SUITE scenarios.background
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <fstream>
#include <string>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "scenarios/scenario.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

struct fixture : scenario {
  fixture() {
    write(".gitignore", ".taskforce/\n");
    write("src/lib.txt", "lib\n");
    write("docs/guide.md", "guide\n");
    git_ok(root, {"add", "-A"});
    git_ok(root, {"commit", "-q", "-m", "layout"});
  }

  /// Task `id` of the latest run as "state: reason"; "" while there is no
  /// ledger yet (a driver just started).
  std::string seen(const std::string& id) {
    try {
      auto t = task(id);
      return std::string{to_string(t.state)} + ": " + t.reason.value_or("");
    } catch (const store::ledger_error&) {
      return "";
    }
  }

  /// `taskforce serve --stdio` in the project with `control` as its control
  /// section.
  std::unique_ptr<serve_process> serve(const std::string& control = "{}") {
    auto file = dir.write("serve.json", "{\"control\": " + control + "}");
    return std::make_unique<serve_process>(
      TASKFORCE_BINARY,
      std::vector<std::string>{"--repo", root.string(), "--config",
                               file.string(), "serve", "--stdio"});
  }
};

/// Reads lines until an event `bg.changed` for `task` reaching `to`.
json changed_to(protocol_peer& peer, const std::string& task,
                const std::string& to) {
  for (;;) {
    auto line = peer.next();
    if (line.value("event", "") == "bg.changed" && line["task"]["id"] == task
        && line["to"] == to)
      return line;
  }
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(background_tests, fixture)

CAF_TEST(prepare link and complete through the gate with a failing then passing
           validation) {
  auto srv = serve();
  auto& peer = srv->peer;
  auto hello = peer.call({{"id", 1}, {"op", "hello"}});
  CAF_CHECK_EQUAL(hello["protocol"], 2);
  auto subscribed = peer.call({{"id", 2}, {"op", "subscribe"}});
  CAF_CHECK_EQUAL(subscribed["subscribed"], true);

  // The contract: write under src/ only; done when src/ok.txt exists.
  auto prepared = peer.call({{"id", 3},
                             {"op", "bg.prepare"},
                             {"title", "Add the feature"},
                             {"agent", "coder"},
                             {"prompt", "Write src/feature.txt"},
                             {"roots", {"src", "./src/"}},
                             {"validations", {"test -f src/ok.txt"}},
                             {"session", "orchestrator"}});
  CAF_REQUIRE_EQUAL(prepared["ok"], true);
  auto task = prepared["task"]["id"].get<std::string>();
  CAF_CHECK_EQUAL(prepared["task"]["state"], "ready");
  CAF_CHECK_EQUAL(prepared["task"]["roots"], json({"src"}));
  auto token = prepared["dispatch"]["token"].get<std::string>();
  CAF_CHECK(!token.empty());

  // A second task on an overlapping root waits in the queue.
  auto queued = peer.call({{"id", 4},
                           {"op", "bg.prepare"},
                           {"title", "Touch the library"},
                           {"agent", "coder"},
                           {"prompt", "Edit src/lib.txt"},
                           {"roots", {"src/lib.txt"}}});
  CAF_REQUIRE_EQUAL(queued["ok"], true);
  CAF_CHECK_EQUAL(queued["task"]["state"], "queued");
  CAF_CHECK(queued["dispatch"].is_null());

  auto linked = peer.call({{"id", 5},
                           {"op", "bg.link"},
                           {"token", token},
                           {"child_session", "child-1"}});
  CAF_REQUIRE_EQUAL(linked["ok"], true);
  CAF_CHECK_EQUAL(linked["task"]["state"], "running");
  changed_to(peer, task, "running");
  // The token was used once.
  auto again = peer.call({{"id", 6},
                          {"op", "bg.link"},
                          {"token", token},
                          {"child_session", "child-2"}});
  CAF_CHECK_EQUAL(again["ok"], false);

  // The child may write under src/, not in docs/.
  auto inside = peer.call({{"id", 7},
                           {"op", "bg.may_write"},
                           {"child_session", "child-1"},
                           {"path", "src/feature.txt"}});
  CAF_CHECK_EQUAL(inside["allowed"], true);
  auto outside = peer.call({{"id", 8},
                            {"op", "bg.may_write"},
                            {"child_session", "child-1"},
                            {"path", "docs/guide.md"}});
  CAF_CHECK_EQUAL(outside["allowed"], false);

  // The subagent's work.
  write("src/feature.txt", "feature\n");

  // A claim that leaves out a change is refused with the path.
  auto short_claim = peer.call({{"id", 9},
                                {"op", "bg.complete"},
                                {"task", task},
                                {"status", "done"},
                                {"result", "added the feature"},
                                {"files", json::array()}});
  CAF_REQUIRE_EQUAL(short_claim["ok"], true);
  CAF_CHECK_EQUAL(short_claim["accepted"], false);
  CAF_CHECK_NOT_EQUAL(
    short_claim["reason"].get<std::string>().find("src/feature.txt"),
    std::string::npos);
  CAF_CHECK_EQUAL(short_claim["task"]["state"], "running");

  // The validation fails: src/ok.txt is missing.
  auto failed = peer.call({{"id", 10},
                           {"op", "bg.complete"},
                           {"task", task},
                           {"status", "done"},
                           {"result", "added the feature"},
                           {"files", {"src/feature.txt"}}},
                          30s);
  CAF_REQUIRE_EQUAL(failed["ok"], true);
  CAF_CHECK_EQUAL(failed["accepted"], false);
  CAF_CHECK_EQUAL(failed["task"]["state"], "running");
  CAF_REQUIRE_EQUAL(failed["validations"].size(), 1u);
  CAF_CHECK_EQUAL(failed["validations"][0]["status"], "failure");
  CAF_CHECK_EQUAL(failed["validations"][0]["exit_code"], 1);

  // The child fixes it; now the gate passes and the task is done.
  write("src/ok.txt", "ok\n");
  auto passed = peer.call({{"id", 11},
                           {"op", "bg.complete"},
                           {"task", task},
                           {"status", "done"},
                           {"result", "added the feature"},
                           {"files", {"src/feature.txt", "src/ok.txt"}}},
                          30s);
  CAF_REQUIRE_EQUAL(passed["ok"], true);
  CAF_CHECK_EQUAL(passed["accepted"], true);
  CAF_CHECK_EQUAL(passed["task"]["state"], "done");
  CAF_CHECK(passed["task"]["leases"].empty());
  changed_to(peer, task, "done");

  // Its root is free: the queued task starts now.
  auto started = peer.call({{"id", 12}, {"op", "bg.start"}});
  CAF_REQUIRE_EQUAL(started["ok"], true);
  CAF_CHECK_EQUAL(started["task"]["id"], queued["task"]["id"]);
  CAF_CHECK_EQUAL(started["task"]["state"], "ready");
  CAF_CHECK(started["dispatch"]["token"].is_string());

  // The ledger has it all: the status of the finished task.
  auto status = peer.call({{"id", 13}, {"op", "bg.status"}, {"task", task}});
  CAF_REQUIRE_EQUAL(status["tasks"].size(), 1u);
  CAF_CHECK_EQUAL(status["tasks"][0]["state"], "done");
  CAF_CHECK_EQUAL(status["tasks"][0]["result"], "added the feature");
}

CAF_TEST(a monitor through the protocol wakes on its pattern and is killed with
           its group) {
  auto srv = serve(R"({"maxMonitors": 1, "maxOutputBytes": 64})");
  auto& peer = srv->peer;
  auto subscribed = peer.call({{"id", 1}, {"op", "subscribe"}});
  CAF_CHECK_EQUAL(subscribed["subscribed"], true);
  auto started = peer.call({{"id", 2},
                            {"op", "monitor.run"},
                            {"command", "echo booting; echo ready now; "
                                        "sleep 300"},
                            {"wake_pattern", "ready now"}});
  CAF_REQUIRE_EQUAL(started["ok"], true);
  auto id = started["monitor"]["id"].get<std::string>();
  CAF_CHECK_EQUAL(started["monitor"]["state"], "running");
  // The limit: a second live monitor is refused.
  auto second
    = peer.call({{"id", 3}, {"op", "monitor.run"}, {"command", "true"}});
  CAF_CHECK_EQUAL(second["error"]["code"], "limit");
  auto woke = peer.call(
    {{"id", 4}, {"op", "monitor.wait"}, {"monitor", id}, {"timeout_ms", 30000}},
    40s);
  CAF_CHECK_EQUAL(woke["reason"], "ready");
  auto read = peer.call({{"id", 5}, {"op", "monitor.read"}, {"monitor", id}});
  CAF_CHECK_NOT_EQUAL(read["output"].get<std::string>().find("ready now"),
                      std::string::npos);
  auto killed
    = peer.call({{"id", 6}, {"op", "monitor.kill"}, {"monitor", id}}, 30s);
  CAF_CHECK_EQUAL(killed["monitor"]["state"], "killed");
  auto pid = killed["monitor"]["pid"].get<int>();
  CAF_CHECK(eventually([&] {
    return ::kill(pid, 0) != 0;
  }));
  // Subscribers heard about it.
  for (;;) {
    auto line = peer.next();
    if (line.value("event", "") == "monitor.changed"
        && line["monitor"]["state"] == "killed")
      break;
  }
  // A cwd out of the repository is refused.
  auto outside = peer.call(
    {{"id", 7}, {"op", "monitor.run"}, {"command", "true"}, {"cwd", "../"}});
  CAF_CHECK_EQUAL(outside["error"]["code"], "bad_request");
}

CAF_TEST(
  a running task of a task list holds its folders against managed tasks) {
  // t1 writes src/ and waits for a flag outside the repository.
  auto flag = dir.path() / "go";
  tasks("- [ ] Write the library\n  - files: src/\n  - run: while [ ! -e "
        + flag.string() + " ]; do sleep 0.05; done; echo x > src/lib.txt\n");
  config_text = R"({"run":{"useWorktrees":false}})";
  auto driver = start_taskforce(*this, {"run", "TASKS.md", "--plain"});
  CAF_REQUIRE(eventually([&] {
    auto r = tf({"bg", "status"});
    return r.output.find("run/") != std::string::npos;
  }));
  // A managed task on src/lib waits; one on docs starts.
  auto blocked = tf({"bg", "prepare", "--title", "lib", "--agent", "coder",
                     "--prompt", "p", "--root", "src/lib"});
  CAF_CHECK_NOT_EQUAL(blocked.output.find("\"state\":\"queued\""),
                      std::string::npos);
  auto free = tf({"bg", "prepare", "--title", "docs", "--agent", "coder",
                  "--prompt", "p", "--root", "docs"});
  CAF_CHECK_NOT_EQUAL(free.output.find("\"state\":\"ready\""),
                      std::string::npos);
  // Once t1 is done, its folders are free and the queued task starts.
  std::ofstream{flag} << "go";
  CAF_CHECK_EQUAL(proc::wait_for(driver.pid).code, 0);
  auto started = tf({"bg", "start"});
  CAF_CHECK_NOT_EQUAL(started.output.find("\"id\":\"bg-1\""),
                      std::string::npos);
  CAF_CHECK_NOT_EQUAL(started.output.find("\"token\":\""), std::string::npos);
  auto status = tf({"bg", "status"});
  CAF_CHECK_EQUAL(status.output.find("run/"), std::string::npos);
}

CAF_TEST(a task of a task list waits while a managed task holds its
           folder and starts once that task is cancelled) {
  // Both sides name src through a symlink: they meet where it lies.
  std::filesystem::create_symlink("src", root / "alias");
  git_ok(root, {"add", "alias"});
  git_ok(root, {"commit", "-q", "-m", "alias"});
  tasks("- [ ] Edit the library\n  - id: t1\n  - files: alias/lib.txt\n"
        "  - run: echo edited > alias/lib.txt\n");
  // A managed task holds src/, its child linked.
  auto prepared = tf({"bg", "prepare", "--title", "lib", "--agent", "coder",
                      "--prompt", "p", "--root", "alias"});
  CAF_REQUIRE_EQUAL(prepared.code, 0);
  auto token = json::parse(prepared.output)["dispatch"]["token"];
  CAF_REQUIRE(token.is_string());
  CAF_REQUIRE_EQUAL(
    tf({"bg", "link", token.get<std::string>(), "child-1"}).code, 0);
  auto driver = start_taskforce(*this, {"run", "TASKS.md", "--plain"});
  // The run's task waits, saying for whom, in the ledger and in status.
  CAF_REQUIRE(eventually([&] {
    return seen("t1") == "ready: waits for managed task bg-1 (src)";
  }));
  auto status = tf({"status"});
  CAF_CHECK_NOT_EQUAL(status.output.find("waits for managed task bg-1 (src)"),
                      std::string::npos);
  CAF_CHECK_EQUAL(to_string(task("t1").state), std::string{"ready"});
  CAF_CHECK_EQUAL(read_file(root / "src/lib.txt"), "lib\n");
  // The managed task goes; at a later look the run's task starts.
  auto cancelled_at = store::wall_clock_ms();
  CAF_REQUIRE_EQUAL(tf({"bg", "cancel", "bg-1"}).code, 0);
  CAF_CHECK_EQUAL(proc::wait_for(driver.pid).code, 0);
  CAF_CHECK_EQUAL(to_string(task("t1").state), std::string{"done"});
  auto db = ledger();
  auto attempts = db.attempts(run().id, "t1");
  CAF_REQUIRE_EQUAL(attempts.size(), 1u);
  CAF_CHECK_GREATER_OR_EQUAL(attempts[0].started_ms, cancelled_at);
  CAF_CHECK_EQUAL(read_file(root / "src/lib.txt"), "edited\n");
}

CAF_TEST(a managed task on a folder reached through a symlink waits for the
           running task of a task list) {
  std::filesystem::create_symlink("src", root / "alias");
  git_ok(root, {"add", "alias"});
  git_ok(root, {"commit", "-q", "-m", "alias"});
  auto flag = dir.path() / "go";
  tasks("- [ ] Write the library\n  - id: t1\n  - files: src/lib.txt\n"
        "  - run: while [ ! -e "
        + flag.string() + " ]; do sleep 0.05; done; echo x > src/lib.txt\n");
  auto driver = start_taskforce(*this, {"run", "TASKS.md", "--plain"});
  CAF_REQUIRE(eventually([&] {
    return seen("t1").rfind("running:", 0) == 0;
  }));
  // alias is src: it overlaps the task's file.
  auto queued = tf({"bg", "prepare", "--title", "lib", "--agent", "coder",
                    "--prompt", "p", "--root", "alias"});
  auto q = json::parse(queued.output);
  CAF_CHECK_EQUAL(q["task"]["state"], "queued");
  CAF_CHECK_EQUAL(q["task"]["roots"], json({"src"}));
  CAF_CHECK_NOT_EQUAL(q["task"]["reason"].get<std::string>().find(
                        "overlaps root src/lib.txt of task t1 of run "),
                      std::string::npos);
  auto refused = json::parse(tf({"bg", "start", "bg-1"}).output);
  CAF_CHECK(refused["dispatch"].is_null());
  std::ofstream{flag} << "go";
  CAF_CHECK_EQUAL(proc::wait_for(driver.pid).code, 0);
  auto started = json::parse(tf({"bg", "start", "bg-1"}).output);
  CAF_CHECK(started["dispatch"]["token"].is_string());
}

CAF_TEST(the folders of a killed drivers task are free for managed work) {
  auto flag = dir.path() / "go";
  tasks("- [ ] Write the library\n  - id: t1\n  - files: src/\n"
        "  - run: while [ ! -e "
        + flag.string() + " ]; do sleep 0.05; done\n");
  auto driver = start_taskforce(*this, {"run", "TASKS.md", "--plain"});
  CAF_REQUIRE(eventually([&] {
    return tf({"bg", "status"}).output.find("\"holder\":\"run/")
           != std::string::npos;
  }));
  ::kill(driver.pid, SIGKILL);
  CAF_CHECK_EQUAL(proc::wait_for(driver.pid).signal, SIGKILL);
  // Nobody drives the run any more: its task holds nothing.
  auto status = tf({"bg", "status"});
  CAF_CHECK_EQUAL(status.output.find("\"holder\":\"run/"), std::string::npos);
  auto prepared = json::parse(tf({"bg", "prepare", "--title", "lib", "--agent",
                                  "coder", "--prompt", "p", "--root", "src"})
                                .output);
  CAF_CHECK_EQUAL(prepared["task"]["state"], "ready");
  CAF_CHECK(prepared["dispatch"]["token"].is_string());
  // The worker the driver left behind (the next resume would kill it)
  // ends, before the repository goes.
  std::ofstream{flag} << "go";
  CAF_CHECK(eventually([&] {
    return processes_mentioning(flag.string()).empty();
  }));
}

CAF_TEST(a killed servers managed task keeps a task list waiting until it is
           cancelled) {
  tasks("- [ ] Edit the library\n  - id: t1\n  - files: src/lib.txt\n"
        "  - run: echo edited > src/lib.txt\n");
  {
    auto srv = serve();
    auto& peer = srv->peer;
    auto prepared = peer.call({{"id", 1},
                               {"op", "bg.prepare"},
                               {"title", "lib"},
                               {"agent", "coder"},
                               {"prompt", "p"},
                               {"roots", {"src"}}});
    CAF_REQUIRE_EQUAL(prepared["ok"], true);
    auto linked = peer.call({{"id", 2},
                             {"op", "bg.link"},
                             {"token", prepared["dispatch"]["token"]},
                             {"child_session", "child-1"}});
    CAF_REQUIRE_EQUAL(linked["ok"], true);
    srv->signal(SIGKILL);
    CAF_CHECK_EQUAL(srv->wait(), -SIGKILL);
  }
  // Its child may still be writing: the run's task waits for it.
  auto driver = start_taskforce(*this, {"run", "TASKS.md", "--plain"});
  CAF_REQUIRE(eventually([&] {
    return seen("t1") == "ready: waits for managed task bg-1 (src)";
  }));
  CAF_CHECK_EQUAL(read_file(root / "src/lib.txt"), "lib\n");
  CAF_REQUIRE_EQUAL(tf({"bg", "cancel", "bg-1"}).code, 0);
  CAF_CHECK_EQUAL(proc::wait_for(driver.pid).code, 0);
  CAF_CHECK_EQUAL(to_string(task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(read_file(root / "src/lib.txt"), "edited\n");
}

CAF_TEST(outside a repository the control plane is unavailable and the pool
           still serves) {
  serve_process srv{
    TASKFORCE_BINARY, {"serve", "--stdio"}, dir.path().string()};
  auto r = srv.peer.call({{"id", 1},
                          {"op", "bg.prepare"},
                          {"title", "t"},
                          {"agent", "a"},
                          {"prompt", "p"}});
  CAF_CHECK_EQUAL(r["ok"], false);
  CAF_CHECK_EQUAL(r["error"]["code"], "unavailable");
  CAF_CHECK_NOT_EQUAL(
    r["error"]["message"].get<std::string>().find("needs a repository"),
    std::string::npos);
  auto status = srv.peer.call({{"id", 2}, {"op", "status"}});
  CAF_CHECK_EQUAL(status["ok"], true);
  CAF_CHECK(!std::filesystem::exists(dir.path() / ".taskforce"));
}

CAF_TEST(a bad field or a misspelt op is a bad request naming it) {
  auto srv = serve();
  auto& peer = srv->peer;
  auto misspelt = peer.call({{"id", 1}, {"op", "bg.prepar"}});
  CAF_CHECK_EQUAL(misspelt["error"]["code"], "bad_request");
  CAF_CHECK_EQUAL(misspelt["error"]["message"],
                  "unknown op \"bg.prepar\" (did you mean \"bg.prepare\"?)");
  auto no_title = peer.call(
    {{"id", 2}, {"op", "bg.prepare"}, {"agent", "a"}, {"prompt", "p"}});
  CAF_CHECK_EQUAL(no_title["error"]["code"], "bad_request");
  CAF_CHECK_EQUAL(no_title["error"]["message"], "missing field \"title\"");
  auto bad_roots = peer.call({{"id", 3},
                              {"op", "bg.prepare"},
                              {"title", "t"},
                              {"agent", "a"},
                              {"prompt", "p"},
                              {"roots", "src"}});
  CAF_CHECK_EQUAL(bad_roots["error"]["code"], "bad_request");
  // A root through .git or outside is refused and leaves nothing behind.
  auto into_git = peer.call({{"id", 4},
                             {"op", "bg.prepare"},
                             {"title", "t"},
                             {"agent", "a"},
                             {"prompt", "p"},
                             {"roots", {".git/hooks"}}});
  CAF_CHECK_EQUAL(into_git["error"]["code"], "bad_request");
  auto status = peer.call({{"id", 5}, {"op", "bg.status"}});
  CAF_CHECK(status["tasks"].empty());
  // Numbers a double cannot hold, or past 2^53, are refused as such.
  peer.send_line(
    R"({"id":6,"op":"monitor.read","monitor":"mon-1","offset":1e400})");
  auto out_of_range = peer.next();
  CAF_CHECK_EQUAL(out_of_range["error"]["code"], "bad_request");
  auto past = peer.call({{"id", 7},
                         {"op", "monitor.read"},
                         {"monitor", "mon-1"},
                         {"offset", 9007199254740993ull}});
  CAF_CHECK_EQUAL(past["error"]["code"], "bad_request");
  CAF_CHECK_NOT_EQUAL(
    past["error"]["message"].get<std::string>().find("\"offset\""),
    std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
