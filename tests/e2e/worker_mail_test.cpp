// The worker's side of the mailbox, with the real binary: `taskforce inbox`
// and `taskforce report` run as a worker runs them (its environment names
// the run, the task and the repository), with and without a driver.
#define CAF_SUITE e2e.worker_mail
#include <caf/test/unit_test.hpp>

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include "scenarios/scenario.hpp"
#include "src/proc/spawn.hpp"
#include "src/store/mailbox.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// What one invocation printed, stdout and stderr apart.
struct outcome {
  int code = -1;
  std::string out;
  std::string err;
};

/// The worker environment of task `task` of `run` in `s`'s repository.
std::map<std::string, std::string>
worker_env(const scenario& s, const std::string& run, const std::string& task,
           const std::string& attempt = "1") {
  return {{"TASKFORCE_RUN_ID", run},
          {"TASKFORCE_TASK_ID", task},
          {"TASKFORCE_REPO", s.root.string()},
          {"TASKFORCE_ATTEMPT", attempt}};
}

/// `env -u TASKFORCE_… VAR=… taskforce ARGS…`: only the variables given
/// (whatever the test's own environment holds), from a folder outside the
/// repository, as a worker in its worktree would.
std::vector<std::string>
worker_argv(const std::map<std::string, std::string>& env,
            const std::vector<std::string>& args) {
  std::vector<std::string> argv{"/usr/bin/env"};
  for (auto* name : {"TASKFORCE_RUN_ID", "TASKFORCE_TASK_ID", "TASKFORCE_REPO",
                     "TASKFORCE_ATTEMPT", "TASKFORCE_TURN"}) {
    argv.push_back("-u");
    argv.push_back(name);
  }
  for (auto& [k, v] : env)
    argv.push_back(k + "=" + v);
  argv.push_back(TASKFORCE_BINARY);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

int invocations = 0;

outcome in_worker(scenario& s, const std::map<std::string, std::string>& env,
                  const std::vector<std::string>& args,
                  const std::string& stdin_text = "") {
  auto tag = std::to_string(++invocations);
  auto out = s.dir.path() / ("out-" + tag);
  auto err = s.dir.path() / ("err-" + tag);
  auto elsewhere = s.dir.path() / "elsewhere";
  std::filesystem::create_directories(elsewhere);
  proc::spawn_options o;
  o.argv = worker_argv(env, args);
  o.cwd = elsewhere.string();
  o.out = proc::stdio::file(out.string());
  o.err = proc::stdio::file(err.string());
  if (stdin_text.empty()) {
    o.in = proc::stdio::null();
  } else {
    o.in = proc::stdio::pipe();
  }
  auto child = proc::spawn(o);
  if (child.stdin_fd >= 0) {
    auto n = ::write(child.stdin_fd, stdin_text.data(), stdin_text.size());
    CAF_CHECK_EQUAL(static_cast<size_t>(n), stdin_text.size());
    ::close(child.stdin_fd);
  }
  auto st = proc::wait_for(child.pid);
  return {st.code, read_file(out), read_file(err)};
}

/// A repository whose run paused with its one task blocked.
std::string blocked_run(scenario& s) {
  s.tasks("- [ ] Ask\n  - files: b.txt\n"
          "  - run: echo '[task:blocked] which database?'\n");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_REQUIRE_EQUAL(r.code, 1);
  CAF_REQUIRE_EQUAL(to_string(s.task("t1").state), std::string{"blocked"});
  return s.run().id;
}

/// Posts mail down to `task` as `send` and `answer` do.
int64_t post(scenario& s, const std::string& run, const std::string& task,
             const std::string& text,
             store::mail_kind kind = store::mail_kind::message) {
  auto db = store::ledger::open(s.root / ".taskforce" / "ledger.sqlite");
  return store::mailbox{db}
    .post({run, task, kind, text, std::nullopt}, store::wall_clock_ms())
    .id;
}

std::vector<store::mail_row> mail_of(scenario& s, const std::string& run) {
  auto db = s.ledger();
  return store::mailbox{db}.list(run);
}

} // namespace

CAF_TEST(inbox and report outside a worker exit 2 saying what is missing) {
  scenario s;
  auto run = blocked_run(s);
  auto good = worker_env(s, run, "t1");
  struct sample {
    const char* what;
    std::map<std::string, std::string> env;
    const char* says;
  };
  auto without = [&](const char* name) {
    auto env = good;
    env.erase(name);
    return env;
  };
  auto with = [&](const char* name, const std::string& value) {
    auto env = good;
    env[name] = value;
    return env;
  };
  std::vector<sample> samples{
    {"no environment", {}, "TASKFORCE_RUN_ID is not set"},
    {"no task", without("TASKFORCE_TASK_ID"), "TASKFORCE_TASK_ID is not set"},
    {"no repository", without("TASKFORCE_REPO"), "TASKFORCE_REPO is not set"},
    {"unknown run", with("TASKFORCE_RUN_ID", "20000101-000000-beef"),
     "names run 20000101-000000-beef"},
    {"unknown task", with("TASKFORCE_TASK_ID", "t9"), "has no task t9"},
    {"no repository there", with("TASKFORCE_REPO", "/nonexistent/repo"),
     "/nonexistent/repo, which is not a folder"},
    {"a repository without runs", with("TASKFORCE_REPO", s.dir.path().string()),
     "which has no taskforce ledger"},
    {"a garbled attempt", with("TASKFORCE_ATTEMPT", "2x"),
     "TASKFORCE_ATTEMPT is \"2x\""},
  };
  for (auto& x : samples) {
    for (auto* command : {"inbox", "report"}) {
      CAF_MESSAGE(command << ", " << x.what);
      std::vector<std::string> args{command};
      if (std::string{command} == "report")
        args.push_back("hello");
      auto r = in_worker(s, x.env, args);
      CAF_CHECK_EQUAL(r.code, 2);
      CAF_CHECK(contains(r.err, x.says));
      CAF_CHECK(contains(r.err, command));
      CAF_CHECK_EQUAL(r.out, "");
    }
  }
  // A report needs words, and not too many.
  CAF_CHECK_EQUAL(in_worker(s, good, {"report"}).code, 2);
  CAF_CHECK_EQUAL(in_worker(s, good, {"report", "  "}).code, 2);
  auto huge = in_worker(s, good, {"report", std::string(70 * 1024, 'x')});
  CAF_CHECK_EQUAL(huge.code, 2);
  CAF_CHECK(contains(huge.err, "at most 64 KiB"));
  CAF_CHECK_EQUAL(in_worker(s, good, {"inbox", "extra"}).code, 2);
  // Nothing was recorded or delivered by any of them.
  CAF_CHECK(mail_of(s, run).empty());
}

CAF_TEST(inbox prints the unread mail of its task once) {
  scenario s;
  auto run = blocked_run(s);
  auto first = post(s, run, "t1", "use sqlite");
  post(s, run, "t1", "and keep\nthe schema small", store::mail_kind::answer);
  {
    // Another task's mail stays where it is: add one to the run.
    auto db = store::ledger::open(s.root / ".taskforce" / "ledger.sqlite");
    db.add_tasks(
      {run,
       "MORE.md",
       {store::new_task{"t2", 1, "Other", task_state::pending, std::nullopt}}},
      store::wall_clock_ms());
  }
  post(s, run, "t2", "not for t1");
  auto env = worker_env(s, run, "t1", "2");
  auto r = in_worker(s, env, {"inbox"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(r.err, "");
  CAF_CHECK(contains(r.out, "[message " + std::to_string(first) + " at "));
  CAF_CHECK(contains(r.out, "]\nuse sqlite\n[answer "));
  CAF_CHECK(contains(r.out, "]\nand keep\nthe schema small\n"));
  CAF_CHECK(!contains(r.out, "not for t1"));
  // Read once: the next inbox has nothing, in either form.
  auto again = in_worker(s, env, {"inbox"});
  CAF_CHECK_EQUAL(again.code, 0);
  CAF_CHECK_EQUAL(again.out, "");
  CAF_CHECK_EQUAL(in_worker(s, env, {"inbox", "--json"}).out, "[]\n");
  // New mail arrives: only it, as JSON this time.
  auto later = post(s, run, "t1", "one more");
  auto j = json::parse(in_worker(s, env, {"inbox", "--json"}).out);
  CAF_REQUIRE_EQUAL(j.size(), 1u);
  CAF_CHECK_EQUAL(j[0]["id"], later);
  CAF_CHECK_EQUAL(j[0]["text"], "one more");
  CAF_CHECK_EQUAL(j[0]["attempt"], 2);
  CAF_CHECK(j[0]["delivered_ms"].is_number());
  // logs shows what was delivered, to which attempt, and what was not.
  auto logs = s.tf({"logs", "t1"});
  CAF_CHECK_EQUAL(logs.code, 0);
  CAF_CHECK(contains(logs.output, "message down, delivered "));
  CAF_CHECK(contains(logs.output, "to attempt 2:\n    use sqlite\n"));
  CAF_CHECK(contains(logs.output, "    and keep\n    the schema small\n"));
  auto other = s.tf({"logs", "t2"});
  CAF_CHECK(contains(other.output, "message down, not delivered yet:\n"
                                   "    not for t1\n"));
  auto status = s.tf({"status"});
  CAF_CHECK(contains(status.output, "(1 message not read yet)"));
}

CAF_TEST(report records a message up that logs shows) {
  scenario s;
  auto run = blocked_run(s);
  auto env = worker_env(s, run, "t1", "1");
  auto r = in_worker(s, env, {"report", "half", "way", "there"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK(contains(r.out, "recorded for task t1 of run " + run));
  auto piped = in_worker(s, env, {"report", "-"}, "from stdin\nline two\n");
  CAF_CHECK_EQUAL(piped.code, 0);
  auto mail = mail_of(s, run);
  CAF_REQUIRE_EQUAL(mail.size(), 2u);
  CAF_CHECK_EQUAL(mail[0].text, "half way there");
  CAF_CHECK_EQUAL(mail[0].direction, store::mail_direction::up);
  CAF_CHECK_EQUAL(mail[0].attempt, std::optional<int>{1});
  CAF_CHECK_EQUAL(mail[1].text, "from stdin\nline two\n");
  // A report is never handed to the worker as mail of its own.
  CAF_CHECK_EQUAL(in_worker(s, env, {"inbox"}).out, "");
  auto logs = s.tf({"logs", "t1"});
  CAF_CHECK(contains(logs.output, "report up from attempt 1:\n"
                                  "    half way there\n"));
  CAF_CHECK(contains(logs.output, "    from stdin\n    line two\n"));
  auto j = json::parse(s.tf({"logs", "t1", "--json"}).output);
  CAF_REQUIRE_EQUAL(j["mail"].size(), 2u);
  CAF_CHECK_EQUAL(j["mail"][0]["direction"], "up");
  CAF_CHECK_EQUAL(j["mail"][0]["kind"], "report");
  CAF_CHECK_EQUAL(j["task"]["id"], "t1");
  CAF_CHECK_EQUAL(j["task"]["reason"], "which database?");
  CAF_CHECK(j["events"].size() >= 3u);
}

CAF_TEST(inboxes started at the same moment deliver each message once) {
  scenario s;
  auto run = blocked_run(s);
  auto env = worker_env(s, run, "t1");
  constexpr int rounds = 4;
  constexpr int readers = 4;
  constexpr int messages = 25;
  for (int round = 0; round < rounds; ++round) {
    std::set<int64_t> posted;
    for (int i = 0; i < messages; ++i)
      posted.insert(post(
        s, run, "t1", "r" + std::to_string(round) + " m" + std::to_string(i)));
    // Each reader waits for the same flag file, then execs inbox.
    auto flag = s.dir.path() / ("go-" + std::to_string(round));
    auto inbox = worker_argv(env, {"inbox", "--json"});
    std::string command;
    for (auto& a : inbox)
      command += " '" + a + "'";
    std::vector<std::pair<proc::child, std::filesystem::path>> started;
    for (int k = 0; k < readers; ++k) {
      auto out = s.dir.path()
                 / ("inbox-" + std::to_string(round) + "-" + std::to_string(k));
      proc::spawn_options o;
      o.argv = {"/bin/sh", "-c",
                "while [ ! -e '" + flag.string() + "' ]; do sleep 0.005; done;"
                  + " exec" + command};
      o.out = proc::stdio::file(out.string());
      o.err = proc::stdio::to_stdout();
      o.in = proc::stdio::null();
      started.emplace_back(proc::spawn(o), out);
    }
    { std::ofstream{flag} << "go\n"; }
    std::multiset<int64_t> got;
    for (auto& [child, out] : started) {
      auto st = proc::wait_for(child.pid);
      CAF_CHECK_EQUAL(st.code, 0);
      auto j = json::parse(read_file(out), nullptr, false);
      CAF_REQUIRE(j.is_array());
      for (auto& m : j)
        got.insert(m["id"].get<int64_t>());
    }
    CAF_CHECK_EQUAL(got.size(), posted.size());
    CAF_CHECK_EQUAL(std::set<int64_t>(got.begin(), got.end()), posted);
  }
}

CAF_TEST(inbox and report work while a driver runs the task) {
  scenario s;
  auto flag = (s.dir.path() / "go.flag").string();
  // The worker says when its command runs: mail posted before that is
  // the start turn's (taken before the command starts), not the inbox's.
  auto started = (s.dir.path() / "started.flag").string();
  s.tasks("- [ ] Slow\n  - files: a.txt\n  - run: touch " + started
          + "; while [ ! -e " + flag
          + " ]; do sleep 0.05; done; echo a > a.txt\n");
  s.set_config(s.config_text);
  proc::spawn_options o;
  o.argv = {TASKFORCE_BINARY,  "--repo", s.root.string(), "--config",
            s.config.string(), "run",    "TASKS.md",      "--plain"};
  o.cwd = s.root.string();
  o.out = proc::stdio::file((s.dir.path() / "driver.log").string());
  o.err = proc::stdio::to_stdout();
  o.in = proc::stdio::null();
  auto driver = proc::spawn(o);
  bool running = false;
  for (int i = 0; i < 200 && !running; ++i) {
    std::this_thread::sleep_for(100ms);
    try {
      running = std::filesystem::exists(started)
                && s.task("t1").state == task_state::running;
    } catch (const std::exception&) {
    }
  }
  CAF_REQUIRE(running);
  auto run = s.run().id;
  auto env = worker_env(s, run, "t1");
  post(s, run, "t1", "while you run");
  auto r = in_worker(s, env, {"inbox"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK(contains(r.out, "while you run"));
  CAF_CHECK_EQUAL(in_worker(s, env, {"report", "still", "going"}).code, 0);
  { std::ofstream{flag} << "go\n"; }
  auto st = proc::wait_for(driver.pid);
  CAF_CHECK_EQUAL(st.code, 0);
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  auto mail = mail_of(s, run);
  CAF_REQUIRE_EQUAL(mail.size(), 2u);
  CAF_CHECK(mail[0].delivered_ms.has_value());
  CAF_CHECK_EQUAL(mail[1].text, "still going");
}
