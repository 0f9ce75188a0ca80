// The mailbox in the ledger: mail down to a task's worker is handed out
// exactly once, also to takers in several processes at the same moment;
// reports go up; nothing is deleted, rewritten or delivered twice.
#define CAF_SUITE unit.mailbox
#include <caf/test/unit_test.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <sqlite3.h>

#include "src/store/ledger.hpp"
#include "src/store/mailbox.hpp"
#include "test.hpp"
#include "unit/store_helpers.hpp"

using namespace taskforce;
using namespace taskforce::store;

namespace {

new_run sample_run(const std::string& id, int tasks = 3) {
  new_run r;
  r.id = id;
  r.file = "TASKS.md";
  r.file_hash = content_hash("x");
  r.base_branch = "main";
  r.max_concurrency = 2;
  for (int i = 1; i <= tasks; ++i)
    r.tasks.push_back(new_task{"t" + std::to_string(i), i,
                               "Task " + std::to_string(i), task_state::pending,
                               std::nullopt});
  return r;
}

new_mail down(const std::string& task, const std::string& text,
              mail_kind kind = mail_kind::message) {
  return new_mail{"r1", task, kind, text, std::nullopt};
}

template<class F>
std::optional<ledger_errc> error_of(F f) {
  try {
    f();
  } catch (const ledger_error& e) {
    return e.code();
  }
  return std::nullopt;
}

std::vector<std::string> texts(const std::vector<mail_row>& xs) {
  std::vector<std::string> result;
  for (auto& x : xs)
    result.push_back(x.text);
  return result;
}

// When the test binary starts with TASKFORCE_TEST_MAIL_TAKER=LEDGER:OUT:DONE,
// it becomes a taker before main runs: it takes t1's mail, appending each
// id it took to OUT (one per line), until the file DONE exists (nothing is
// posted after it) and a take finds nothing.
const int mail_taker_mode = [] {
  const char* spec = std::getenv("TASKFORCE_TEST_MAIL_TAKER");
  if (spec == nullptr)
    return 0;
  std::string s = spec;
  auto a = s.find(':');
  auto b = s.find(':', a + 1);
  try {
    auto db = ledger::open(s.substr(0, a));
    mailbox box{db};
    std::ofstream out(s.substr(a + 1, b - a - 1), std::ios::app);
    std::filesystem::path done = s.substr(b + 1);
    for (int64_t now = 1;; ++now) {
      bool finished = std::filesystem::exists(done);
      auto taken = box.take_undelivered("r1", "t1", now);
      for (auto& m : taken)
        out << m.id << '\n' << std::flush;
      if (finished && taken.empty())
        ::_exit(0);
      ::usleep(200);
    }
  } catch (...) {
    ::_exit(3);
  }
}();

struct fixture {
  test::temp_dir dir;
  std::filesystem::path file = dir.path() / "ledger.sqlite";
  ledger db = ledger::open(file);
  mailbox box{db};

  fixture() {
    db.create_run(sample_run("r1"), 1000);
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(mailbox_tests, fixture)

CAF_TEST(a down mail is taken once oldest first and marked delivered) {
  auto first = box.post(down("t1", "use the cache"), 1100);
  box.post(down("t1", "and log misses", mail_kind::message), 1200);
  box.post(down("t2", "not for t1"), 1250);
  CAF_CHECK_EQUAL(first.direction, mail_direction::down);
  CAF_CHECK(!first.delivered_ms.has_value());
  CAF_CHECK_EQUAL(box.undelivered_counts("r1"),
                  (std::map<std::string, int>{{"t1", 2}, {"t2", 1}}));
  CAF_CHECK(box.has_undelivered("r1", "t1"));
  auto taken = box.take_undelivered("r1", "t1", 1300, 2);
  CAF_CHECK(!box.has_undelivered("r1", "t1"));
  CAF_CHECK(box.has_undelivered("r1", "t2"));
  CAF_CHECK_EQUAL(texts(taken), (std::vector<std::string>{"use the cache",
                                                          "and log misses"}));
  CAF_REQUIRE_EQUAL(taken.size(), 2u);
  CAF_CHECK_EQUAL(taken[0].delivered_ms, std::optional<int64_t>{1300});
  CAF_CHECK_EQUAL(taken[0].attempt, std::optional<int>{2});
  CAF_CHECK(box.take_undelivered("r1", "t1", 1400).empty());
  CAF_CHECK_EQUAL(box.undelivered_counts("r1"),
                  (std::map<std::string, int>{{"t2", 1}}));
  // A later mail is the next one taken, and only it.
  box.post(down("t1", "one more", mail_kind::answer), 1500);
  CAF_CHECK_EQUAL(texts(box.take_undelivered("r1", "t1", 1600)),
                  std::vector<std::string>{"one more"});
  // The list keeps everything, delivered or not, in order.
  auto all = box.list("r1");
  CAF_REQUIRE_EQUAL(all.size(), 4u);
  CAF_CHECK_EQUAL(all[2].task_id, std::optional<std::string>{"t2"});
  CAF_CHECK(!all[2].delivered_ms.has_value());
  CAF_CHECK_EQUAL(all[3].kind, mail_kind::answer);
  CAF_CHECK_EQUAL(box.list("r1", std::string{"t1"}).size(), 3u);
}

CAF_TEST(a report goes up and is never handed to the worker) {
  auto r = box.post(
    {"r1", std::string{"t1"}, mail_kind::report, "half done", 1}, 1100);
  CAF_CHECK_EQUAL(r.direction, mail_direction::up);
  CAF_CHECK_EQUAL(r.attempt, std::optional<int>{1});
  // A report about the run as a whole needs no task.
  box.post({"r1", std::nullopt, mail_kind::report, "from the run", {}}, 1150);
  CAF_CHECK(!box.has_undelivered("r1", "t1"));
  CAF_CHECK(box.take_undelivered("r1", "t1", 1200).empty());
  CAF_CHECK(box.undelivered_counts("r1").empty());
  auto all = box.list("r1", std::string{"t1"});
  CAF_REQUIRE_EQUAL(all.size(), 1u);
  CAF_CHECK_EQUAL(all[0].text, "half done");
  CAF_CHECK_EQUAL(box.list("r1").size(), 2u);
}

CAF_TEST(mail to nowhere is refused and stores nothing) {
  CAF_CHECK_EQUAL(error_of([&] {
                    box.post(down("t9", "x"), 1100);
                  }),
                  ledger_errc::not_found);
  CAF_CHECK_EQUAL(
    error_of([&] {
      box.post({"r9", std::string{"t1"}, mail_kind::message, "x", {}}, 1100);
    }),
    ledger_errc::not_found);
  CAF_CHECK_EQUAL(
    error_of([&] {
      box.post({"r1", std::nullopt, mail_kind::answer, "x", {}}, 1100);
    }),
    ledger_errc::invalid_transition);
  CAF_CHECK(box.list("r1").empty());
  // Taking for an unknown task finds nothing and writes nothing.
  CAF_CHECK(box.take_undelivered("r1", "t9", 1200).empty());
}

CAF_TEST(mail is never deleted rewritten or delivered twice) {
  box.post(down("t1", "original"), 1100);
  box.take_undelivered("r1", "t1", 1200);
  test::raw_db raw{file};
  auto exec = [&](const char* sql) {
    return raw.exec(sql);
  };
  CAF_CHECK_NOT_EQUAL(exec("UPDATE mail SET delivered_ms = 5000"), SQLITE_OK);
  CAF_CHECK_NOT_EQUAL(exec("UPDATE mail SET delivered_ms = NULL"), SQLITE_OK);
  CAF_CHECK_NOT_EQUAL(exec("UPDATE mail SET text = 'forged'"), SQLITE_OK);
  CAF_CHECK_NOT_EQUAL(exec("DELETE FROM mail"), SQLITE_OK);
  // A report that claims to go down, or a message up, does not fit.
  CAF_CHECK_NOT_EQUAL(exec("INSERT INTO mail (run_id, task_id, kind, "
                           "direction, text, created_ms) VALUES ('r1', 't1', "
                           "'report', 'down', 'x', 1)"),
                      SQLITE_OK);
  auto all = box.list("r1");
  CAF_REQUIRE_EQUAL(all.size(), 1u);
  CAF_CHECK_EQUAL(all[0].text, "original");
  CAF_CHECK_EQUAL(all[0].delivered_ms, std::optional<int64_t>{1200});
}

CAF_TEST(takers in several processes get each mail exactly once) {
  // Four processes take t1's mail in a loop while this one posts.
  constexpr int takers = 4;
  constexpr int mails = 300;
  auto out = dir.path() / "taken.txt";
  auto done = dir.path() / "done.flag";
  std::string env_text = "TASKFORCE_TEST_MAIL_TAKER=" + file.string() + ":"
                         + out.string() + ":" + done.string();
  std::vector<pid_t> children;
  for (int i = 0; i < takers; ++i) {
    children.push_back(test::spawn_self(env_text));
    CAF_REQUIRE_NOT_EQUAL(children.back(), -1);
  }
  std::set<int64_t> posted;
  for (int i = 0; i < mails; ++i)
    posted.insert(box.post(down("t1", "m" + std::to_string(i)), 2000 + i).id);
  std::ofstream{done} << "done\n";
  for (auto child : children) {
    int status = 0;
    ::waitpid(child, &status, 0);
    CAF_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::multiset<int64_t> taken;
  std::ifstream in(out);
  for (int64_t id; in >> id;)
    taken.insert(id);
  CAF_CHECK_EQUAL(taken.size(), posted.size());
  CAF_CHECK_EQUAL(std::set<int64_t>(taken.begin(), taken.end()), posted);
  CAF_CHECK(box.undelivered_counts("r1").empty());
}

CAF_TEST(a taker with nothing to take never waits for another writer) {
  // The run's ledger connection writes every transition; a worker looking
  // for mail that is not there must not queue behind it.
  auto quick = ledger::open(file, ledger_options{false, true, 0});
  mailbox box{quick};
  test::raw_db writer{file};
  CAF_REQUIRE_EQUAL(writer.exec("BEGIN IMMEDIATE"), SQLITE_OK);
  CAF_CHECK(box.take_undelivered("r1", "t1", 1000).empty());
  // With mail there, the taker needs the write lock: busy, nothing lost.
  CAF_REQUIRE_EQUAL(writer.exec("INSERT INTO mail (run_id, task_id, kind, "
                                "direction, text, created_ms) VALUES ('r1', "
                                "'t1', 'message', 'down', 'hello', 900)"),
                    SQLITE_OK);
  CAF_REQUIRE_EQUAL(writer.exec("COMMIT"), SQLITE_OK);
  CAF_REQUIRE_EQUAL(writer.exec("BEGIN IMMEDIATE"), SQLITE_OK);
  CAF_CHECK_EQUAL(error_of([&] {
                    box.take_undelivered("r1", "t1", 1100);
                  }),
                  std::optional<ledger_errc>{ledger_errc::sqlite});
  CAF_REQUIRE_EQUAL(writer.exec("COMMIT"), SQLITE_OK);
  CAF_CHECK_EQUAL(texts(box.take_undelivered("r1", "t1", 1200)),
                  std::vector<std::string>{"hello"});
}

CAF_TEST_FIXTURE_SCOPE_END()
