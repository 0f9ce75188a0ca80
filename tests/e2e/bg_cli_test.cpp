// `taskforce bg …` as a script or a hook runs it: the real binary in a
// temporary git repository, its answer as JSON on standard output, its
// exit status, and the ledger it leaves; with no server (the command works
// on the ledger itself) and with one (the request goes to the server).
#define CAF_SUITE e2e.bg_cli
#include <caf/test/unit_test.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <signal.h>

#include <string>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "scenarios/scenario.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

/// What one `taskforce bg …` did.
struct bg_result {
  int code = -1;
  std::string out;
  std::string err;
  /// Standard output parsed (discarded when it is not JSON).
  json answer;
};

struct fixture : scenario {
  fixture() {
    set_config("{}");
    write("src/main.c", "int main() {}\n");
    write("docs/guide.md", "# guide\n");
    git_ok(root, {"add", "-A"});
    git_ok(root, {"commit", "-q", "-m", "layout"});
  }

  /// Runs `taskforce --repo ROOT --config CONFIG bg ARGS…` with standard
  /// output and standard error kept apart.
  bg_result bg(std::vector<std::string> args) {
    return command("bg", std::move(args));
  }

  /// Runs `taskforce … monitor ARGS…` the same way.
  bg_result monitor(std::vector<std::string> args) {
    return command("monitor", std::move(args));
  }

  bg_result command(const std::string& name, std::vector<std::string> args) {
    auto out = dir.path() / "bg.out";
    auto err = dir.path() / "bg.err";
    proc::run_options o;
    o.argv = {"/bin/sh",
              "-c",
              "exec \"$@\" 2>\"$BG_ERR\"",
              "sh",
              TASKFORCE_BINARY,
              "--repo",
              root.string(),
              "--config",
              config.string(),
              name};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.cwd = root.string();
    o.env = {{"NO_COLOR", "1"}, {"BG_ERR", err.string()}};
    o.log_file = out.string();
    o.timeout = 120000ms;
    auto r = proc::run(o);
    bg_result x;
    x.code = r.exit_code;
    x.out = read_file(out);
    x.err = read_file(err);
    x.answer = json::parse(x.out, nullptr, false);
    return x;
  }

  /// Prepares a task writing `root_path`; its answer.
  bg_result prepare(const std::string& title, const std::string& root_path,
                    std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"prepare",     "--title", title,
                                  "--agent",     "coder",   "--prompt",
                                  "do " + title, "--root",  root_path};
    args.insert(args.end(), extra.begin(), extra.end());
    return bg(args);
  }

  /// Links the task `prepared` dispatched to `child`; the exit status.
  int link(const bg_result& prepared, const std::string& child) {
    std::string token = prepared.answer["dispatch"]["token"];
    return bg({"link", token, child}).code;
  }

  /// The state of task `id` as `bg status` prints it.
  std::string state_of(const std::string& id) {
    auto r = bg({"status", id});
    CAF_REQUIRE_EQUAL(r.code, 0);
    return r.answer["tasks"][0]["state"];
  }
};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(bg_cli_tests, fixture)

CAF_TEST(a task goes from prepare to done on the ledger with no server) {
  // prepare: a free root, so the task is ready with a one-use token.
  auto first = prepare("parser", "src", {"--validation", "test -f src/ok"});
  CAF_REQUIRE_EQUAL(first.code, 0);
  CAF_CHECK_EQUAL(first.answer["task"]["id"], "bg-1");
  CAF_CHECK_EQUAL(first.answer["task"]["state"], "ready");
  CAF_CHECK_EQUAL(first.answer["task"]["leases"], json({"src"}));
  std::string token = first.answer["dispatch"]["token"];
  CAF_CHECK_EQUAL(token.size(), 32u);
  CAF_CHECK_EQUAL(first.answer["dispatch"]["prompt"], "do parser");
  CAF_CHECK(!first.answer.contains("id"));
  CAF_CHECK(!first.answer.contains("ok"));
  // A second task inside the first one's root waits in the queue.
  auto second = prepare("lexer", "src/lex");
  CAF_REQUIRE_EQUAL(second.code, 0);
  CAF_CHECK_EQUAL(second.answer["task"]["state"], "queued");
  CAF_CHECK(second.answer["dispatch"].is_null());
  auto nothing = bg({"start"});
  CAF_CHECK_EQUAL(nothing.code, 0);
  CAF_CHECK(nothing.answer.contains("dispatch"));
  CAF_CHECK(nothing.answer["dispatch"].is_null());
  // link: the child session runs the task; the token is spent.
  auto link = bg({"link", token, "child-1"});
  CAF_REQUIRE_EQUAL(link.code, 0);
  CAF_CHECK_EQUAL(link.answer["task"]["state"], "running");
  CAF_CHECK_EQUAL(link.answer["task"]["child_session"], "child-1");
  auto again = bg({"link", token, "child-2"});
  CAF_CHECK_EQUAL(again.code, 1);
  CAF_CHECK_EQUAL(again.answer["error"]["code"], "token_used");
  // may-write: the gate a write hook asks.
  auto inside = bg({"may-write", "child-1", "src/parse.c"});
  CAF_CHECK_EQUAL(inside.code, 0);
  CAF_CHECK_EQUAL(inside.answer["allowed"], true);
  auto outside = bg({"may-write", "child-1", "docs/guide.md"});
  CAF_CHECK_EQUAL(outside.code, 1);
  CAF_CHECK_EQUAL(outside.answer["allowed"], false);
  CAF_CHECK(contains(outside.err, "docs/guide.md"));
  // complete: the validation fails, so the task goes back to running
  // with the failure in the answer.
  write("src/parse.c", "int parse() { return 0; }\n");
  auto failing = bg({"complete", "bg-1", "--done", "--file", "src/parse.c",
                     "--result", "parser written"});
  CAF_CHECK_EQUAL(failing.code, 1);
  CAF_CHECK_EQUAL(failing.answer["accepted"], false);
  CAF_CHECK_EQUAL(failing.answer["task"]["state"], "running");
  CAF_REQUIRE_EQUAL(failing.answer["validations"].size(), 1u);
  CAF_CHECK_EQUAL(failing.answer["validations"][0]["command"],
                  "test -f src/ok");
  CAF_CHECK_EQUAL(failing.answer["validations"][0]["status"], "failure");
  CAF_CHECK(contains(failing.answer["reason"], "test -f src/ok"));
  CAF_CHECK(contains(failing.err, "not accepted"));
  CAF_CHECK_EQUAL(state_of("bg-1"), "running");
  // Then it passes: done, and its root is free again.
  write("src/ok", "yes\n");
  auto passing = bg({"complete", "bg-1", "--done", "--file", "src/parse.c",
                     "--file", "src/ok"});
  CAF_CHECK_EQUAL(passing.code, 0);
  CAF_CHECK_EQUAL(passing.answer["accepted"], true);
  CAF_CHECK_EQUAL(passing.answer["task"]["state"], "done");
  CAF_CHECK_EQUAL(passing.answer["task"]["leases"], json::array());
  CAF_CHECK_EQUAL(passing.answer["validations"][0]["status"], "success");
  // start hands out the queued task now that its root is free.
  auto start = bg({"start"});
  CAF_CHECK_EQUAL(start.code, 0);
  CAF_CHECK_EQUAL(start.answer["task"]["id"], "bg-2");
  CAF_CHECK_EQUAL(start.answer["task"]["state"], "ready");
  CAF_CHECK_EQUAL(start.answer["dispatch"]["task"], "bg-2");
  // cancel it: before its child is linked the root stays reserved, a
  // second cancel frees it.
  auto cancel = bg({"cancel", "bg-2"});
  CAF_CHECK_EQUAL(cancel.code, 0);
  CAF_CHECK_EQUAL(cancel.answer["task"]["state"], "cancelled");
  CAF_CHECK_EQUAL(cancel.answer["released"], false);
  auto repeat = bg({"cancel", "bg-2"});
  CAF_CHECK_EQUAL(repeat.code, 0);
  CAF_CHECK_EQUAL(repeat.answer["released"], true);
  auto status = bg({"status"});
  CAF_CHECK_EQUAL(status.code, 0);
  CAF_CHECK_EQUAL(status.answer["tasks"].size(), 2u);
  CAF_CHECK_EQUAL(status.answer["leases"], json::array());
  // The ledger and the logs never show as changes of the repository.
  auto porcelain = git_ok(root, {"status", "--porcelain"});
  CAF_CHECK(!contains(porcelain, ".taskforce"));
}

CAF_TEST(a blocked task continues with a new token and reconcile interrupts a
           gone child) {
  auto first = prepare("parser", "src");
  CAF_REQUIRE_EQUAL(link(first, "c1"), 0);
  auto blocked
    = bg({"complete", "bg-1", "--blocked", "--result", "which grammar?"});
  CAF_CHECK_EQUAL(blocked.code, 0);
  CAF_CHECK_EQUAL(blocked.answer["task"]["state"], "blocked");
  auto cont = bg({"continue", "bg-1", "use", "the", "LALR", "one"});
  CAF_REQUIRE_EQUAL(cont.code, 0);
  CAF_CHECK_EQUAL(cont.answer["dispatch"]["kind"], "continue");
  CAF_CHECK(contains(cont.answer["dispatch"]["prompt"], "use the LALR one"));
  CAF_REQUIRE_EQUAL(link(cont, "c2"), 0);
  // The harness knows only of another session: c2 is gone.
  auto rec = bg({"reconcile", "someone-else"});
  CAF_CHECK_EQUAL(rec.code, 0);
  CAF_CHECK_EQUAL(rec.answer["interrupted"], json({"bg-1"}));
  CAF_CHECK_EQUAL(state_of("bg-1"), "interrupted");
  // A child of an interrupted task may not write.
  auto gate = bg({"may-write", "c2", "src/x.c"});
  CAF_CHECK_EQUAL(gate.code, 1);
  CAF_CHECK_EQUAL(gate.answer["allowed"], false);
}

CAF_TEST(status of an unknown task exits 1 with not_found) {
  auto r = bg({"status", "bg-41"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(r.answer["error"]["code"], "not_found");
  CAF_CHECK(contains(r.answer["error"]["message"], "bg-41"));
  CAF_CHECK(contains(r.err, "bg-41"));
  CAF_CHECK_EQUAL(r.err.find('\n'), r.err.size() - 1);
}

CAF_TEST(bad usage exits 2 naming the problem and changes nothing) {
  struct usage_case {
    std::vector<std::string> args;
    const char* named;
  };
  std::vector<usage_case> cases{
    {{}, "needs a subcommand"},
    {{"frob"}, "unknown subcommand \"frob\""},
    {{"prepare", "--agent", "a", "--prompt", "p"}, "--title"},
    {{"prepare", "--title", "t", "--agent", "a"}, "--prompt"},
    {{"prepare", "--title", "", "--agent", "a", "--prompt", "p"}, "--title"},
    {{"prepare", "--title", "t", "--agent", "a", "--prompt", "p", "--root"},
     "--root needs a value"},
    {{"prepare", "--title", "t", "--agent", "a", "--prompt-file",
      "/nonexistent/prompt"},
     "/nonexistent/prompt"},
    {{"prepare", "--title", "t", "--agent", "a", "--prompt", "p", "--bogus"},
     "--bogus"},
    {{"link", "only-a-token"}, "TOKEN CHILD_SESSION"},
    {{"may-write", "c1"}, "CHILD_SESSION PATH"},
    {{"complete", "bg-1"}, "--done"},
    {{"complete", "bg-1", "--done", "--blocked"}, "--done"},
    {{"continue", "bg-1"}, "TEXT"},
    {{"cancel"}, "TASK"},
    {{"status", "bg-1", "bg-2"}, "at most one TASK"},
    {{"reconcile"}, "--none"},
  };
  for (const auto& c : cases) {
    auto r = bg(c.args);
    CAF_MESSAGE("bg " << (c.args.empty() ? "" : c.args[0]) << ": " << r.err);
    CAF_CHECK_EQUAL(r.code, 2);
    CAF_CHECK(contains(r.err, c.named));
  }
  // A root outside the repository: a bad field, refused with the reason.
  auto escape = prepare("t", "../outside");
  CAF_CHECK_EQUAL(escape.code, 2);
  CAF_CHECK_EQUAL(escape.answer["error"]["code"], "bad_request");
  CAF_CHECK(contains(escape.err, "../outside"));
  // Nothing of any of them was kept.
  auto status = bg({"status"});
  CAF_CHECK_EQUAL(status.code, 0);
  CAF_CHECK_EQUAL(status.answer["tasks"], json::array());
}

CAF_TEST(gits folders in any case are neither roots nor places to write) {
  // .GIT is .git on a case-insensitive filesystem; src/.git is a nested
  // repository's git folder; a root holding one is refused too.
  git_ok(root / "docs", {"init", "-q", "vendor"});
  for (auto bad : {".GIT", ".Git/hooks", ".TASKFORCE", "src/.git", "docs"}) {
    auto r = prepare("t", bad);
    CAF_MESSAGE("--root " << bad << ": " << r.err);
    CAF_CHECK_EQUAL(r.code, 2);
    CAF_CHECK_EQUAL(r.answer["error"]["code"], "bad_request");
    CAF_CHECK(contains(r.err, "git") || contains(r.err, "taskforce"));
  }
  CAF_CHECK(contains(prepare("t", "docs").err,
                     "holds a nested git repository (docs/vendor/.git/)"));
  auto status = bg({"status"});
  CAF_CHECK_EQUAL(status.answer["tasks"], json::array());
  auto ok = prepare("parser", "src");
  CAF_REQUIRE_EQUAL(link(ok, "c1"), 0);
  auto nested = bg({"may-write", "c1", "src/.git/config"});
  CAF_CHECK_EQUAL(nested.code, 1);
  CAF_CHECK_EQUAL(nested.answer["allowed"], false);
  CAF_CHECK(contains(nested.answer["reason"].get<std::string>(),
                     "nested repository's git folder"));
  CAF_CHECK_EQUAL(bg({"may-write", "c1", ".GIT/hooks/pre-commit"}).code, 1);
  CAF_CHECK_EQUAL(bg({"may-write", "c1", "src/main.c"}).code, 0);
}

CAF_TEST(reconcile with none alive takes an explicit none) {
  auto first = prepare("parser", "src");
  CAF_REQUIRE_EQUAL(link(first, "c1"), 0);
  auto unasked = bg({"reconcile"});
  CAF_CHECK_EQUAL(unasked.code, 2);
  CAF_CHECK_EQUAL(state_of("bg-1"), "running");
  auto r = bg({"reconcile", "--none"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(r.answer["interrupted"], json({"bg-1"}));
}

CAF_TEST(the prompt comes from a file) {
  write("../prompt.txt", "a long prompt\nover two lines\n");
  auto r = bg({"prepare", "--title", "t", "--agent", "a", "--prompt-file",
               (dir.path() / "prompt.txt").string(), "--root", "docs"});
  CAF_REQUIRE_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(r.answer["dispatch"]["prompt"],
                  "a long prompt\nover two lines\n");
}

CAF_TEST(an endpoint file left by a dead server is ignored) {
  // A server killed with SIGKILL leaves its file behind.
  fs::create_directories(root / ".taskforce");
  auto file = root / ".taskforce" / "endpoint.json";
  {
    std::ofstream out(file);
    out << R"({"address":"127.0.0.1:9","token":")" << std::string(64, 'a')
        << R"(","pid":999999999})";
  }
  ::chmod(file.c_str(), 0600);
  auto r = prepare("t", "src");
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(r.answer["task"]["state"], "ready");
}

CAF_TEST(an endpoint file others can read is refused and nothing is done) {
  fs::create_directories(root / ".taskforce");
  auto file = root / ".taskforce" / "endpoint.json";
  {
    std::ofstream out(file);
    out << R"({"address":"127.0.0.1:9","token":")" << std::string(64, 'a')
        << R"(","pid":)" << ::getpid() << "}";
  }
  ::chmod(file.c_str(), 0644);
  auto r = prepare("t", "src");
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(r.answer["error"]["code"], "unavailable");
  CAF_CHECK(contains(r.err, "endpoint.json"));
  ::chmod(file.c_str(), 0600);
  fs::remove(file);
  auto status = bg({"status"});
  CAF_CHECK_EQUAL(status.answer["tasks"], json::array());
}

CAF_TEST(with a server running the command goes to the server) {
  serve_process server{
    TASKFORCE_BINARY, {"serve", "--listen", "127.0.0.1:0"}, root.string()};
  auto line = server.stderr_line();
  CAF_REQUIRE(line && contains(*line, "listening on 127.0.0.1:"));
  auto port
    = static_cast<uint16_t>(std::stoi(line->substr(line->rfind(':') + 1)));
  auto token = token_in((root / ".taskforce" / "endpoint.json").string());
  tcp_peer watcher{port, token};
  auto subscribed = watcher.peer.call({{"id", 1}, {"op", "subscribe"}});
  CAF_REQUIRE_EQUAL(subscribed["ok"], true);
  auto r = prepare("parser", "src");
  // The server's own view of the same repository.
  auto view = watcher.peer.call({{"id", 2}, {"op", "bg.status"}});
  CAF_REQUIRE_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(r.answer["task"]["state"], "ready");
  CAF_CHECK_EQUAL(view["tasks"][0]["id"], "bg-1");
  // The subscriber saw the changes: the server made them.
  for (;;) {
    auto x = watcher.peer.next(10000ms);
    if (x.value("event", "") != "bg.changed" || x["to"] != "ready")
      continue;
    CAF_CHECK_EQUAL(x["task"]["id"], "bg-1");
    break;
  }
  // And the server refuses what the command would refuse itself.
  auto unknown = bg({"cancel", "bg-9"});
  CAF_CHECK_EQUAL(unknown.code, 1);
  CAF_CHECK_EQUAL(unknown.answer["error"]["code"], "not_found");
  // A monitor started by the command is the server's: it shows up in the
  // subscriber's events, and the command kills it through the server.
  auto started = monitor({"run", "--", "exec sleep 300"});
  CAF_REQUIRE_EQUAL(started.code, 0);
  auto id = started.answer["monitor"]["id"].get<std::string>();
  auto pid = started.answer["monitor"]["pid"].get<int>();
  for (;;) {
    auto x = watcher.peer.next(10000ms);
    if (x.value("event", "") == "monitor.changed" && x["monitor"]["id"] == id)
      break;
  }
  auto killed = monitor({"kill", id});
  CAF_CHECK_EQUAL(killed.code, 0);
  CAF_CHECK_EQUAL(killed.answer["monitor"]["state"], "killed");
  CAF_CHECK(eventually([&] {
    return ::kill(pid, 0) != 0;
  }));
  server.signal(SIGTERM);
  CAF_CHECK_EQUAL(server.wait(), 0);
  // The server gone, the command works on the ledger the server left.
  CAF_CHECK_EQUAL(state_of("bg-1"), "ready");
}

CAF_TEST_FIXTURE_SCOPE_END()
