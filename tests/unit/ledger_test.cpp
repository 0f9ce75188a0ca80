#define CAF_SUITE unit.ledger
#include <caf/test/unit_test.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/cli/run_view.hpp"
#include "src/store/ledger.hpp"
#include "test.hpp"
#include "unit/store_helpers.hpp"

using namespace taskforce;
using namespace taskforce::store;
using cli::to_json_line;
using cli::to_status_json;
using taskforce::test::raw_db;
using json = nlohmann::json;

namespace {

// A copy, so a check never refers into a temporary that is gone.
template<class T>
T copy(const T& x) {
  return x;
}

new_run sample_run(const std::string& id, const std::string& file = "TASKS.md",
                   int tasks = 3) {
  new_run r;
  r.id = id;
  r.file = file;
  r.file_hash = content_hash("- [ ] one\n");
  r.base_branch = "main";
  r.max_concurrency = 2;
  r.config_json = R"({"run":{"maxConcurrency":2}})";
  for (int i = 1; i <= tasks; ++i)
    r.tasks.push_back(new_task{"t" + std::to_string(i), i,
                               "Task " + std::to_string(i), task_state::pending,
                               std::nullopt});
  return r;
}

// Whether `f` throws a ledger_error.
template<class F>
bool fails(F f) {
  try {
    f();
  } catch (const ledger_error&) {
    return true;
  }
  return false;
}

task_change to(task_state s) {
  task_change c;
  c.to = s;
  return c;
}

const task_event all_events[] = {
  task_event::deps_done,   task_event::hold,
  task_event::release,     task_event::start,
  task_event::work_done,   task_event::repair,
  task_event::gate_passed, task_event::merge,
  task_event::merged,      task_event::keep_for_review,
  task_event::conflict,    task_event::fail,
  task_event::block,       task_event::interrupt,
  task_event::retry,       task_event::skip,
  task_event::reset,
};

// One random legal step of a random task (or a refused illegal one, which
// must change nothing). Returns whether a transition was recorded.
bool random_step(ledger& db, const std::string& run, int tasks,
                 std::mt19937& rng, int64_t now, bool rarely_done = false) {
  auto id = "t" + std::to_string(rng() % tasks + 1);
  auto t = db.find_task(run, id);
  // Mostly legal moves, sometimes any event (an illegal one must be refused).
  auto ev = all_events[rng() % std::size(all_events)];
  if (rng() % 10 != 0) {
    std::vector<task_event> legal;
    for (auto e : all_events)
      if (transition(t->state, e))
        legal.push_back(e);
    if (!legal.empty())
      ev = legal[rng() % legal.size()];
  }
  auto next = transition(t->state, ev);
  if (!next) {
    // An illegal move: the ledger must refuse it and change nothing.
    task_change bad;
    bad.to = static_cast<task_state>(rng() % 13);
    if (!allowed(t->state, bad.to) && !fails([&] {
          db.transition(run, id, bad, now);
        }))
      throw std::logic_error("the ledger accepted "
                             + std::string{to_string(t->state)} + " -> "
                             + to_string(bad.to));
    return false;
  }
  // Done is final: a long walk that wants to keep moving seldom goes there.
  if (rarely_done && *next == task_state::done && rng() % 10 != 0)
    return false;
  task_change c;
  c.to = *next;
  if (c.to == task_state::verifying)
    c.usage = usage{int64_t(rng() % 100), 1, 0.01};
  db.transition(run, id, c, now);
  return true;
}

// Everything that must hold between tasks, attempts and events of a run,
// whatever happened before (including a SIGKILL). Returns what is broken.
std::vector<std::string> broken_invariants(ledger& db, const std::string& run) {
  std::vector<std::string> broken;
  auto st = db.status(run);
  if (!st)
    return {"no run " + run};
  for (auto& t : st->tasks) {
    auto h = db.history(run, t.id);
    std::optional<std::string> last_to;
    for (auto& e : h->events)
      if (e.kind == "task.state")
        last_to = json::parse(e.data_json)["to"].get<std::string>();
    if (last_to && *last_to != to_string(t.state))
      broken.push_back(t.id + " is " + to_string(t.state)
                       + " but its last event says " + *last_to);
    int counted = 0;
    int open = 0;
    for (auto& a : h->attempts) {
      if (!a.interrupted)
        ++counted;
      if (a.state == attempt_state::running) {
        ++open;
        if (a.number != static_cast<int>(h->attempts.size()))
          broken.push_back(t.id + " has an open attempt that is not its last");
      }
      if ((a.state == attempt_state::running) == a.ended_ms.has_value())
        broken.push_back(t.id + " attempt " + std::to_string(a.number)
                         + " has an end time that does not fit its state");
      if (a.interrupted != (a.state == attempt_state::interrupted))
        broken.push_back(t.id + " attempt " + std::to_string(a.number)
                         + " has a wrong interrupted flag");
    }
    if (counted != t.attempts)
      broken.push_back(t.id + " counts " + std::to_string(t.attempts)
                       + " attempts, its rows say " + std::to_string(counted));
    if (open != (in_attempt(t.state) ? 1 : 0))
      broken.push_back(t.id + " is " + to_string(t.state) + " with "
                       + std::to_string(open) + " open attempts");
  }
  return broken;
}

// When the test binary is started with TASKFORCE_TEST_LEDGER_WRITER set, it
// becomes a ledger writer before main runs: it records random transitions
// until it is killed. The tests kill it with SIGKILL at a random moment.
const int ledger_writer_mode = [] {
  const char* path = std::getenv("TASKFORCE_TEST_LEDGER_WRITER");
  if (path == nullptr)
    return 0;
  try {
    auto db = ledger::open(path);
    db.create_run(sample_run("crash", "TASKS.md", 8), 1);
    std::mt19937 rng{static_cast<unsigned>(::getpid())};
    for (int64_t now = 2;; ++now)
      random_step(db, "crash", 8, rng, now, true);
  } catch (...) {
    ::_exit(3);
  }
}();

struct fixture {
  test::temp_dir dir;
  std::filesystem::path file = dir.path() / ".taskforce" / "ledger.sqlite";
  ledger db = ledger::open(file);

  // Walks t1 to running (attempt 1).
  void start(const std::string& run, const std::string& task, int64_t at) {
    db.transition(run, task, to(task_state::ready), at);
    db.transition(run, task, to(task_state::running), at);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(ledger_tests, fixture)

CAF_TEST(opening twice keeps the schema and the data) {
  db.create_run(sample_run("r1"), 1000);
  {
    auto again = ledger::open(file);
    CAF_CHECK(again.find_run("r1").has_value());
  }
  db = ledger::open(file);
  CAF_CHECK_EQUAL(db.tasks("r1").size(), 3u);
  raw_db raw{file};
  CAF_CHECK_EQUAL(raw.scalar("PRAGMA user_version"), ledger_schema_version);
  CAF_CHECK_EQUAL(raw.text("PRAGMA journal_mode"), "wal");
}

CAF_TEST(a ledger from a newer taskforce is refused) {
  {
    raw_db raw{file};
    raw.exec("PRAGMA user_version = 99");
  }
  try {
    ledger::open(file);
    CAF_FAIL("opened a newer ledger");
  } catch (const ledger_error& e) {
    CAF_CHECK_EQUAL(e.code(), ledger_errc::schema);
    CAF_CHECK(std::string{e.what()}.find("99") != std::string::npos);
  }
}

CAF_TEST(an empty or foreign ledger file is refused and left as it was) {
  // A file listing of a folder: names, sizes and contents.
  auto snapshot = [](const std::filesystem::path& folder) {
    std::map<std::string, std::string> files;
    for (auto& e : std::filesystem::directory_iterator(folder))
      files[e.path().filename().string()] = test::read_file(e.path());
    return files;
  };
  auto place = dir.path() / "bad";
  std::filesystem::create_directories(place);
  auto bad = place / "ledger.sqlite";
  // A foreign SQLite database, with and without a schema version.
  auto foreign = dir.path() / "foreign.sqlite";
  std::ofstream{foreign}.flush(); // raw_db does not create files
  {
    raw_db raw{foreign};
    raw.exec("CREATE TABLE notes (x TEXT); INSERT INTO notes VALUES ('mine')");
  }
  auto foreign_text = test::read_file(foreign);
  {
    raw_db raw{foreign};
    raw.exec("PRAGMA user_version = 1");
  }
  auto foreign_v1 = test::read_file(foreign);
  struct sample {
    const char* what;
    std::string bytes;
    const char* says;
  };
  std::vector<sample> samples{
    {"empty", "", "is empty"},
    {"text", "hello, not a database\n", "not a taskforce ledger"},
    {"foreign", foreign_text, "not a taskforce ledger"},
    {"foreign v1", foreign_v1, "not a taskforce ledger"},
  };
  for (auto& x : samples) {
    CAF_MESSAGE(x.what);
    {
      std::ofstream out(bad, std::ios::binary | std::ios::trunc);
      out << x.bytes;
    }
    auto before = snapshot(place);
    for (bool read_only : {false, true}) {
      try {
        ledger::open(bad, ledger_options{read_only});
        CAF_FAIL("opened a " << x.what << " file");
      } catch (const ledger_error& e) {
        std::string what = e.what();
        CAF_CHECK_EQUAL(e.code(), ledger_errc::schema);
        CAF_CHECK_NOT_EQUAL(what.find(bad.string()), std::string::npos);
        CAF_CHECK_NOT_EQUAL(what.find(x.says), std::string::npos);
      }
      CAF_CHECK_EQUAL(snapshot(place), before);
    }
  }
}

CAF_TEST(a new ledger appears complete or not at all) {
  auto fresh = dir.path() / "fresh" / "ledger.sqlite";
  {
    auto made = ledger::open(fresh);
    made.create_run(sample_run("r1"), 1000);
  }
  // No half-made file is left behind under another name either.
  std::vector<std::string> names;
  for (auto& e : std::filesystem::directory_iterator(fresh.parent_path()))
    names.push_back(e.path().filename().string());
  CAF_CHECK_EQUAL(names, std::vector<std::string>{"ledger.sqlite"});
  auto again = ledger::open(fresh, ledger_options{true});
  CAF_CHECK(again.find_run("r1").has_value());
}

CAF_TEST(a read only open of a missing ledger says not found) {
  try {
    ledger::open(dir.path() / "nothing.sqlite", ledger_options{true});
    CAF_FAIL("opened a missing ledger");
  } catch (const ledger_error& e) {
    CAF_CHECK_EQUAL(e.code(), ledger_errc::not_found);
  }
  CAF_CHECK(!std::filesystem::exists(dir.path() / "nothing.sqlite"));
}

CAF_TEST(a read only connection reads a ledger nobody has open) {
  db.create_run(sample_run("r1"), 1000);
  db = ledger::open(dir.path() / "other.sqlite");
  auto reader = ledger::open(file, ledger_options{true});
  auto st = reader.status("r1");
  CAF_REQUIRE(st.has_value());
  CAF_CHECK_EQUAL(st->tasks.size(), 3u);
  CAF_CHECK(fails([&] {
    reader.transition("r1", "t1", to(task_state::ready), 1100);
  }));
}

CAF_TEST(status json has exactly the command line shape) {
  db.create_run(sample_run("r1"), 1000);
  start("r1", "t1", 1100);
  db.transition("r1", "t1", to(task_state::verifying), 1200);
  db.transition("r1", "t1", to(task_state::merging), 1300);
  task_change done = to(task_state::done);
  done.fields.merge_commit = "abc123";
  done.fields.branch = "taskforce/r1/t1";
  db.transition("r1", "t1", done, 1400);
  task_change skipped = to(task_state::skipped);
  skipped.reason = "t1 failed";
  db.transition("r1", "t3", skipped, 1500);
  db.set_run_state("r1", run_state::paused, "t2 failed", 1600);
  auto st = db.status("r1");
  CAF_REQUIRE(st.has_value());
  auto none = std::string{
    R"("usage":{"input_tokens":0,"output_tokens":0,"cost_usd":0.0})"};
  CAF_CHECK_EQUAL(
    to_status_json(*st),
    R"({"run":{"id":"r1","file":"TASKS.md","state":"paused",)"
    R"("reason":"t2 failed",)"
      + none
      + R"(},"tasks":[)"
        R"({"id":"t1","state":"done","attempts":1,"branch":"taskforce/r1/t1",)"
        R"("merge_commit":"abc123","merge_on_base":null,"reason":null,)"
      + none
      + R"(},)"
        R"({"id":"t2","state":"pending","attempts":0,"branch":null,)"
        R"("merge_commit":null,"merge_on_base":null,"reason":null,)"
      + none
      + R"(},)"
        R"({"id":"t3","state":"skipped","attempts":0,"branch":null,)"
        R"("merge_commit":null,"merge_on_base":null,"reason":"t1 failed",)"
      + none + R"(}]})");
  auto j = json::parse(to_status_json(*st));
  CAF_CHECK(j["run"]["reason"].is_string());
  CAF_CHECK(j["tasks"][1]["branch"].is_null());
}

CAF_TEST(a transition and its event are visible together to another reader) {
  db.create_run(sample_run("r1"), 1000);
  auto r = db.transition("r1", "t1", to(task_state::ready), 1100);
  CAF_CHECK_EQUAL(r.from, task_state::pending);
  CAF_CHECK_EQUAL(r.event.kind, "task.state");
  auto data = json::parse(r.event.data_json);
  CAF_CHECK_EQUAL(data["from"], "pending");
  CAF_CHECK_EQUAL(data["to"], "ready");
  CAF_CHECK_EQUAL(data["event"], "deps_done");
  auto reader = ledger::open(file, ledger_options{true});
  CAF_CHECK_EQUAL(copy(reader.find_task("r1", "t1")->state), task_state::ready);
  auto events = reader.events("r1");
  CAF_REQUIRE_EQUAL(events.size(), 2u); // run.created, task.state
  CAF_CHECK_EQUAL(events[1].seq, r.event.seq);
  CAF_CHECK_EQUAL(events[1].task_id, std::optional<std::string>{"t1"});
}

CAF_TEST(a transition whose event cannot be written leaves the task as it was) {
  db.create_run(sample_run("r1"), 1000);
  {
    raw_db raw{file};
    CAF_REQUIRE_EQUAL(raw.exec("CREATE TRIGGER refuse BEFORE INSERT ON events "
                               "WHEN NEW.kind = 'task.state' BEGIN "
                               "SELECT RAISE(ABORT, 'disk full'); END"),
                      SQLITE_OK);
  }
  try {
    db.transition("r1", "t1", to(task_state::ready), 1100);
    CAF_FAIL("the transition was acknowledged");
  } catch (const ledger_error& e) {
    CAF_CHECK_EQUAL(e.code(), ledger_errc::sqlite);
  }
  CAF_CHECK_EQUAL(copy(db.find_task("r1", "t1")->state), task_state::pending);
  CAF_CHECK_EQUAL(db.events("r1").size(), 1u);
  {
    raw_db raw{file};
    raw.exec("DROP TRIGGER refuse");
  }
  db.transition("r1", "t1", to(task_state::ready), 1200);
  CAF_CHECK_EQUAL(copy(db.find_task("r1", "t1")->state), task_state::ready);
}

CAF_TEST(the lifecycle refuses illegal moves and writes nothing) {
  db.create_run(sample_run("r1"), 1000);
  auto before = db.events("r1").size();
  try {
    db.transition("r1", "t1", to(task_state::done), 1100);
    CAF_FAIL("pending went to done");
  } catch (const ledger_error& e) {
    CAF_CHECK_EQUAL(e.code(), ledger_errc::invalid_transition);
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "task t1 of run r1 cannot go from pending to done");
  }
  task_change cas = to(task_state::ready);
  cas.expect = task_state::running;
  CAF_CHECK(fails([&] {
    db.transition("r1", "t1", cas, 1100);
  }));
  CAF_CHECK(fails([&] {
    db.transition("r1", "nope", to(task_state::ready), 1100);
  }));
  task_change bad = to(task_state::ready);
  bad.data_json = "[1]";
  CAF_CHECK(fails([&] {
    db.transition("r1", "t1", bad, 1100);
  }));
  CAF_CHECK_EQUAL(db.events("r1").size(), before);
  CAF_CHECK_EQUAL(copy(db.find_task("r1", "t1")->state), task_state::pending);
}

CAF_TEST(attempts follow the task and repairs do not count) {
  db.create_run(sample_run("r1"), 1000);
  db.transition("r1", "t1", to(task_state::ready), 1000);
  auto r = db.transition("r1", "t1", to(task_state::running), 1100);
  CAF_CHECK(r.attempt_opened);
  CAF_CHECK_EQUAL(r.attempt, 1);
  task_change work = to(task_state::verifying);
  work.usage = usage{100, 20, 0.5};
  db.transition("r1", "t1", work, 1200);
  task_change repair = to(task_state::running);
  repair.fields.gate_tail = "FAIL: test_cache";
  r = db.transition("r1", "t1", repair, 1300);
  CAF_CHECK(!r.attempt_opened);
  CAF_CHECK_EQUAL(r.attempt, 1);
  db.add_usage("r1", "t1", usage{1, 2, 0.25});
  db.transition("r1", "t1", to(task_state::verifying), 1400);
  task_change failed = to(task_state::ready);
  failed.reason = "gate failed";
  failed.exit_code = 1;
  r = db.transition("r1", "t1", failed, 1500);
  CAF_CHECK(r.attempt_closed);
  r = db.transition("r1", "t1", to(task_state::running), 1600);
  CAF_CHECK_EQUAL(r.attempt, 2);
  auto t = db.find_task("r1", "t1");
  CAF_CHECK_EQUAL(t->attempts, 2);
  CAF_CHECK_EQUAL(t->gate_tail, std::optional<std::string>{"FAIL: test_cache"});
  CAF_CHECK_EQUAL(t->started_ms, std::optional<int64_t>{1100});
  CAF_CHECK_EQUAL(t->usage.input_tokens, 101);
  CAF_CHECK_EQUAL(t->usage.cost_usd, 0.75);
  auto as = db.attempts("r1", "t1");
  CAF_REQUIRE_EQUAL(as.size(), 2u);
  CAF_CHECK_EQUAL(as[0].state, attempt_state::failed);
  CAF_CHECK_EQUAL(as[0].repairs, 1);
  CAF_CHECK_EQUAL(as[0].exit_code, std::optional<int>{1});
  CAF_CHECK_EQUAL(as[0].ended_ms, std::optional<int64_t>{1500});
  CAF_CHECK_EQUAL(as[0].worker_log, "logs/r1/t1/attempt-1/worker.log");
  CAF_CHECK_EQUAL(as[0].verify_log, "logs/r1/t1/attempt-1/verify.log");
  CAF_CHECK_EQUAL(as[1].state, attempt_state::running);
  CAF_CHECK(!as[1].ended_ms.has_value());
}

CAF_TEST(a batch commits its changes together and refuses the bad ones alone) {
  db.create_run(sample_run("r1"), 1000);
  auto req = [](const std::string& task, task_state s) {
    return task_change_request{"r1", task, to(s)};
  };
  auto out = db.transition_batch(
    {req("t1", task_state::ready), req("t1", task_state::running),
     req("t2", task_state::done), req("t3", task_state::ready)},
    1100);
  CAF_REQUIRE_EQUAL(out.size(), 4u);
  CAF_CHECK(std::holds_alternative<transition_result>(out[0]));
  CAF_REQUIRE(std::holds_alternative<transition_result>(out[1]));
  CAF_CHECK(std::get<transition_result>(out[1]).attempt_opened);
  CAF_REQUIRE(std::holds_alternative<ledger_error>(out[2]));
  CAF_CHECK_EQUAL(std::get<ledger_error>(out[2]).code(),
                  ledger_errc::invalid_transition);
  CAF_CHECK(std::holds_alternative<transition_result>(out[3]));
  auto st = db.status("r1");
  CAF_CHECK_EQUAL(st->tasks[0].state, task_state::running);
  CAF_CHECK_EQUAL(st->tasks[0].attempts, 1);
  CAF_CHECK_EQUAL(st->tasks[1].state, task_state::pending);
  CAF_CHECK_EQUAL(st->tasks[2].state, task_state::ready);
  CAF_CHECK_EQUAL(db.events("r1").size(), 4u);
  CAF_CHECK_EQUAL(broken_invariants(db, "r1"), std::vector<std::string>{});
  // A failure of the transaction itself writes nothing of the batch.
  {
    raw_db raw{file};
    raw.exec("CREATE TRIGGER refuse BEFORE INSERT ON events "
             "WHEN NEW.task_id = 't3' BEGIN "
             "SELECT RAISE(ABORT, 'disk full'); END");
  }
  CAF_CHECK(fails([&] {
    db.transition_batch(
      {req("t2", task_state::ready), req("t3", task_state::running)}, 1200);
  }));
  st = db.status("r1");
  CAF_CHECK_EQUAL(st->tasks[1].state, task_state::pending);
  CAF_CHECK_EQUAL(st->tasks[2].state, task_state::ready);
  CAF_CHECK_EQUAL(db.events("r1").size(), 4u);
}

CAF_TEST(the latest unfinished run is found per file) {
  db.create_run(sample_run("r1", "A.md"), 1000);
  db.set_run_state("r1", run_state::completed, std::nullopt, 1100);
  db.create_run(sample_run("r2", "A.md"), 2000);
  db.set_run_state("r2", run_state::paused, "t1 failed", 2100);
  db.create_run(sample_run("r3", "B.md"), 3000);
  CAF_CHECK_EQUAL(copy(db.latest_run()->id), "r3");
  CAF_CHECK_EQUAL(copy(db.latest_unfinished_run()->id), "r3");
  CAF_CHECK_EQUAL(copy(db.latest_unfinished_run("A.md")->id), "r2");
  CAF_CHECK(!db.latest_unfinished_run("C.md").has_value());
  db.set_run_state("r2", run_state::aborted, "by the user", 3100);
  CAF_CHECK(!db.latest_unfinished_run("A.md").has_value());
  CAF_CHECK(fails([&] {
    db.set_run_state("r2", run_state::running, std::nullopt, 3200);
  }));
  CAF_CHECK(fails([&] {
    db.create_run(sample_run("r3"), 4000);
  }));
}

CAF_TEST(mark interrupted keeps work and does not count the attempt) {
  db.create_run(sample_run("r1"), 1000);
  start("r1", "t1", 1100);
  start("r1", "t2", 1100);
  db.transition("r1", "t2", to(task_state::verifying), 1200);
  start("r1", "t3", 1100);
  db.transition("r1", "t3", to(task_state::verifying), 1200);
  db.transition("r1", "t3", to(task_state::merging), 1300);
  auto rec = db.mark_interrupted("r1", "the driving process stopped", 5000);
  CAF_CHECK_EQUAL(rec.interrupted, (std::vector<std::string>{"t1", "t2"}));
  CAF_CHECK_EQUAL(rec.merging, (std::vector<std::string>{"t3"}));
  CAF_CHECK(rec.paused);
  auto st = db.status("r1");
  CAF_CHECK_EQUAL(st->run.state, run_state::paused);
  CAF_CHECK_EQUAL(st->run.reason,
                  std::optional<std::string>{"the driving process stopped"});
  CAF_CHECK_EQUAL(st->tasks[0].state, task_state::interrupted);
  CAF_CHECK_EQUAL(st->tasks[0].attempts, 0);
  CAF_CHECK_EQUAL(st->tasks[1].state, task_state::interrupted);
  CAF_CHECK_EQUAL(st->tasks[2].state, task_state::merging);
  CAF_CHECK_EQUAL(st->tasks[2].attempts, 1);
  auto a = db.attempts("r1", "t1");
  CAF_REQUIRE_EQUAL(a.size(), 1u);
  CAF_CHECK(a[0].interrupted);
  CAF_CHECK_EQUAL(a[0].state, attempt_state::interrupted);
  // Resume: the run goes on, the task runs again as attempt 2, counted once.
  db.set_run_state("r1", run_state::running, std::nullopt, 6000);
  auto r = db.transition("r1", "t1", to(task_state::running), 6100);
  CAF_CHECK_EQUAL(r.attempt, 2);
  CAF_CHECK_EQUAL(copy(db.find_task("r1", "t1")->attempts), 1);
  // Nothing left to interrupt in a paused run twice.
  db.set_run_state("r1", run_state::paused, "ctrl-c", 6200);
  rec = db.mark_interrupted("r1", "ctrl-c", 6300);
  CAF_CHECK_EQUAL(rec.interrupted, (std::vector<std::string>{"t1"}));
  CAF_CHECK(!rec.paused);
}

CAF_TEST(a reader in another connection is not blocked by a writer) {
  db.create_run(sample_run("r1"), 1000);
  raw_db writer{file};
  CAF_REQUIRE_EQUAL(writer.exec("BEGIN IMMEDIATE"), SQLITE_OK);
  CAF_REQUIRE_EQUAL(writer.exec("UPDATE runs SET reason = 'uncommitted'"),
                    SQLITE_OK);
  auto reader = ledger::open(file, ledger_options{true, true, 100});
  auto st = reader.status("r1");
  CAF_REQUIRE(st.has_value());
  CAF_CHECK(!st->run.reason.has_value());
  // A second writer waits out its busy timeout and then fails cleanly.
  auto other = ledger::open(file, ledger_options{false, true, 100});
  CAF_CHECK(fails([&] {
    other.transition("r1", "t1", to(task_state::ready), 1100);
  }));
  CAF_REQUIRE_EQUAL(writer.exec("COMMIT"), SQLITE_OK);
  st = reader.status("r1");
  CAF_CHECK_EQUAL(st->run.reason, std::optional<std::string>{"uncommitted"});
  other.transition("r1", "t1", to(task_state::ready), 1200);
  CAF_CHECK_EQUAL(copy(reader.find_task("r1", "t1")->state), task_state::ready);
}

CAF_TEST(history lists attempts events conflicts and the merge commit) {
  db.create_run(sample_run("r1"), 1000);
  start("r1", "t1", 1100);
  db.transition("r1", "t1", to(task_state::verifying), 1200);
  db.transition("r1", "t1", to(task_state::merging), 1300);
  task_change conflict = to(task_state::conflict);
  conflict.reason = "merge conflict";
  conflict.fields.conflict_paths = std::vector<std::string>{"a.txt", "b/c.txt"};
  db.transition("r1", "t1", conflict, 1400);
  db.transition("r1", "t1", to(task_state::merging), 1500);
  db.record_merge_commit("r1", "t1", "feed", 1600);
  db.transition("r1", "t1", to(task_state::done), 1700);
  auto h = db.history("r1", "t1");
  CAF_REQUIRE(h.has_value());
  CAF_CHECK_EQUAL(h->task.conflict_paths,
                  (std::vector<std::string>{"a.txt", "b/c.txt"}));
  CAF_CHECK_EQUAL(h->task.merge_commit, std::optional<std::string>{"feed"});
  CAF_CHECK_EQUAL(h->task.finished_ms, std::optional<int64_t>{1700});
  CAF_CHECK_EQUAL(h->attempts.size(), 1u);
  std::vector<std::string> kinds;
  for (auto& e : h->events)
    kinds.push_back(e.kind);
  CAF_CHECK_EQUAL(
    kinds, (std::vector<std::string>{"task.state", "task.state", "task.state",
                                     "task.state", "task.state", "task.state",
                                     "task.merge_commit", "task.state"}));
  auto line = json::parse(to_json_line(h->events.back()));
  CAF_CHECK_EQUAL(line["task"], "t1");
  CAF_CHECK_EQUAL(line["data"]["to"], "done");
  CAF_CHECK_EQUAL(line["at_ms"], 1700);
  auto later = db.events("r1", h->events[5].seq);
  CAF_CHECK_EQUAL(later.size(), 2u);
  CAF_CHECK_EQUAL(db.events("r1", 0, 1).size(), 1u);
}

CAF_TEST(discard clears the branch and worktree of a task) {
  db.create_run(sample_run("r1"), 1000);
  db.transition("r1", "t1", to(task_state::ready), 1100);
  task_change run = to(task_state::running);
  run.fields.branch = "taskforce/r1/t1";
  run.fields.worktree = "/repo/.taskforce/worktrees/r1/t1";
  db.transition("r1", "t1", run, 1200);
  db.transition("r1", "t1", to(task_state::interrupted), 1300);
  task_change discard = to(task_state::pending);
  discard.reason = "discarded";
  discard.fields.clear_branch_and_worktree = true;
  auto r = db.transition("r1", "t1", discard, 1400);
  auto t = db.find_task("r1", "t1");
  CAF_CHECK(!t->branch.has_value());
  CAF_CHECK(!t->worktree.has_value());
  CAF_CHECK_EQUAL(t->reason, std::optional<std::string>{"discarded"});
  CAF_CHECK(json::parse(r.event.data_json).contains("cleared"));
  // update_task can clear them too, without a state change.
  task_fields f;
  f.branch = "taskforce/r1/t1";
  db.update_task("r1", "t1", f, 1500);
  CAF_CHECK(db.find_task("r1", "t1")->branch.has_value());
  task_fields clear;
  clear.clear_branch_and_worktree = true;
  db.update_task("r1", "t1", clear, 1600);
  CAF_CHECK(!db.find_task("r1", "t1")->branch.has_value());
}

CAF_TEST(the event log cannot be rewritten) {
  db.create_run(sample_run("r1"), 1000);
  db.append_event("r1", std::nullopt, "note", R"({"text":"hello"})", 1100);
  raw_db raw{file};
  CAF_CHECK_NOT_EQUAL(raw.exec("UPDATE events SET kind = 'x'"), SQLITE_OK);
  CAF_CHECK_NOT_EQUAL(raw.exec("DELETE FROM events"), SQLITE_OK);
  CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM events"), 2);
}

CAF_TEST(list counts the tasks of each run by state) {
  db.create_run(sample_run("r1"), 1000);
  db.create_run(sample_run("r2", "B.md", 2), 2000);
  start("r2", "t1", 2100);
  db.transition("r2", "t1",
                task_change{task_state::verifying, std::nullopt, std::nullopt,
                            task_fields{}, usage{10, 5, 0.125}, std::nullopt,
                            "{}"},
                2200);
  auto runs = db.list_runs();
  CAF_REQUIRE_EQUAL(runs.size(), 2u);
  CAF_CHECK_EQUAL(runs[0].run.id, "r2");
  CAF_CHECK_EQUAL(runs[0].total, 2);
  CAF_CHECK_EQUAL(runs[0].counts[task_state::verifying], 1);
  CAF_CHECK_EQUAL(runs[0].counts[task_state::pending], 1);
  CAF_CHECK_EQUAL(runs[0].usage.output_tokens, 5);
  CAF_CHECK_EQUAL(runs[1].counts[task_state::pending], 3);
}

CAF_TEST(helpers name runs hash files and place logs) {
  // 2026-11-29 17:07:22 UTC
  auto id = new_run_id(1795972042000);
  CAF_CHECK_EQUAL(id.substr(0, 16), "20261129-170722-");
  CAF_CHECK_EQUAL(id.size(), 20u);
  CAF_CHECK_EQUAL(content_hash(""), "fnv1a64:cbf29ce484222325");
  CAF_CHECK_NOT_EQUAL(content_hash("a"), content_hash("b"));
  CAF_CHECK_EQUAL(attempt_log_dir("r", "t2", 3), "logs/r/t2/attempt-3");
}

CAF_TEST(random walks keep tasks attempts and events in step) {
  // Durability is not the point here: NORMAL keeps the test fast.
  db = ledger::open(dir.path() / "walk.sqlite", ledger_options{false, false});
  std::mt19937 rng{42};
  int recorded = 0;
  int64_t now = 1000;
  // Done is final, so each run ends up done; several runs keep it moving.
  for (int r = 1; r <= 4; ++r) {
    auto run = "r" + std::to_string(r);
    db.create_run(sample_run(run, "TASKS.md", 6), ++now);
    for (int i = 0; i < 800; ++i) {
      if (random_step(db, run, 6, rng, ++now))
        ++recorded;
      if (i % 200 == 199) {
        db.mark_interrupted(run, "interrupted", ++now);
        db.set_run_state(run, run_state::running, std::nullopt, ++now);
      }
    }
    CAF_CHECK_EQUAL(broken_invariants(db, run), std::vector<std::string>{});
  }
  CAF_CHECK_GREATER(recorded, 1000);
}

CAF_TEST(a writer killed at a random moment leaves a consistent ledger) {
  for (int round = 0; round < 3; ++round) {
    auto path = dir.path() / ("crash-" + std::to_string(round) + ".sqlite");
    auto child
      = test::spawn_self("TASKFORCE_TEST_LEDGER_WRITER=" + path.string());
    CAF_REQUIRE_NOT_EQUAL(child, -1);
    // Let it write a while: until at least 50 + 50 * round events exist.
    size_t want = 50 + 50 * static_cast<size_t>(round);
    bool enough = false;
    bool exited = false;
    int status = 0;
    for (int i = 0; i < 6000 && !enough && !exited; ++i) {
      exited = ::waitpid(child, &status, WNOHANG) == child;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      try {
        auto reader = ledger::open(path, ledger_options{true});
        enough = reader.events("crash", 0, want).size() >= want;
      } catch (const ledger_error&) {
        // Not created yet.
      }
    }
    if (!exited) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
    }
    CAF_REQUIRE(enough);
    CAF_CHECK(WIFSIGNALED(status));
    {
      // `taskforce status` after the crash, before anyone recovers: a
      // read-only connection sees the last committed transition.
      auto reader = ledger::open(path, ledger_options{true});
      CAF_CHECK_EQUAL(broken_invariants(reader, "crash"),
                      std::vector<std::string>{});
    }
    auto after = ledger::open(path);
    CAF_CHECK_EQUAL(broken_invariants(after, "crash"),
                    std::vector<std::string>{});
    auto rec = after.mark_interrupted("crash", "killed", 1000000);
    CAF_CHECK(rec.paused);
    for (auto& t : after.tasks("crash"))
      CAF_CHECK(!in_attempt(t.state));
    CAF_CHECK_EQUAL(broken_invariants(after, "crash"),
                    std::vector<std::string>{});
  }
}

CAF_TEST(added tasks follow the tasks of the run with their file recorded) {
  db.create_run(sample_run("r1"), 1000);
  added_tasks more{"r1", "MORE.md", {}};
  more.tasks.push_back(
    new_task{"m1", 1, "More one", task_state::pending, std::nullopt});
  more.tasks.push_back(new_task{"m2", 2, "More two", task_state::done,
                                std::string{"checked in the task file"}});
  CAF_CHECK_EQUAL(db.add_tasks(more, 2000), 1);
  auto st = db.status("r1");
  CAF_REQUIRE_EQUAL(st->tasks.size(), 5u);
  CAF_CHECK_EQUAL(st->tasks[3].id, "m1");
  CAF_CHECK_EQUAL(st->tasks[3].index, 4);
  CAF_CHECK_EQUAL(st->tasks[4].index, 5);
  CAF_CHECK_EQUAL(st->tasks[4].state, task_state::done);
  CAF_CHECK_EQUAL(st->tasks[4].finished_ms, std::optional<int64_t>{2000});
  CAF_CHECK_EQUAL(st->added_files, std::vector<std::string>{"MORE.md"});
  auto events = db.events("r1");
  auto data = json::parse(events.back().data_json);
  CAF_CHECK_EQUAL(events.back().kind, "run.tasks_added");
  CAF_CHECK_EQUAL(data["file"], "MORE.md");
  CAF_CHECK_EQUAL(data["tasks"], json::array({"m1", "m2"}));
  // A second file comes after the first, and so do its tasks.
  CAF_CHECK_EQUAL(db.add_tasks({"r1",
                                "LAST.md",
                                {new_task{"z1", 1, "Last", task_state::pending,
                                          std::nullopt}}},
                               2100),
                  2);
  CAF_CHECK_EQUAL(db.added_files("r1"),
                  (std::vector<std::string>{"MORE.md", "LAST.md"}));
  CAF_CHECK_EQUAL(copy(db.tasks("r1").back().id), "z1");
  CAF_CHECK_EQUAL(copy(db.tasks("r1").back().index), 6);
}

CAF_TEST(adding a task whose id the run has adds nothing at all) {
  db.create_run(sample_run("r1"), 1000);
  auto events_before = db.events("r1").size();
  auto attempt = [&](std::vector<new_task> tasks) {
    try {
      db.add_tasks({"r1", "MORE.md", std::move(tasks)}, 2000);
    } catch (const ledger_error& e) {
      return std::optional<ledger_errc>{e.code()};
    }
    return std::optional<ledger_errc>{};
  };
  auto task = [](const std::string& id, int index) {
    return new_task{id, index, "x", task_state::pending, std::nullopt};
  };
  // A new one first, then one the run already has.
  CAF_CHECK_EQUAL(attempt({task("n1", 1), task("t2", 2)}),
                  std::optional<ledger_errc>{ledger_errc::duplicate});
  // The same new id twice in the file.
  CAF_CHECK_EQUAL(attempt({task("n1", 1), task("n1", 2)}),
                  std::optional<ledger_errc>{ledger_errc::duplicate});
  // A task cannot join already running.
  auto running = task("n2", 1);
  running.state = task_state::running;
  CAF_CHECK_EQUAL(attempt({running}),
                  std::optional<ledger_errc>{ledger_errc::invalid_transition});
  CAF_CHECK_EQUAL(db.tasks("r1").size(), 3u);
  CAF_CHECK(db.added_files("r1").empty());
  CAF_CHECK_EQUAL(db.events("r1").size(), events_before);
  // Nor to a run that is over, or one that does not exist.
  db.set_run_state("r1", run_state::completed, std::nullopt, 3000);
  CAF_CHECK_EQUAL(attempt({task("n3", 1)}),
                  std::optional<ledger_errc>{ledger_errc::invalid_transition});
  CAF_CHECK(fails([&] {
    db.add_tasks({"r9", "MORE.md", {task("n4", 1)}}, 3100);
  }));
  CAF_CHECK_EQUAL(db.tasks("r1").size(), 3u);
}

CAF_TEST(a lifted hold and a worker session are kept with the task) {
  db.create_run(sample_run("r1"), 1000);
  task_change hold = to(task_state::held);
  hold.reason = "[NEEDS DECISION: which db?]";
  db.transition("r1", "t1", hold, 1100);
  CAF_CHECK(!db.find_task("r1", "t1")->hold_lifted);
  // Approved: the hold is lifted together with the move, in one event.
  task_change release = to(task_state::pending);
  release.fields.hold_lifted = true;
  auto r = db.transition("r1", "t1", release, 1200);
  CAF_CHECK(db.find_task("r1", "t1")->hold_lifted);
  CAF_CHECK_EQUAL(copy(json::parse(r.event.data_json)["hold_lifted"]), true);
  // A worker reports its session; update_task keeps it, other fields alone.
  task_fields session;
  session.session = "3f2c-session";
  auto ev = db.update_task("r1", "t1", session, 1300);
  CAF_CHECK_EQUAL(ev.kind, "task.update");
  CAF_CHECK_EQUAL(copy(json::parse(ev.data_json)["session"]), "3f2c-session");
  auto t = db.find_task("r1", "t1");
  CAF_CHECK_EQUAL(t->session, std::optional<std::string>{"3f2c-session"});
  CAF_CHECK(t->hold_lifted);
  CAF_CHECK(!t->branch.has_value());
  // The hold can apply again.
  task_fields again;
  again.hold_lifted = false;
  db.update_task("r1", "t1", again, 1400);
  CAF_CHECK(!db.find_task("r1", "t1")->hold_lifted);
  CAF_CHECK_EQUAL(copy(db.find_task("r1", "t1")->session),
                  std::optional<std::string>{"3f2c-session"});
  // An unknown task is refused and nothing is written.
  auto before = db.events("r1").size();
  CAF_CHECK(fails([&] {
    db.update_task("r1", "t9", session, 1500);
  }));
  CAF_CHECK_EQUAL(db.events("r1").size(), before);
  // The merge commit alone is still its own kind of event.
  CAF_CHECK_EQUAL(db.record_merge_commit("r1", "t2", "feed", 1600).kind,
                  "task.merge_commit");
}

CAF_TEST(the usage of each turn is recorded once with the change it ended) {
  db.create_run(sample_run("r1"), 1000);
  db.transition("r1", "t1", to(task_state::ready), 1000);
  db.transition("r1", "t1", to(task_state::running), 1100);
  // The start turn reported done: its usage goes with running -> verifying.
  task_change work = to(task_state::verifying);
  work.turns = {turn_spend{1, "start", usage{120, 40, 0.002}}};
  db.transition("r1", "t1", work, 1200);
  task_change repair = to(task_state::running);
  db.transition("r1", "t1", repair, 1300);
  // The repair turn failed the attempt: its usage goes with the change
  // that closes it; a turn sent again is not counted twice, and negative
  // values count as nothing.
  task_change failed = to(task_state::ready);
  failed.turns = {turn_spend{2, "repair", usage{10, 5, 0.001}},
                  turn_spend{1, "start", usage{120, 40, 0.002}},
                  turn_spend{3, "message", usage{-7, 1, -1.0}}};
  db.transition("r1", "t1", failed, 1400);
  auto turns = db.turn_usage("r1", "t1");
  CAF_REQUIRE_EQUAL(turns.size(), 3u);
  CAF_CHECK_EQUAL(turns[0].first, 1);
  CAF_CHECK_EQUAL(turns[0].second.kind, "start");
  CAF_CHECK_EQUAL(turns[0].second.usage.input_tokens, 120);
  CAF_CHECK_EQUAL(turns[1].second.kind, "repair");
  CAF_CHECK_EQUAL(turns[1].second.usage.output_tokens, 5);
  CAF_CHECK_EQUAL(turns[2].second.usage.input_tokens, 0);
  CAF_CHECK_EQUAL(turns[2].second.usage.cost_usd, 0.0);
  auto a = db.attempts("r1", "t1").at(0);
  CAF_CHECK_EQUAL(a.usage.input_tokens, 130);
  CAF_CHECK_EQUAL(a.usage.output_tokens, 46);
  CAF_CHECK_EQUAL(a.usage.cost_usd, 0.003);
  auto total = db.run_usage("r1");
  CAF_CHECK_EQUAL(total.input_tokens, 130);
  CAF_CHECK_EQUAL(total.output_tokens, 46);
  // A refused change writes no usage.
  task_change wrong = to(task_state::merging);
  wrong.turns = {turn_spend{9, "start", usage{1000, 0, 1}}};
  CAF_CHECK(fails([&] {
    db.transition("r1", "t1", wrong, 1500);
  }));
  CAF_CHECK_EQUAL(db.run_usage("r1").input_tokens, 130);
  CAF_CHECK_EQUAL(db.turn_usage("r1", "t1").size(), 3u);
}

CAF_TEST(
  the job log gives each task its times attempts repairs exit and usage) {
  db.create_run(sample_run("r1"), 1000);
  db.transition("r1", "t1", to(task_state::ready), 1000);
  db.transition("r1", "t1", to(task_state::running), 1100);
  db.transition("r1", "t1", to(task_state::verifying), 1200);
  db.transition("r1", "t1", to(task_state::running), 1300);
  task_change work = to(task_state::verifying);
  work.turns = {turn_spend{2, "repair", usage{50, 10, 0.25}}};
  db.transition("r1", "t1", work, 1400);
  task_change passed = to(task_state::merging);
  passed.exit_code = 0;
  db.transition("r1", "t1", passed, 1500);
  db.transition("r1", "t1", to(task_state::done), 2600);
  db.transition("r1", "t2", to(task_state::ready), 1000);
  db.transition("r1", "t2", to(task_state::running), 1100);
  auto log = db.job_log("r1");
  CAF_REQUIRE_EQUAL(log.size(), 3u);
  CAF_CHECK_EQUAL(log[0].task_id, "t1");
  CAF_CHECK_EQUAL(log[0].started_ms, std::optional<int64_t>{1100});
  CAF_CHECK_EQUAL(log[0].ended_ms, std::optional<int64_t>{2600});
  CAF_CHECK_EQUAL(log[0].attempts, 1);
  CAF_CHECK_EQUAL(log[0].repairs, 1);
  CAF_CHECK_EQUAL(log[0].exit_code, std::optional<int>{0});
  CAF_CHECK_EQUAL(log[0].usage.input_tokens, 50);
  CAF_CHECK_EQUAL(log[0].usage.cost_usd, 0.25);
  // Running: started, not ended.
  CAF_CHECK_EQUAL(log[1].started_ms, std::optional<int64_t>{1100});
  CAF_CHECK(!log[1].ended_ms);
  CAF_CHECK(!log[2].started_ms);
  CAF_CHECK(db.job_log("nope").empty());
}

CAF_TEST_FIXTURE_SCOPE_END()
