// The one reservation table of task-list runs and managed background tasks:
// the rule (which claims overlap), and on a real ledger and folder tree a
// run task's start that waits for a managed task, a managed task that waits
// for a run task, whose leases stop counting when their holder is gone, and
// two writers on one ledger that never both win.
#define CAF_SUITE unit.reservation
#include <caf/test/unit_test.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "src/control/store.hpp"
#include "src/scope/lease.hpp"
#include "src/store/ledger.hpp"
#include "src/store/run_lock.hpp"
#include "test.hpp"
#include "unit/store_helpers.hpp"

using namespace taskforce;
using namespace taskforce::scope;
namespace fs = std::filesystem;

using strings = std::vector<std::string>;

namespace {

constexpr int64_t t0 = 1'000'000;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

claim root(std::string name) {
  return {lease_kind::root, std::move(name)};
}

claim glob_of(std::string name) {
  return {lease_kind::glob, std::move(name)};
}

claim lock(std::string name) {
  return {lease_kind::lock, std::move(name)};
}

bool meet(const claim& a, const claim& b) {
  // The rule is symmetric; check both ways every time.
  auto ab = overlaps(a, b);
  CAF_CHECK_EQUAL(ab, overlaps(b, a));
  return ab;
}

control::bg_contract contract(const std::string& title, strings roots,
                              strings locks = {}) {
  control::bg_contract c;
  c.title = title;
  c.agent = "coder";
  c.prompt = "Do " + title;
  c.roots = std::move(roots);
  c.locks = std::move(locks);
  return c;
}

/// A repository folder with src/, docs/ and `alias -> src`, its ledger with
/// run R (tasks t1..tN), and a store of managed tasks on the same ledger.
struct fixture {
  test::temp_dir dir;
  fs::path repo = dir.path() / "repo";
  std::string run_id = "20260101-000000-abcd";
  std::optional<store::ledger> db;
  std::optional<control::bg_store> bg;
  control::bg_limits limits{8, true};

  fixture() : fixture(4) {}

  explicit fixture(int tasks) {
    fs::create_directories(repo / "src" / "lib");
    fs::create_directories(repo / "docs");
    dir.write("repo/src/a.ts", "a\n");
    fs::create_symlink("src", repo / "alias");
    db.emplace(store::ledger::open(ledger_path()));
    bg.emplace(*db, repo);
    store::new_run r;
    r.id = run_id;
    r.file = "TASKS.md";
    r.file_hash = store::content_hash("tasks");
    r.base_branch = "main";
    r.max_concurrency = 4;
    for (int i = 1; i <= tasks; ++i)
      r.tasks.push_back(store::new_task{"t" + std::to_string(i), i, "Task",
                                        task_state::pending, std::nullopt});
    db->create_run(r, t0);
    for (int i = 1; i <= tasks; ++i)
      move("t" + std::to_string(i), task_state::ready);
  }

  fs::path ledger_path() const {
    return repo / ".taskforce" / store::ledger_file_name;
  }

  fs::path lock_path() const {
    return repo / ".taskforce" / store::run_lock_file_name;
  }

  /// The run lock, held as a driver of `run` holds it.
  store::run_lock drive(const std::string& run) {
    auto got = store::run_lock::try_acquire(lock_path(), run);
    CAF_REQUIRE(std::holds_alternative<store::run_lock>(got));
    return std::move(std::get<store::run_lock>(got));
  }

  store::transition_result move(const std::string& task, task_state to) {
    store::task_change c;
    c.to = to;
    return db->transition(run_id, task, c, t0);
  }

  /// Starts `task` writing `files` (with `locks`): "" when it started, or
  /// the reason it waits.
  std::string start(store::ledger& on, const std::string& task, strings files,
                    strings locks = {}) {
    store::task_change c;
    c.to = task_state::running;
    c.reserves = task_claims(files, locks);
    try {
      on.transition(run_id, task, c, t0);
      return "";
    } catch (const store::ledger_error& e) {
      CAF_CHECK(e.code() == store::ledger_errc::reserved);
      return e.what();
    }
  }

  std::string start(const std::string& task, strings files,
                    strings locks = {}) {
    return start(*db, task, std::move(files), std::move(locks));
  }

  store::task_row row(const std::string& task) {
    return *db->find_task(run_id, task);
  }

  strings leases() {
    strings out;
    for (auto& l : bg->leases())
      out.push_back(l.holder + " " + to_string(l.kind) + " " + l.name);
    return out;
  }

  int64_t rows(const std::string& sql) {
    test::raw_db raw{ledger_path()};
    return raw.scalar(sql);
  }
};

} // namespace

// --- the rule ----------------------------------------------------------------

CAF_TEST(roots files globs and locks overlap by one rule) {
  // A root holds itself and everything below it, never a sibling.
  CAF_CHECK(meet(root("src"), root("src")));
  CAF_CHECK(meet(root("src"), root("src/lib/x.ts")));
  CAF_CHECK(!meet(root("src"), root("srcx")));
  CAF_CHECK(!meet(root("src/lib"), root("src/library")));
  // A file (a run task's literal entry) is a root too.
  CAF_CHECK(meet(root("src/a.ts"), root("src")));
  CAF_CHECK(!meet(root("src/a.ts"), root("src/b.ts")));
  // A glob meets a root when it can name a path at or below it.
  CAF_CHECK(meet(glob_of("src/*.ts"), root("src")));
  CAF_CHECK(meet(glob_of("src/*.ts"), root("src/a.ts")));
  CAF_CHECK(!meet(glob_of("src/*.ts"), root("src/lib")));
  CAF_CHECK(meet(glob_of("src/**/*.ts"), root("src/lib")));
  CAF_CHECK(meet(glob_of("src/lib/"), root("src")));
  CAF_CHECK(meet(glob_of("*.md"), root("README.md")));
  CAF_CHECK(!meet(glob_of("*.md"), root("docs")));
  CAF_CHECK(!meet(glob_of("docs/*.md"), root("src")));
  // Everything (a run task without files) meets every root.
  CAF_CHECK(meet(glob_of("**"), root("docs/deep/x")));
  // Globs are compared exactly.
  CAF_CHECK(meet(glob_of("src/*.ts"), glob_of("src/a.*")));
  CAF_CHECK(!meet(glob_of("src/auth/**"), glob_of("src/*.ts")));
  // A root spelled with glob characters is compared by folders alone.
  CAF_CHECK(meet(glob_of("a[1]/*.c"), root("a[1]")));
  CAF_CHECK(!meet(glob_of("b/*.c"), root("a[1]")));
  // Locks meet locks of the same name, and nothing else.
  CAF_CHECK(meet(lock("db"), lock("db")));
  CAF_CHECK(!meet(lock("db"), lock("cache")));
  CAF_CHECK(!meet(lock("src"), root("src")));
  CAF_CHECK(!meet(lock("src"), glob_of("**")));
}

CAF_TEST(a run task claims its scope as written and everything without one) {
  auto claims = task_claims({"src/a.ts", "docs/", "src/*.ts"}, {"db"});
  CAF_REQUIRE_EQUAL(claims.size(), 4u);
  CAF_CHECK(claims[0].kind == lease_kind::root && claims[0].name == "src/a.ts");
  CAF_CHECK(claims[1].kind == lease_kind::root && claims[1].name == "docs");
  CAF_CHECK(claims[2].kind == lease_kind::glob && claims[2].name == "src/*.ts");
  CAF_CHECK(claims[3].kind == lease_kind::lock && claims[3].name == "db");
  auto none = task_claims({}, {});
  CAF_REQUIRE_EQUAL(none.size(), 1u);
  CAF_CHECK(none[0].kind == lease_kind::glob && none[0].name == "**");
}

CAF_TEST(a conflict names its holder from either side) {
  std::vector<lease> held{{"bg-1", lease_kind::root, "src"},
                          {"run/R/t1", lease_kind::glob, "docs/*.md"},
                          {"bg-2", lease_kind::lock, "db"}};
  auto c = find_conflict("run/R/t2", {root("src/a.ts")}, held);
  CAF_REQUIRE(c);
  CAF_CHECK_EQUAL(c->waits_for(), "waits for managed task bg-1 (src)");
  auto l = find_conflict("run/R/t2", {lock("db")}, held);
  CAF_REQUIRE(l);
  CAF_CHECK_EQUAL(l->waits_for(), "waits for managed task bg-2 (lock db)");
  // The managed side keeps its words and names a run's task plainly.
  auto g = find_conflict("bg-3", {"docs"}, {}, held);
  CAF_REQUIRE(g);
  CAF_CHECK_EQUAL(g->describe(),
                  "root docs overlaps glob docs/*.md of task t1 of run R");
  CAF_CHECK(!find_conflict("bg-1", {"src"}, {}, held)); // its own
}

// --- on a ledger -------------------------------------------------------------

CAF_TEST_FIXTURE_SCOPE(reservation_tests, fixture)

CAF_TEST(a run task waits while a managed task holds its folder) {
  auto lock = drive(run_id);
  auto managed = bg->prepare(contract("managed", {"src"}), limits, t0);
  CAF_REQUIRE(managed.dispatch);
  // Its start is refused as a wait: the task stays ready, says why, and no
  // attempt was opened.
  CAF_CHECK_EQUAL(start("t1", {"src/a.ts"}),
                  "waits for managed task bg-1 (src)");
  CAF_CHECK_EQUAL(row("t1").state, task_state::ready);
  CAF_CHECK_EQUAL(row("t1").reason.value_or(""),
                  "waits for managed task bg-1 (src)");
  CAF_CHECK(db->attempts(run_id, "t1").empty());
  CAF_CHECK_EQUAL(rows("SELECT count(*) FROM events WHERE kind = "
                       "'task.waits'"),
                  1);
  // Asking again says nothing new.
  start("t1", {"src/a.ts"});
  CAF_CHECK_EQUAL(rows("SELECT count(*) FROM events WHERE kind = "
                       "'task.waits'"),
                  1);
  // Work elsewhere starts; a task without files waits like one on src.
  CAF_CHECK_EQUAL(start("t2", {"docs/"}), "");
  CAF_CHECK(contains(start("t3", {}), "waits for managed task bg-1"));
  // Cancelled while its child may still come, it keeps its roots; once
  // they are given up, the start goes through.
  bg->cancel(managed.task.id, t0 + 1);
  CAF_CHECK(!start("t1", {"src/a.ts"}).empty());
  bg->cancel(managed.task.id, t0 + 2);
  CAF_CHECK_EQUAL(start("t1", {"src/a.ts"}), "");
  CAF_CHECK_EQUAL(row("t1").state, task_state::running);
  CAF_CHECK_EQUAL(leases(), (strings{"run/" + run_id + "/t1 root src/a.ts",
                                     "run/" + run_id + "/t2 root docs"}));
}

CAF_TEST(a managed task waits while a run task works on its folder) {
  auto lock = drive(run_id);
  CAF_CHECK_EQUAL(start("t1", {"src/*.ts"}, {"db"}), "");
  // Through a symlink too: alias is src.
  auto q = bg->prepare(contract("managed", {"alias"}), limits, t0);
  CAF_CHECK(q.task.state == control::bg_state::queued);
  CAF_CHECK(!q.dispatch);
  CAF_CHECK(contains(q.task.reason.value_or(""),
                     "waits: its root src overlaps glob src/*.ts of task t1 "
                     "of run "
                       + run_id));
  auto by_lock = bg->prepare(contract("db", {"docs"}, {"db"}), limits, t0);
  CAF_CHECK(!by_lock.dispatch);
  CAF_CHECK(contains(by_lock.task.reason.value_or(""), "lock db is held by"));
  CAF_CHECK(!bg->start(q.task.id, limits, t0 + 1).dispatch);
  // The run task's leases go when it stops working.
  move("t1", task_state::verifying);
  CAF_CHECK(!bg->start(q.task.id, limits, t0 + 1).dispatch);
  move("t1", task_state::merging);
  move("t1", task_state::done);
  CAF_CHECK(bg->start(q.task.id, limits, t0 + 2).dispatch);
  CAF_CHECK(bg->start(by_lock.task.id, limits, t0 + 2).dispatch);
}

CAF_TEST(a run whose driver is gone holds nothing) {
  std::string id;
  {
    auto lock = drive(run_id);
    CAF_CHECK_EQUAL(start("t1", {"src/"}), "");
    auto queued = bg->prepare(contract("managed", {"src"}), limits, t0);
    CAF_CHECK(!queued.dispatch);
    id = queued.task.id;
    CAF_CHECK(!bg->start(id, limits, t0).dispatch);
  }
  {
    // Held by a driver of another run: this run is not being driven.
    auto other = drive("20260101-000000-ffff");
    CAF_CHECK_EQUAL(leases(), strings{});
  }
  // Nobody holds the lock (its driver was killed): its leases stop
  // counting at once, and the next writer deletes them.
  CAF_CHECK_EQUAL(rows("SELECT count(*) FROM bg_leases"), 1);
  CAF_CHECK(bg->start(id, limits, t0 + 1).dispatch);
  CAF_CHECK_EQUAL(rows("SELECT count(*) FROM bg_leases WHERE holder LIKE "
                       "'run/%'"),
                  0);
}

CAF_TEST(a managed task keeps its folder across a restart of its server) {
  auto lock = drive(run_id);
  auto d = bg->prepare(contract("managed", {"src"}), limits, t0);
  CAF_REQUIRE(d.dispatch);
  bg->link(d.dispatch->token, "child", t0 + 1);
  // The server is killed: nothing of it runs, another process opens the
  // ledger and recovers.
  bg.reset();
  db.reset();
  db.emplace(store::ledger::open(ledger_path()));
  bg.emplace(*db, repo);
  bg->recover(t0 + 2);
  CAF_CHECK_EQUAL(start("t1", {"src/a.ts"}),
                  "waits for managed task bg-1 (src)");
  // Until its child is known to be gone.
  bg->reconcile({}, t0 + 3);
  CAF_CHECK_EQUAL(start("t1", {"src/a.ts"}), "");
}

CAF_TEST_FIXTURE_SCOPE_END()

// --- two writers -------------------------------------------------------------

CAF_TEST(a run driver and a server racing on one ledger never both win) {
  constexpr int rounds = 40;
  fixture f{rounds};
  auto lock = f.drive(f.run_id);
  // The server's own connection to the same file, in its own thread.
  auto server_db = store::ledger::open(f.ledger_path());
  control::bg_store server{server_db, f.repo};
  int run_won = 0;
  int managed_won = 0;
  for (int i = 1; i <= rounds; ++i) {
    auto task = "t" + std::to_string(i);
    std::atomic<int> ready{0};
    std::string waits;
    std::optional<control::prepare_result> prepared;
    auto go = [&ready] {
      ++ready;
      while (ready.load() < 2) {
      }
    };
    // Every third round one side plainly goes first, else they race.
    std::thread managed{[&] {
      go();
      if (i % 3 == 1)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      prepared = server.prepare(contract("m" + std::to_string(i), {"src"}),
                                f.limits, t0 + i);
    }};
    go();
    if (i % 3 == 2)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    waits = f.start(task, {"src/a.ts"});
    managed.join();
    bool run_started = waits.empty();
    bool managed_started = prepared && prepared->dispatch.has_value();
    CAF_CHECK(run_started != managed_started);
    // Both free what they took for the next round.
    if (run_started) {
      ++run_won;
      f.move(task, task_state::interrupted);
    }
    CAF_REQUIRE(prepared);
    server.cancel(prepared->task.id, t0 + i);
    if (managed_started) {
      ++managed_won;
      server.cancel(prepared->task.id, t0 + i); // its token was out
    }
  }
  CAF_MESSAGE("the run won " << run_won << " rounds, the server "
                             << managed_won);
  CAF_CHECK_GREATER(run_won, 0);
  CAF_CHECK_GREATER(managed_won, 0);
}
