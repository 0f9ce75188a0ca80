// What a run writes down about its base in the ledger, and what recovery
// does with it: the one checkout update a kill cut short is completed, and
// nothing else; the tip the run vouched for is read back.
#define CAF_SUITE unit.base_record
#include <caf/test/unit_test.hpp>

#include "git_fixture.hpp"
#include "src/run/base_record.hpp"

using namespace taskforce;
using namespace taskforce::test;
namespace fs = std::filesystem;

namespace {

/// Writes landings down but loses their ends, as a kill right after the
/// base moved does.
struct killed_before_the_checkout : git::landing_journal {
  git::landing_journal& to;
  explicit killed_before_the_checkout(git::landing_journal& j) : to(j) {}
  void landing(const git::checkout_update& u) override {
    to.landing(u);
  }
  void landed(const git::checkout_update&, bool) override {}
};

struct record_fixture : git_fixture {
  store::ledger db = open_ledger();
  run::base_record record{db, "r1"};

  store::ledger open_ledger() {
    auto l = store::ledger::open(root / ".taskforce" / "ledger.sqlite");
    store::new_run nr;
    nr.id = "r1";
    nr.file = "TASKS.md";
    nr.file_hash = "-";
    nr.base_branch = "main";
    l.create_run(nr, 1);
    return l;
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(base_record_tests, record_fixture)

CAF_TEST(merges written down and ended leave nothing to finish) {
  record.vouch(tip_of(repo, "main"), "start", "", 0);
  auto b = task_commit("t1", {{"src/a.txt", "t1\n"}});
  auto m = git::merge_into_base(repo, b, "main", "m", who, &record);
  CAF_REQUIRE(m.status == git::merge_result::outcome::merged);
  auto st = run::read_base_state(db, "r1");
  CAF_CHECK_EQUAL(st.vouched, m.commit);
  CAF_CHECK(st.unfinished.empty());
  CAF_CHECK(run::finish_landings(repo, db, "r1", "main").empty());
  CAF_CHECK_EQUAL(porcelain(), "");
}

CAF_TEST(a merge cut short before the checkout followed is completed) {
  auto b = task_commit("t1", {{"src/a.txt", "t1\n"}, {"src/new.txt", "n\n"}});
  killed_before_the_checkout cut{record};
  auto m = git::merge_into_base(repo, b, "main", "m", who, &cut);
  CAF_REQUIRE(m.status == git::merge_result::outcome::merged);
  // The kill: index and files still hold the base.
  git_ok(root, {"read-tree", "-u", "--reset", "HEAD^1"});
  // And a person's edit elsewhere, which nothing may touch.
  write(root, "README.md", "mine\n");
  CAF_REQUIRE_EQUAL(porcelain(),
                    " M README.md\nM  src/a.txt\nD  src/new.txt\n");
  auto st = run::read_base_state(db, "r1");
  CAF_REQUIRE_EQUAL(st.unfinished.size(), 1u);
  CAF_CHECK_EQUAL(st.unfinished[0].commit, m.commit);
  auto notes = run::finish_landings(repo, db, "r1", "main");
  CAF_CHECK(notes.empty());
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "t1\n");
  CAF_CHECK_EQUAL(read_file(root / "src/new.txt"), "n\n");
  CAF_CHECK_EQUAL(porcelain(), " M README.md\n");
  // Its end is recorded: the next start has nothing to finish.
  auto again = run::read_base_state(db, "r1");
  CAF_CHECK(again.unfinished.empty());
  CAF_CHECK_EQUAL(again.vouched, m.commit);
}

CAF_TEST(a merge cut short before the base moved changes nothing) {
  auto b = task_commit("t1", {{"src/a.txt", "t1\n"}});
  auto before = tip_of(repo, "main");
  auto c = git::prepare_merge(repo, b, "main", "m", who);
  // Written down, then the kill before the ref moved.
  record.landing({c.commit, before, {"src/a.txt"}, "t1"});
  // The person meanwhile reverts a file of theirs; nothing may touch it.
  write(root, "src/a.txt", "the person's\n");
  auto notes = run::finish_landings(repo, db, "r1", "main");
  CAF_CHECK(notes.empty());
  CAF_CHECK_EQUAL(tip_of(repo, "main"), before);
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "the person's\n");
  CAF_CHECK(run::read_base_state(db, "r1").unfinished.empty());
}

CAF_TEST(a merge the base moved away from is left alone and named) {
  auto b = task_commit("t1", {{"src/a.txt", "t1\n"}});
  killed_before_the_checkout cut{record};
  auto m = git::merge_into_base(repo, b, "main", "m", who, &cut);
  CAF_REQUIRE(m.status == git::merge_result::outcome::merged);
  // The person resets the merge away, commits, and edits the file.
  git_ok(root, {"reset", "-q", "--hard", "HEAD^1"});
  write(root, "README.md", "theirs\n");
  git_ok(root, {"commit", "-qam", "theirs"});
  write(root, "src/a.txt", "mine\n");
  auto notes = run::finish_landings(repo, db, "r1", "main");
  CAF_REQUIRE_EQUAL(notes.size(), 1u);
  CAF_CHECK(notes[0].find("no longer has it") != std::string::npos);
  CAF_CHECK_EQUAL(read_file(root / "src/a.txt"), "mine\n");
  CAF_CHECK(run::read_base_state(db, "r1").unfinished.empty());
}

CAF_TEST_FIXTURE_SCOPE_END()
