// The ledger's schema versions: a version 1 ledger (as the first taskforce
// wrote it) is migrated on open, whole or not at all; a read-only reader
// reads it without touching it; a newer ledger is refused by older code.
#define CAF_SUITE unit.ledger_schema
#include <caf/test/unit_test.hpp>

#include <map>
#include <string>

#include <sqlite3.h>

#include "src/store/ledger.hpp"
#include "src/store/mailbox.hpp"
#include "src/store/schema.hpp"
#include "src/store/sqlite.hpp"
#include "test.hpp"
#include "unit/store_helpers.hpp"

using namespace taskforce;
using namespace taskforce::store;
using taskforce::test::raw_db;

namespace {

// The rows the first taskforce wrote for a run paused with one task held,
// one failed at its gate after an attempt, and one done.
constexpr const char* v1_rows = R"sql(
INSERT INTO runs VALUES ('r1', 'TASKS.md', 'fnv1a64:0000000000000001',
  'main', 'paused', 't2 failed', 1000, 1900, 2, '{"maxConcurrency":2}');
INSERT INTO tasks (run_id, task_id, idx, title, state, attempts, reason,
  updated_ms) VALUES ('r1', 't1', 1, 'Held', 'held',
  0, '- [ ] Held [NEEDS DECISION: which db?]', 1100);
INSERT INTO tasks (run_id, task_id, idx, title, state, attempts, branch,
  worktree, reason, gate_tail, started_ms, finished_ms, updated_ms)
  VALUES ('r1', 't2', 2, 'Gated', 'failed', 1, 'taskforce/r1/t2',
  '/repo/.taskforce/worktrees/r1/t2', 'gate failed (exit 1)',
  'FAIL: test_cache', 1200, 1800, 1800);
INSERT INTO tasks (run_id, task_id, idx, title, state, attempts, branch,
  merge_commit, started_ms, finished_ms, updated_ms) VALUES ('r1', 't3', 3,
  'Done', 'done', 1, 'taskforce/r1/t3', 'abc123', 1200, 1500, 1500);
INSERT INTO attempts (run_id, task_id, number, state, started_ms, ended_ms,
  exit_code, worker_log, verify_log, input_tokens, output_tokens, cost_usd)
  VALUES ('r1', 't2', 1, 'failed', 1200, 1800, 1,
  'logs/r1/t2/attempt-1/worker.log', 'logs/r1/t2/attempt-1/verify.log',
  100, 20, 0.5);
INSERT INTO events (run_id, task_id, at_ms, kind, data) VALUES
  ('r1', NULL, 1000, 'run.created', '{"file":"TASKS.md"}'),
  ('r1', 't2', 1800, 'task.state', '{"from":"verifying","to":"failed"}');
)sql";

struct fixture {
  test::temp_dir dir;
  std::filesystem::path file = dir.path() / ".taskforce" / "ledger.sqlite";

  // A version 1 ledger made by the version 1 schema, holding v1_rows.
  void make_v1() {
    schema::create(file, 1);
    raw_db raw{file};
    CAF_REQUIRE_EQUAL(raw.exec(v1_rows), SQLITE_OK);
  }
};

task_change to(task_state s) {
  task_change c;
  c.to = s;
  return c;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(ledger_schema_tests, fixture)

CAF_TEST(a version 1 ledger is migrated on open and keeps every row) {
  make_v1();
  {
    raw_db raw{file};
    CAF_REQUIRE_EQUAL(raw.scalar("PRAGMA user_version"), 1);
    // Version 1 has neither the new columns nor the new tables.
    CAF_REQUIRE_NOT_EQUAL(raw.exec("SELECT session FROM tasks"), SQLITE_OK);
    CAF_REQUIRE_NOT_EQUAL(raw.exec("SELECT * FROM mail"), SQLITE_OK);
  }
  auto db = ledger::open(file);
  CAF_CHECK_EQUAL(db.schema_version(), schema::current);
  {
    raw_db raw{file};
    CAF_CHECK_EQUAL(raw.scalar("PRAGMA user_version"), schema::current);
    // What version 3 adds is there, empty.
    CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM tasks WHERE "
                               "content_hash IS NULL"),
                    3);
    CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM attempts WHERE "
                               "model IS NULL"),
                    1);
    CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM turn_usage"), 0);
    CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM co_changes"), 0);
    // And what version 4 adds: the control plane's tables, empty.
    for (auto table : {"bg_tasks", "bg_deps", "bg_leases", "bg_baseline",
                       "bg_events", "monitors"})
      CAF_CHECK_EQUAL(raw.scalar(std::string{"SELECT count(*) FROM "} + table),
                      0);
  }
  auto st = db.status("r1");
  CAF_REQUIRE(st.has_value());
  CAF_CHECK_EQUAL(st->run.state, run_state::paused);
  CAF_CHECK_EQUAL(st->run.reason, std::optional<std::string>{"t2 failed"});
  CAF_REQUIRE_EQUAL(st->tasks.size(), 3u);
  CAF_CHECK_EQUAL(st->tasks[0].state, task_state::held);
  CAF_CHECK(!st->tasks[0].hold_lifted);
  CAF_CHECK(!st->tasks[0].session.has_value());
  CAF_CHECK_EQUAL(st->tasks[1].gate_tail,
                  std::optional<std::string>{"FAIL: test_cache"});
  CAF_CHECK_EQUAL(st->tasks[1].usage.input_tokens, 100);
  CAF_CHECK_EQUAL(st->tasks[2].merge_commit,
                  std::optional<std::string>{"abc123"});
  CAF_CHECK(st->added_files.empty());
  CAF_CHECK_EQUAL(db.events("r1").size(), 2u);
  CAF_CHECK_EQUAL(db.attempts("r1", "t2").size(), 1u);
  // What version 2 adds works on the old run.
  task_fields lift;
  lift.hold_lifted = true;
  db.update_task("r1", "t1", lift, 2000);
  CAF_CHECK(db.find_task("r1", "t1")->hold_lifted);
  mailbox box{db};
  box.post({"r1", std::string{"t2"}, mail_kind::answer, "use sqlite", {}},
           2100);
  CAF_CHECK_EQUAL(box.take_undelivered("r1", "t2", 2200).size(), 1u);
  db.add_tasks(
    {"r1", "MORE.md", {new_task{"t4", 1, "More", task_state::pending, {}}}},
    2300);
  CAF_CHECK_EQUAL(db.added_files("r1"), std::vector<std::string>{"MORE.md"});
  // The lifecycle still holds on the migrated rows.
  task_change resume = to(task_state::pending);
  db.transition("r1", "t2", resume, 2400);
  auto t2 = db.find_task("r1", "t2");
  CAF_REQUIRE(t2.has_value());
  CAF_CHECK_EQUAL(t2->state, task_state::pending);
}

CAF_TEST(opening a migrated ledger again changes nothing) {
  make_v1();
  { ledger::open(file); }
  auto before = test::read_file(file);
  {
    auto again = ledger::open(file);
    CAF_CHECK_EQUAL(again.schema_version(), schema::current);
    CAF_CHECK_EQUAL(again.tasks("r1").size(), 3u);
  }
  CAF_CHECK_EQUAL(test::read_file(file), before);
  raw_db raw{file};
  CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM pragma_table_info('tasks') "
                             "WHERE name = 'hold_lifted'"),
                  1);
}

CAF_TEST(a process that read version 1 before another migrated
           does not migrate twice) {
  make_v1();
  sqlite::connection late{file, sqlite::open_mode::read_write};
  auto seen = schema::read_version(late, file);
  CAF_REQUIRE_EQUAL(seen, 1);
  { ledger::open(file); } // another process migrates meanwhile
  // The late one reads the version again under the write lock.
  schema::migrate(late, file, seen);
  CAF_CHECK_EQUAL(schema::read_version(late, file), schema::current);
  auto db = ledger::open(file);
  CAF_CHECK_EQUAL(db.tasks("r1").size(), 3u);
}

CAF_TEST(a migration that fails leaves the version 1 ledger whole) {
  make_v1();
  {
    // Something in the file makes step 2 fail halfway: an index with the
    // name it wants, created after its columns are added.
    raw_db raw{file};
    CAF_REQUIRE_EQUAL(raw.exec("CREATE INDEX mail_by_task ON tasks (title)"),
                      SQLITE_OK);
  }
  try {
    ledger::open(file);
    CAF_FAIL("the migration succeeded");
  } catch (const ledger_error& e) {
    CAF_CHECK_EQUAL(e.code(), ledger_errc::sqlite);
  }
  raw_db raw{file};
  CAF_CHECK_EQUAL(raw.scalar("PRAGMA user_version"), 1);
  CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM pragma_table_info('tasks') "
                             "WHERE name IN ('hold_lifted', 'session')"),
                  0);
  CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM sqlite_master "
                             "WHERE name IN ('mail', 'run_files')"),
                  0);
  CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM tasks"), 3);
}

CAF_TEST(a read only reader reads a version 1 ledger and leaves it as is) {
  make_v1();
  auto before = test::read_file(file);
  {
    auto reader = ledger::open(file, ledger_options{true});
    CAF_CHECK_EQUAL(reader.schema_version(), 1);
    auto st = reader.status("r1");
    CAF_REQUIRE(st.has_value());
    CAF_CHECK_EQUAL(st->tasks.size(), 3u);
    CAF_CHECK(!st->tasks[0].hold_lifted);
    CAF_CHECK(st->added_files.empty());
    auto h = reader.history("r1", "t2");
    CAF_REQUIRE(h.has_value());
    CAF_CHECK_EQUAL(h->attempts.size(), 1u);
    mailbox box{reader};
    CAF_CHECK(box.list("r1").empty());
    CAF_CHECK(box.undelivered_counts("r1").empty());
    CAF_CHECK_EQUAL(reader.list_runs().size(), 1u);
  }
  CAF_CHECK_EQUAL(test::read_file(file), before);
  raw_db raw{file};
  CAF_CHECK_EQUAL(raw.scalar("PRAGMA user_version"), 1);
}

CAF_TEST(a newer ledger is refused by code that knows only version 1) {
  {
    ledger::open(file).create_run(
      new_run{"r1", "TASKS.md", "h", "main", 2, "{}", {}}, 1000);
  }
  auto before = test::read_file(file);
  sqlite::connection old{file, sqlite::open_mode::read_only};
  try {
    schema::read_version(old, file, 1);
    CAF_FAIL("version 1 code read a newer ledger");
  } catch (const ledger_error& e) {
    CAF_CHECK_EQUAL(e.code(), ledger_errc::schema);
    std::string what = e.what();
    CAF_CHECK_NOT_EQUAL(
      what.find("schema version " + std::to_string(schema::current)),
      std::string::npos);
    CAF_CHECK_NOT_EQUAL(what.find("newer than this taskforce knows (1)"),
                        std::string::npos);
  }
  CAF_CHECK_EQUAL(test::read_file(file), before);
  // And this code refuses whatever comes after its own version, for
  // writing and reading alike.
  {
    raw_db raw{file};
    raw.exec("PRAGMA user_version = " + std::to_string(schema::current + 1));
  }
  for (bool read_only : {false, true}) {
    try {
      ledger::open(file, ledger_options{read_only});
      CAF_FAIL("opened a ledger newer than this code");
    } catch (const ledger_error& e) {
      CAF_CHECK_EQUAL(e.code(), ledger_errc::schema);
      CAF_CHECK_NOT_EQUAL(std::string{e.what()}.find(
                            "knows (" + std::to_string(schema::current) + ")"),
                          std::string::npos);
    }
  }
}

CAF_TEST(a database claiming version 2 without its tables is not a ledger) {
  std::filesystem::create_directories(file.parent_path());
  {
    sqlite::connection foreign{file, sqlite::open_mode::create};
    foreign.exec(schema::step(1), "v1 tables");
    foreign.exec("PRAGMA user_version = 2", "version");
  }
  try {
    ledger::open(file);
    CAF_FAIL("opened a version 2 ledger without mail");
  } catch (const ledger_error& e) {
    CAF_CHECK_EQUAL(e.code(), ledger_errc::schema);
    CAF_CHECK_NOT_EQUAL(std::string{e.what()}.find("not a taskforce ledger"),
                        std::string::npos);
  }
}

CAF_TEST(a new ledger has the same tables as a migrated one) {
  auto fresh = dir.path() / "fresh.sqlite";
  { ledger::open(fresh); }
  make_v1();
  { ledger::open(file); }
  auto shape = [](const std::filesystem::path& p) {
    raw_db raw{p};
    std::map<std::string, int64_t> columns;
    for (auto* table : {"runs", "tasks", "attempts", "events", "run_files",
                        "mail", "turn_usage", "co_changes", "co_change_tasks"})
      columns[table] = raw.scalar(
        std::string{"SELECT count(*) FROM pragma_table_info('"} + table + "')");
    columns["triggers"]
      = raw.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'");
    columns["indexes"] = raw.scalar("SELECT count(*) FROM sqlite_master WHERE "
                                    "type = 'index' AND sql IS NOT NULL");
    return columns;
  };
  CAF_CHECK_EQUAL(shape(fresh), shape(file));
  CAF_CHECK_EQUAL(shape(fresh)["mail"], 9);
  CAF_CHECK_EQUAL(shape(fresh)["turn_usage"], 9);
}

CAF_TEST(a version 2 ledger is migrated to version 3 and keeps every row) {
  schema::create(file, 2);
  {
    raw_db raw{file};
    CAF_REQUIRE_EQUAL(raw.exec(v1_rows), SQLITE_OK);
  }
  {
    // A reader of the version 2 file sees version 3's columns, empty.
    auto reader = ledger::open(file, ledger_options{true});
    CAF_CHECK_EQUAL(reader.schema_version(), 2);
    CAF_CHECK_EQUAL(reader.tasks("r1").size(), 3u);
    CAF_CHECK_EQUAL(reader.attempts("r1", "t2").size(), 1u);
  }
  auto db = ledger::open(file);
  CAF_CHECK_EQUAL(db.schema_version(), schema::current);
  CAF_CHECK_EQUAL(db.tasks("r1").size(), 3u);
  CAF_CHECK_EQUAL(db.status("r1")->tasks[1].usage.input_tokens, 100);
}

CAF_TEST(a version 3 ledger is migrated to version 4 and keeps every row) {
  schema::create(file, 3);
  {
    raw_db raw{file};
    CAF_REQUIRE_EQUAL(raw.exec(v1_rows), SQLITE_OK);
  }
  {
    // A reader of the version 3 file sees the control plane's tables, empty.
    auto reader = ledger::open(file, ledger_options{true});
    CAF_CHECK_EQUAL(reader.schema_version(), 3);
    CAF_CHECK_EQUAL(reader.tasks("r1").size(), 3u);
  }
  auto db = ledger::open(file);
  CAF_CHECK_EQUAL(db.schema_version(), schema::current);
  CAF_CHECK_EQUAL(db.tasks("r1").size(), 3u);
  raw_db raw{file};
  CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM bg_tasks"), 0);
  // The history of the control plane is append-only.
  CAF_CHECK_EQUAL(raw.exec("INSERT INTO bg_events (kind, at_ms) VALUES "
                           "('created', 1)"),
                  SQLITE_OK);
  CAF_CHECK_NOT_EQUAL(raw.exec("DELETE FROM bg_events"), SQLITE_OK);
  CAF_CHECK_NOT_EQUAL(raw.exec("UPDATE bg_events SET kind = 'x'"), SQLITE_OK);
}

CAF_TEST(a version 4 ledger is migrated to version 5 and keeps its leases) {
  schema::create(file, 4);
  {
    raw_db raw{file};
    CAF_REQUIRE_EQUAL(
      raw.exec("INSERT INTO bg_leases VALUES ('bg-1', 'root', 'src')"),
      SQLITE_OK);
    // Version 4 holds roots and locks only.
    CAF_CHECK_NOT_EQUAL(
      raw.exec("INSERT INTO bg_leases VALUES ('run/r/t', 'glob', '*.ts')"),
      SQLITE_OK);
  }
  {
    auto db = ledger::open(file);
    CAF_CHECK_EQUAL(db.schema_version(), 5);
  }
  raw_db raw{file};
  CAF_CHECK_EQUAL(raw.scalar("SELECT count(*) FROM bg_leases WHERE holder = "
                             "'bg-1' AND kind = 'root' AND name = 'src'"),
                  1);
  CAF_CHECK_EQUAL(
    raw.exec("INSERT INTO bg_leases VALUES ('run/r/t', 'glob', '*.ts')"),
    SQLITE_OK);
  CAF_CHECK_NOT_EQUAL(
    raw.exec("INSERT INTO bg_leases VALUES ('run/r/t', 'file', 'x')"),
    SQLITE_OK);
}

CAF_TEST_FIXTURE_SCOPE_END()
