// A person decides while no process drives the run: approve (a task in
// review, a held task), reject and add are recorded in the ledger and
// carried out by the next `taskforce resume`; what does not apply is
// refused with exit 2 naming the state. Real binary, real repositories.
#define CAF_SUITE scenarios.paused_steer
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <thread>

#include <nlohmann/json.hpp>

#include "scenarios/scenario.hpp"
#include "src/proc/spawn.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string state_of(const scenario& s, const std::string& id) {
  return to_string(s.task(id).state);
}

/// `status --json` as an object.
nlohmann::json status_json(scenario& s) {
  auto r = s.tf({"status", "--json"});
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  CAF_REQUIRE(j.is_object());
  return j;
}

/// Field `key` of task `id` of a `status --json` object, as text ("" when
/// it is not a string). A copy: a check never holds a reference into a
/// temporary.
std::string field(const nlohmann::json& status, const std::string& id,
                  const std::string& key) {
  for (auto& t : status["tasks"])
    if (t["id"] == id) {
      auto v = t.value(key, nlohmann::json{});
      return v.is_string() ? v.get<std::string>() : std::string{};
    }
  return {};
}

/// `git show main:FILE`, or "" when main does not have it.
std::string on_main(const scenario& s, const std::string& file) {
  auto r = run_git(s.root, {"show", "main:" + file});
  return r.status == 0 ? r.output : std::string{};
}

} // namespace

CAF_TEST(approve on a task kept for review merges it at the next resume) {
  scenario s;
  s.set_config(R"({"run": {"autoMerge": false}})");
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(state_of(s, "t1"), "review");
  // Without a decision the work stays out of main, resume after resume.
  CAF_CHECK_EQUAL(s.tf({"resume"}).code, 1);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "review");
  auto a = s.tf({"approve", "t1"});
  CAF_CHECK_EQUAL(a.code, 0);
  CAF_CHECK(contains(a.output, "merged when the run resumes"));
  // Recorded, not done: nothing reached main yet.
  CAF_CHECK_EQUAL(state_of(s, "t1"), "merging");
  CAF_CHECK_EQUAL(on_main(s, "a.txt"), "");
  auto r = s.tf({"resume", "--plain"});
  CAF_CHECK_EQUAL(r.code, 0);
  auto t = s.task("t1");
  CAF_CHECK_EQUAL(to_string(t.state), std::string{"done"});
  CAF_REQUIRE(t.merge_commit.has_value());
  CAF_CHECK_EQUAL(on_main(s, "a.txt"), "a\n");
  CAF_CHECK_EQUAL(
    git_ok(s.root, {"rev-parse", "main"}).substr(0, t.merge_commit->size()),
    *t.merge_commit);
  // Approving it again is refused, naming where it is.
  auto again = s.tf({"approve", "t1"});
  CAF_CHECK_EQUAL(again.code, 2);
  CAF_CHECK(contains(again.output, "completed"));
}

CAF_TEST(approve lets a risky task that waits for approval reach main) {
  scenario s;
  s.set_config(R"({"run": {"approvalRisks": ["high"]}})");
  s.tasks("- [ ] Risky\n  - files: risky.txt\n  - risk: high\n"
          "  - run: echo risky > risky.txt\n"
          "- [ ] After\n  - files: after.txt\n  - deps: 1\n"
          "  - run: cat risky.txt > after.txt\n");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(state_of(s, "t1"), "review");
  CAF_CHECK_EQUAL(field(status_json(s), "t1", "reason"),
                  "awaiting approval (risk: high)");
  // Its dependent cannot be approved: it never ran.
  auto early = s.tf({"approve", "t2"});
  CAF_CHECK_EQUAL(early.code, 2);
  CAF_CHECK(contains(early.output, "task t2 is pending"));
  CAF_CHECK_EQUAL(s.tf({"approve", "t1"}).code, 0);
  CAF_CHECK_EQUAL(s.tf({"resume", "--plain"}).code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  CAF_CHECK_EQUAL(state_of(s, "t2"), "done");
  CAF_CHECK_EQUAL(on_main(s, "after.txt"), "risky\n");
}

CAF_TEST(approve on a held task lifts the hold for good) {
  scenario s;
  s.tasks("- [ ] Pick a store\n  - files: store.txt\n"
          "  - run: echo sqlite > store.txt\n"
          "  Which one? [NEEDS DECISION: postgres or sqlite]\n");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(state_of(s, "t1"), "held");
  auto held = status_json(s);
  CAF_CHECK_EQUAL(field(held, "t1", "state"), "held");
  // The reason is the whole line, not just the marker.
  CAF_CHECK_EQUAL(field(held, "t1", "reason"),
                  "Which one? [NEEDS DECISION: postgres or sqlite]");
  // A resume alone keeps it held.
  CAF_CHECK_EQUAL(s.tf({"resume"}).code, 1);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "held");
  auto a = s.tf({"approve", "t1"});
  CAF_CHECK_EQUAL(a.code, 0);
  CAF_CHECK(contains(a.output, "hold is lifted"));
  CAF_CHECK_EQUAL(state_of(s, "t1"), "pending");
  CAF_CHECK(s.task("t1").hold_lifted);
  // The marker is still in the file: the lifted hold stays lifted.
  CAF_CHECK_EQUAL(s.tf({"resume", "--plain"}).code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  CAF_CHECK_EQUAL(on_main(s, "store.txt"), "sqlite\n");
}

CAF_TEST(removing the hold marker from the file and resuming lifts the hold) {
  scenario s;
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "  [NEEDS DECISION: which letter]\n");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(state_of(s, "t1"), "held");
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n");
  CAF_CHECK_EQUAL(s.tf({"resume", "--plain"}).code, 0);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "done");
  CAF_CHECK_EQUAL(on_main(s, "a.txt"), "a\n");
}

CAF_TEST(reject blocks a task in review or held with the reason) {
  scenario s;
  s.set_config(R"({"run": {"autoMerge": false}})");
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "- [ ] B\n  - files: b.txt\n  - run: echo b > b.txt\n"
          "  [NEEDS DECISION: is b wanted]\n");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(state_of(s, "t1"), "review");
  CAF_REQUIRE_EQUAL(state_of(s, "t2"), "held");
  auto wt = s.task("t1").worktree.value_or("/none");
  auto branch = s.task("t1").branch.value_or("none");
  // A reason is required.
  CAF_CHECK_EQUAL(s.tf({"reject", "t1"}).code, 2);
  auto r = s.tf({"reject", "t1", "the", "format", "is", "wrong"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(s.tf({"reject", "t2", "not", "wanted"}).code, 0);
  auto st = status_json(s);
  CAF_CHECK_EQUAL(field(st, "t1", "state"), "blocked");
  CAF_CHECK(contains(field(st, "t1", "reason"), "the format is wrong"));
  CAF_CHECK_EQUAL(field(st, "t2", "state"), "blocked");
  CAF_CHECK(contains(field(st, "t2", "reason"), "not wanted"));
  // Its work is kept, and none of it reached main.
  CAF_CHECK_EQUAL(read_file(std::filesystem::path{wt} / "a.txt"), "a\n");
  CAF_CHECK(!git_ok(s.root, {"branch", "--list", branch}).empty());
  CAF_CHECK_EQUAL(on_main(s, "a.txt"), "");
  // Rejected is not in review any more: approve no longer applies.
  auto late = s.tf({"approve", "t1"});
  CAF_CHECK_EQUAL(late.code, 2);
  CAF_CHECK(contains(late.output, "task t1 is blocked"));
  // A resume does not bring the rejected work back for review: it waits
  // for an answer.
  CAF_CHECK_EQUAL(s.tf({"resume", "--plain"}).code, 1);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "blocked");
  CAF_CHECK_EQUAL(state_of(s, "t2"), "blocked");
  CAF_CHECK_EQUAL(s.task("t1").attempts, 1);
  // The answer runs it again, and it waits for review once more.
  CAF_CHECK_EQUAL(s.tf({"answer", "t1", "use", "tabs"}).code, 0);
  CAF_CHECK_EQUAL(s.tf({"resume", "--plain"}).code, 1);
  CAF_CHECK_EQUAL(state_of(s, "t1"), "review");
  CAF_CHECK_EQUAL(on_main(s, "a.txt"), "");
}

CAF_TEST(add joins new tasks to a paused run and they run at resume) {
  scenario s;
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "  [NEEDS DECISION: now or later]\n");
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(state_of(s, "t1"), "held");
  // Untracked in the repository, as a freshly written file is.
  s.write("MORE.md", "- [ ] X\n  - id: x1\n  - files: x.txt\n"
                     "  - run: echo x > x.txt\n"
                     "- [ ] Y\n  - id: x2\n  - files: y.txt\n  - deps: x1\n"
                     "  - run: cat x.txt > y.txt\n");
  auto a = s.tf({"add", (s.root / "MORE.md").string()});
  CAF_CHECK_EQUAL(a.code, 0);
  CAF_CHECK(contains(a.output, "x1, x2"));
  CAF_CHECK_EQUAL(state_of(s, "x1"), "pending");
  CAF_CHECK_EQUAL(state_of(s, "x2"), "pending");
  CAF_CHECK_EQUAL(s.task_rows().size(), 3u);
  // The same file again, or one whose ids the run has: refused, nothing
  // added.
  auto twice = s.tf({"add", (s.root / "MORE.md").string()});
  CAF_CHECK_EQUAL(twice.code, 2);
  s.write("DUP.md", "- [ ] New\n  - id: x3\n  - files: n.txt\n"
                    "  - run: echo n > n.txt\n"
                    "- [ ] Again\n  - id: x1\n  - files: z.txt\n"
                    "  - run: echo z > z.txt\n");
  auto dup = s.tf({"add", (s.root / "DUP.md").string()});
  CAF_CHECK_EQUAL(dup.code, 2);
  CAF_CHECK(contains(dup.output, "x1 is already part of the run"));
  CAF_CHECK(contains(dup.output, "nothing was added"));
  CAF_CHECK_EQUAL(s.task_rows().size(), 3u);
  // A file with a mistake is refused with its line.
  s.write("BAD.md", "- [ ] Bad\n  - id: b1\n  - deps: nowhere\n");
  auto bad = s.tf({"add", (s.root / "BAD.md").string()});
  CAF_CHECK_EQUAL(bad.code, 2);
  CAF_CHECK(contains(bad.output, "BAD.md:3"));
  CAF_CHECK_EQUAL(s.task_rows().size(), 3u);
  // The added tasks run at resume; the held one still waits.
  auto r = s.tf({"resume", "--plain"});
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK_EQUAL(state_of(s, "x1"), "done");
  CAF_CHECK_EQUAL(state_of(s, "x2"), "done");
  CAF_CHECK_EQUAL(state_of(s, "t1"), "held");
  CAF_CHECK_EQUAL(on_main(s, "y.txt"), "x\n");
  auto st = status_json(s);
  CAF_CHECK_EQUAL(st["tasks"].size(), 3u);
}

CAF_TEST(steering refuses unknown runs and tasks and states that do not apply) {
  scenario s;
  s.tasks("- [ ] A\n  - files: a.txt\n  - run: echo a > a.txt\n"
          "- [ ] B\n  - files: b.txt\n  - run: echo b > b.txt\n"
          "  [NEEDS DECISION: b]\n");
  // No run yet.
  auto none = s.tf({"approve", "t1"});
  CAF_CHECK_EQUAL(none.code, 2);
  CAF_CHECK(contains(none.output, "no run"));
  CAF_CHECK_EQUAL(s.tf({"run", "TASKS.md"}).code, 1);
  CAF_REQUIRE_EQUAL(state_of(s, "t1"), "done");
  auto unknown = s.tf({"approve", "t9"});
  CAF_CHECK_EQUAL(unknown.code, 2);
  CAF_CHECK(contains(unknown.output, "has no task t9"));
  auto other = s.tf({"approve", "t2", "--run", "19990101-000000-beef"});
  CAF_CHECK_EQUAL(other.code, 2);
  CAF_CHECK(contains(other.output, "no run 19990101-000000-beef"));
  struct refusal {
    std::vector<std::string> args;
    std::string says;
  };
  for (auto& c : std::vector<refusal>{
         {{"approve", "t1"}, "task t1 is done"},
         {{"reject", "t1", "no"}, "task t1 is done"},
         {{"answer", "t2", "yes"}, "task t2 is held"},
         {{"answer", "t1", "yes"}, "task t1 is done"},
         {{"send", "t1", "hello"}, "task t1 is done"},
       }) {
    auto r = s.tf(c.args);
    CAF_CHECK_EQUAL(r.code, 2);
    CAF_CHECK(contains(r.output, c.says));
  }
  // Usage mistakes.
  CAF_CHECK_EQUAL(s.tf({"answer", "t2"}).code, 2);
  CAF_CHECK_EQUAL(s.tf({"approve"}).code, 2);
  CAF_CHECK_EQUAL(s.tf({"broadcast"}).code, 2);
  CAF_CHECK_EQUAL(s.tf({"add", "/no/such/file.md"}).code, 2);
  // Nothing of it changed the run.
  CAF_CHECK_EQUAL(state_of(s, "t2"), "held");
  CAF_CHECK(s.ledger().latest_run().has_value());
  // A finished run cannot be steered.
  CAF_CHECK_EQUAL(s.tf({"abort"}).code, 0);
  auto over = s.tf({"approve", "t2"});
  CAF_CHECK_EQUAL(over.code, 2);
  CAF_CHECK(contains(over.output, "aborted"));
}

CAF_TEST(discard waits for no driver: it is refused while one runs) {
  scenario s;
  auto marker = "tfdiscard" + std::to_string(::getpid());
  auto flag = (s.dir.path() / "go.flag").string();
  s.tasks("- [ ] Slow\n  - files: a.txt\n  - run: while ! test -f " + flag
          + "; do sleep 0.1; done; echo a > a.txt # " + marker + "\n");
  proc::spawn_options o;
  s.set_config(s.config_text);
  o.argv = {TASKFORCE_BINARY,  "--repo", s.root.string(), "--config",
            s.config.string(), "run",    "TASKS.md",      "--plain"};
  o.cwd = s.root.string();
  o.out = proc::stdio::file((s.dir.path() / "run.log").string());
  o.err = proc::stdio::to_stdout();
  o.in = proc::stdio::null();
  auto child = proc::spawn(o);
  bool running = false;
  for (int i = 0; i < 200 && !running; ++i) {
    std::this_thread::sleep_for(100ms);
    try {
      running = std::filesystem::exists(s.root / ".taskforce/ledger.sqlite")
                && s.task("t1").state == task_state::running;
    } catch (const std::exception&) {
    }
  }
  CAF_REQUIRE(running);
  auto d = s.tf({"discard", "t1"});
  CAF_CHECK_EQUAL(d.code, 2);
  CAF_CHECK(contains(d.output, "paused run"));
  CAF_CHECK_EQUAL(state_of(s, "t1"), "running");
  { std::ofstream{flag} << "go\n"; }
  auto st = proc::wait_for(child.pid);
  CAF_CHECK_EQUAL(st.code, 0);
  CAF_CHECK_EQUAL(on_main(s, "a.txt"), "a\n");
  CAF_CHECK(scenario::processes_mentioning(marker).empty());
}
