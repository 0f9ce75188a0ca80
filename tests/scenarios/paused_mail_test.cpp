// Mail to a run that no process drives: an answer to a blocked task, a
// message to one task or to all of them waits in the ledger and reaches the
// workers, exactly once, when the run resumes. Real binary, real
// repositories, shell workers that read their turn.
#define CAF_SUITE scenarios.paused_mail
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"
#include "src/proc/spawn.hpp"
#include "src/store/mailbox.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos;
       at = text.find(part, at + part.size()))
    ++n;
  return n;
}

std::string state_of(const scenario& s, const std::string& id) {
  return to_string(s.task(id).state);
}

std::string on_main(const scenario& s, const std::string& file) {
  auto r = run_git(s.root, {"show", "main:" + file});
  return r.status == 0 ? r.output : std::string{};
}

/// Field `key` of task `id` in `status --json` ("" when not a string). A
/// copy: a check never holds a reference into a temporary.
std::string field(scenario& s, const std::string& id, const std::string& key) {
  auto j
    = nlohmann::json::parse(s.tf({"status", "--json"}).output, nullptr, false);
  CAF_REQUIRE(j.is_object());
  for (auto& t : j["tasks"])
    if (t["id"] == id) {
      auto v = t.value(key, nlohmann::json{});
      return v.is_string() ? v.get<std::string>() : std::string{};
    }
  return {};
}

/// A shell worker that asks a question on its first turn and writes the
/// answer it is given (standard input) to ans.txt on its answer turn.
const char* asking_task
  = "- [ ] Paint\n  - files: ans.txt\n"
    "  - run: if [ \"$TASKFORCE_TURN\" = answer ]; then cat > ans.txt; "
    "else echo '[task:blocked] which colour?'; fi\n";

} // namespace

CAF_TEST(answer runs a blocked task again with the answer on its input) {
  scenario s;
  s.tasks(asking_task);
  auto r = s.tf({"run", "TASKS.md", "--plain"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_REQUIRE_EQUAL(state_of(s, "t1"), "blocked");
  CAF_CHECK_EQUAL(field(s, "t1", "reason"), "which colour?");
  CAF_CHECK_EQUAL(field(s, "t1", "state"), "blocked");
  auto a = s.tf({"answer", "t1", "blue,", "please"});
  CAF_CHECK_EQUAL(a.code, 0);
  CAF_CHECK(contains(a.output, "runs again with the answer"));
  CAF_CHECK_EQUAL(state_of(s, "t1"), "ready");
  auto resumed = s.tf({"resume", "--plain"});
  CAF_CHECK_EQUAL(resumed.code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  CAF_CHECK_EQUAL(on_main(s, "ans.txt"), "blue, please\n");
  // Answered once: a done task takes no more answers.
  auto late = s.tf({"answer", "t1", "red"});
  CAF_CHECK_EQUAL(late.code, 2);
  CAF_CHECK(contains(late.output, "completed"));
}

CAF_TEST(askUserOnBlocked keeps a blocked worker for its answer) {
  scenario s;
  s.set_config(R"({"run": {"askUserOnBlocked": true}})");
  s.tasks(std::string{asking_task}
          + "- [ ] Other\n  - files: o.txt\n  - run: echo o > o.txt\n");
  proc::spawn_options o;
  o.argv = {TASKFORCE_BINARY,  "--repo", s.root.string(), "--config",
            s.config.string(), "run",    "TASKS.md",      "--plain"};
  o.cwd = s.root.string();
  o.out = proc::stdio::file((s.dir.path() / "run.log").string());
  o.err = proc::stdio::to_stdout();
  o.in = proc::stdio::null();
  auto child = proc::spawn(o);
  // The driver stays up, the run awaiting the answer.
  bool awaiting = false;
  for (int i = 0; i < 300 && !awaiting; ++i) {
    std::this_thread::sleep_for(100ms);
    try {
      if (std::filesystem::exists(s.root / ".taskforce/ledger.sqlite"))
        awaiting = contains(s.run().reason.value_or(""), "awaiting answer: t1");
    } catch (const std::exception&) {
    }
  }
  CAF_REQUIRE(awaiting);
  CAF_CHECK_EQUAL(state_of(s, "t2"), "done");
  auto status = s.tf({"status"});
  CAF_CHECK(contains(status.output, "t1 awaits an answer"));
  // Ctrl-C lets the driver go; the task stays blocked for its answer.
  ::kill(child.pid, SIGINT);
  auto st = proc::wait_for(child.pid);
  CAF_CHECK_EQUAL(st.code, 1);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "blocked");
  CAF_CHECK_EQUAL(s.tf({"answer", "t1", "green"}).code, 0);
  CAF_CHECK_EQUAL(s.tf({"resume", "--plain"}).code, 0);
  CAF_CHECK_EQUAL(on_main(s, "ans.txt"), "green\n");
}

CAF_TEST(send and broadcast reach each worker exactly once at resume) {
  scenario s;
  std::string tf = TASKFORCE_BINARY;
  // Each worker keeps its standard input and what `taskforce inbox` prints.
  auto reader = [&](const std::string& file) {
    return "{ cat; " + tf + " inbox; } > " + file;
  };
  s.tasks("- [ ] Gate\n  - files: h.txt\n  - run: " + reader("h.txt")
          + "\n  [NEEDS DECISION: go or not]\n"
            "- [ ] Two\n  - files: two.txt\n  - deps: 1\n  - run: "
          + reader("two.txt")
          + "\n"
            "- [ ] Three\n  - files: three.txt\n  - deps: 1\n  - run: "
          + reader("three.txt") + "\n");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(state_of(s, "t1"), "held");
  auto one = s.tf({"send", "t2", "only for two"});
  CAF_CHECK_EQUAL(one.code, 0);
  CAF_CHECK(contains(one.output, "when the run resumes"));
  auto all = s.tf({"broadcast", "for", "everyone"});
  CAF_CHECK_EQUAL(all.code, 0);
  CAF_CHECK(contains(all.output, "t1, t2, t3"));
  CAF_CHECK_EQUAL(s.tf({"approve", "t1"}).code, 0);
  CAF_CHECK_EQUAL(s.tf({"resume", "--plain"}).code, 0);
  auto two = on_main(s, "two.txt");
  auto three = on_main(s, "three.txt");
  auto gate = on_main(s, "h.txt");
  CAF_CHECK_EQUAL(count(two, "only for two"), 1u);
  CAF_CHECK_EQUAL(count(two, "for everyone"), 1u);
  CAF_CHECK_EQUAL(count(three, "for everyone"), 1u);
  CAF_CHECK_EQUAL(count(three, "only for two"), 0u);
  CAF_CHECK_EQUAL(count(gate, "for everyone"), 1u);
  // Every mail counts as delivered; nothing waits for a later turn.
  auto db = s.ledger();
  auto run = db.latest_run();
  CAF_REQUIRE(run.has_value());
  CAF_CHECK(store::mailbox{db}.undelivered_counts(run->id).empty());
  // A finished task reads no more mail.
  auto late = s.tf({"send", "t2", "too late"});
  CAF_CHECK_EQUAL(late.code, 2);
}
