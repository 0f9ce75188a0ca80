// The pure core of managed background work, without a ledger: the state
// table, write roots on a real folder tree (canonicalisation, conflicts,
// physical containment, refusals), dependencies, the claim rule, contracts
// and the baseline snapshot.
#define CAF_SUITE unit.bg_core
#include <caf/test/unit_test.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/control/bg_state.hpp"
#include "src/control/claim.hpp"
#include "src/control/contract.hpp"
#include "src/control/deps.hpp"
#include "src/control/error.hpp"
#include "src/control/roots.hpp"
#include "src/control/snapshot.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::control;
namespace fs = std::filesystem;

using strings = std::vector<std::string>;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The message of the control_error `f` throws with `code`; "" when it
/// throws nothing (or something else).
template<class F>
std::string refusal(F f, control_errc code = control_errc::bad_request) {
  try {
    f();
  } catch (const control_error& e) {
    if (e.code() == code)
      return e.what();
    return std::string{"wrong code: "} + to_string(e.code()) + ": " + e.what();
  }
  return "";
}

/// A repository-like tree: src/lib, docs, alias -> docs, src/link ->
/// ../docs, escape -> (outside), aliases of .git and .taskforce.
struct tree {
  test::temp_dir dir;
  fs::path root = dir.path() / "repo";
  fs::path outside = dir.path() / "outside";

  tree() {
    fs::create_directories(root / "src" / "lib");
    fs::create_directories(root / "docs");
    fs::create_directories(root / ".git" / "hooks");
    fs::create_directories(root / ".taskforce" / "logs");
    fs::create_directories(outside);
    dir.write("repo/docs/guide.md", "guide\n");
    dir.write("repo/src/a.ts", "a\n");
    fs::create_symlink("docs", root / "alias");
    fs::create_symlink("../docs", root / "src" / "link");
    fs::create_symlink(outside, root / "escape");
    fs::create_symlink(".git", root / "g");
    fs::create_symlink(".taskforce", root / "tf");
    fs::create_symlink(".taskforce/logs", root / "tf_logs");
  }
};

} // namespace

// --- the state table ---------------------------------------------------------

CAF_TEST(state names read back and the lifecycle allows only its moves) {
  for (auto s : {bg_state::queued, bg_state::ready, bg_state::starting,
                 bg_state::running, bg_state::blocked, bg_state::checking,
                 bg_state::done, bg_state::failed, bg_state::cancelled,
                 bg_state::interrupted}) {
    bg_state back = bg_state::done;
    CAF_CHECK(from_string(to_string(s), back));
    CAF_CHECK_EQUAL(back, s);
  }
  bg_state untouched = bg_state::failed;
  CAF_CHECK(!from_string("paused", untouched));
  CAF_CHECK_EQUAL(untouched, bg_state::failed);
  CAF_CHECK(allowed(bg_state::queued, bg_state::ready));
  CAF_CHECK(allowed(bg_state::ready, bg_state::running));
  CAF_CHECK(allowed(bg_state::running, bg_state::checking));
  CAF_CHECK(allowed(bg_state::checking, bg_state::running));
  CAF_CHECK(allowed(bg_state::checking, bg_state::done));
  CAF_CHECK(allowed(bg_state::failed, bg_state::ready));
  // No way back from the final states, no skipping the token.
  CAF_CHECK(!allowed(bg_state::done, bg_state::running));
  CAF_CHECK(!allowed(bg_state::cancelled, bg_state::ready));
  CAF_CHECK(!allowed(bg_state::done, bg_state::cancelled));
  CAF_CHECK(!allowed(bg_state::queued, bg_state::running));
  CAF_CHECK(!allowed(bg_state::queued, bg_state::done));
  CAF_CHECK(!allowed(bg_state::running, bg_state::running));
  // Every live state can be cancelled.
  for (auto s : {bg_state::queued, bg_state::ready, bg_state::starting,
                 bg_state::running, bg_state::blocked, bg_state::checking,
                 bg_state::failed, bg_state::interrupted})
    CAF_CHECK(allowed(s, bg_state::cancelled));
}

CAF_TEST(slots are held by dispatched work only) {
  CAF_CHECK(!holds_slot(bg_state::queued, false));
  CAF_CHECK(holds_slot(bg_state::ready, true));
  CAF_CHECK(holds_slot(bg_state::running, true));
  CAF_CHECK(holds_slot(bg_state::checking, true));
  CAF_CHECK(holds_slot(bg_state::blocked, true));
  // Blocked by a dependency, never dispatched: holds nothing.
  CAF_CHECK(!holds_slot(bg_state::blocked, false));
  CAF_CHECK(!holds_slot(bg_state::interrupted, true));
  CAF_CHECK(!holds_slot(bg_state::done, true));
  CAF_CHECK(may_write_in(bg_state::running));
  CAF_CHECK(!may_write_in(bg_state::blocked));
  CAF_CHECK(!may_write_in(bg_state::checking));
}

// --- roots -------------------------------------------------------------------

CAF_TEST(roots are deduplicated and nested ones fold into their ancestor) {
  tree t;
  scope::physical_root repo{t.root};
  CAF_CHECK_EQUAL(canonical_roots(repo, {"src/lib", "./src", "src", "src/lib"}),
                  strings{"src"});
  CAF_CHECK_EQUAL(canonical_roots(repo, {"src/lib", "docs/"}),
                  (strings{"docs", "src/lib"}));
  CAF_CHECK(roots_conflict("src", "src/lib"));
  CAF_CHECK(roots_conflict("src/lib", "src"));
  CAF_CHECK(roots_conflict("src", "src"));
  CAF_CHECK(!roots_conflict("src", "docs"));
  CAF_CHECK(!roots_conflict("src", "srcx"));
  CAF_CHECK(!roots_conflict("src/lib", "src/library"));
  CAF_CHECK_EQUAL(fold_roots({"src-x", "src/lib", "src", "srcx/a"}),
                  (strings{"src", "src-x", "srcx/a"}));
}

CAF_TEST(a symlinked root is its target) {
  tree t;
  scope::physical_root repo{t.root};
  CAF_CHECK_EQUAL(canonical_roots(repo, {"alias", "docs"}), strings{"docs"});
  // A path that does not exist yet, through its nearest existing parent.
  CAF_CHECK_EQUAL(canonical_root(repo, "alias/new/deep"), "docs/new/deep");
  CAF_CHECK_EQUAL(canonical_root(repo, "src/new"), "src/new");
  // Absolute inside the repository is taken relative to it.
  CAF_CHECK_EQUAL(canonical_root(repo, (t.root / "src" / "lib").string()),
                  "src/lib");
}

CAF_TEST(roots outside the repository or in its own folders are refused) {
  tree t;
  scope::physical_root repo{t.root};
  auto tmp_nope = (fs::temp_directory_path() / "nope").string();
  for (auto root :
       {tmp_nope, std::string{"../nope"}, std::string{".git/config"},
        std::string{".taskforce/ledger.sqlite"}, std::string{"escape/output"},
        std::string{"."}, std::string{""}, std::string{"src/../../repo2"}}) {
    auto why = refusal([&] {
      canonical_roots(repo, {"src", root});
    });
    CAF_CHECK(!why.empty());
    CAF_CHECK(contains(why, "root"));
    CAF_MESSAGE(root << " -> " << why);
  }
  CAF_CHECK(contains(refusal([&] {
                       canonical_root(repo, "../nope");
                     }),
                     "escapes the repository"));
  CAF_CHECK(contains(refusal([&] {
                       canonical_root(repo, tmp_nope);
                     }),
                     "outside the repository"));
  CAF_CHECK(contains(refusal([&] {
                       canonical_root(repo, "escape/output");
                     }),
                     "outside the repository"));
  CAF_CHECK(contains(refusal([&] {
                       canonical_root(repo, ".git/config");
                     }),
                     ".git"));
}

CAF_TEST(symlink aliases of.git and.taskforce are refused) {
  tree t;
  scope::physical_root repo{t.root};
  for (auto root :
       {"g", "g/hooks", "tf", "tf/ledger.sqlite", "tf_logs", "tf_logs/x"}) {
    auto why = refusal([&] {
      canonical_root(repo, root);
    });
    CAF_CHECK(contains(why, ".git") || contains(why, ".taskforce"));
    CAF_MESSAGE(root << " -> " << why);
  }
}

CAF_TEST(containment is physical) {
  tree t;
  scope::physical_root repo{t.root};
  auto in_src = within_roots(repo, "src/link/guide.md", {"src"});
  CAF_CHECK(!in_src.inside);
  CAF_CHECK_EQUAL(in_src.path, "docs/guide.md");
  CAF_CHECK(contains(in_src.reason, "outside the task's roots src"));
  auto in_docs = within_roots(repo, "src/link/guide.md", {"docs"});
  CAF_CHECK(in_docs.inside);
  CAF_CHECK_EQUAL(in_docs.root, std::optional<std::string>{"docs"});
  CAF_CHECK(within_roots(repo, "src/lib/new.ts", {"src"}).inside);
  CAF_CHECK(within_roots(repo, (t.root / "src/a.ts").string(), {"src"}).inside);
  CAF_CHECK(!within_roots(repo, "srcx/a.ts", {"src"}).inside);
  auto git = within_roots(repo, "g/hooks/pre-commit", {"src"});
  CAF_CHECK(!git.inside);
  CAF_CHECK(contains(git.reason, ".git"));
  auto none = within_roots(repo, "src/a.ts", {});
  CAF_CHECK(!none.inside);
  CAF_CHECK(contains(none.reason, "it has none"));
}

// --- dependencies ------------------------------------------------------------

CAF_TEST(a dependency cycle is found) {
  CAF_CHECK(!find_cycle({{"b", {"a"}}, {"c", {"a", "b"}}}));
  auto cycle = find_cycle({{"a", {"b"}}, {"b", {"a"}}});
  CAF_REQUIRE(cycle);
  CAF_CHECK_EQUAL(cycle->front(), cycle->back());
  CAF_CHECK_EQUAL(cycle->size(), 3u);
  CAF_CHECK(find_cycle({{"a", {"b"}}, {"b", {"c"}}, {"c", {"a"}}}));
  CAF_CHECK(find_cycle({{"a", {"a"}}}));
}

CAF_TEST(a failed or cancelled prerequisite blocks with its name) {
  auto waiting = status_of({{"base", bg_state::running}});
  CAF_CHECK(!waiting.ready);
  CAF_CHECK_EQUAL(waiting.pending, strings{"base"});
  CAF_CHECK(waiting.reason().empty());
  auto failed = status_of({{"base", bg_state::failed}});
  CAF_CHECK(!failed.ready);
  CAF_CHECK_EQUAL(failed.reason(), "dependency base is failed");
  CAF_CHECK_EQUAL(
    status_of({{"a", bg_state::done}, {"b", bg_state::cancelled}}).reason(),
    "dependency b is cancelled");
  CAF_CHECK(status_of({{"a", bg_state::done}}).ready);
  CAF_CHECK(status_of({}).ready);
}

// --- the claim rule ----------------------------------------------------------

CAF_TEST(a root conflicts with its ancestors and descendants held by another) {
  std::vector<lease> held{{"base", lease_kind::root, "src"},
                          {"base", lease_kind::lock, "db"}};
  auto c = find_conflict("child", {"src/lib"}, {}, held);
  CAF_REQUIRE(c);
  CAF_CHECK_EQUAL(c->holder, "base");
  CAF_CHECK_EQUAL(c->held, "src");
  CAF_CHECK_EQUAL(c->describe(), "root src/lib overlaps root src of base");
  CAF_CHECK(!find_conflict("child", {"docs"}, {}, held));
  // Its own leases never conflict (taking them again is idempotent).
  CAF_CHECK(!find_conflict("base", {"src"}, {"db"}, held));
  auto lock = find_conflict("child", {"docs"}, {"db"}, held);
  CAF_REQUIRE(lock);
  CAF_CHECK_EQUAL(lock->describe(), "lock db is held by base");
}

CAF_TEST(
  the oldest eligible goes first and a named one never takes an older one) {
  std::vector<candidate> queued{
    {"dependent", {"child"}, {}, false, "waits for dependency"},
    {"conflicting", {"dep/file"}, {}, true, ""},
    {"free", {"docs"}, {}, true, ""}};
  std::vector<lease> held{{"dependency", lease_kind::root, "dep"}};
  auto c = choose(queued, held, 2, true);
  CAF_REQUIRE(c.index);
  CAF_CHECK_EQUAL(queued[*c.index].id, "free");
  auto only = choose(queued, held, 2, true, std::string{"conflicting"});
  CAF_CHECK(!only.index);
  CAF_CHECK(contains(only.reason, "overlaps root dep of dependency"));
  queued.pop_back();
  auto none = choose(queued, held, 2, true);
  CAF_CHECK(!none.index);
  CAF_CHECK(contains(none.reason, "dependent waits for dependency"));
  // Without enforced roots only locks conflict.
  auto loose = choose(queued, held, 2, false);
  CAF_REQUIRE(loose.index);
  CAF_CHECK_EQUAL(queued[*loose.index].id, "conflicting");
  auto full = choose(queued, {}, 0, true);
  CAF_CHECK(!full.index);
  CAF_CHECK(contains(full.reason, "no free slot"));
  // A named task is never overtaken by nor overtakes older ones.
  std::vector<candidate> two{{"older", {"a"}, {}, true, ""},
                             {"newer", {"b"}, {}, true, ""}};
  auto named = choose(two, {}, 1, true, std::string{"newer"});
  CAF_REQUIRE(named.index);
  CAF_CHECK_EQUAL(two[*named.index].id, "newer");
}

// --- contracts ---------------------------------------------------------------

CAF_TEST(a contract needs its names and prompt and refuses empty entries) {
  bg_contract good{"Fix",   "coder", "Fix it", std::nullopt,
                   {"src"}, {"db"},  {},       {"make test"}};
  validate_contract(good);
  auto with = [&](auto edit) {
    auto c = good;
    edit(c);
    return refusal([&] {
      validate_contract(c);
    });
  };
  CAF_CHECK(contains(with([](bg_contract& c) {
                       c.title = " ";
                     }),
                     "title"));
  CAF_CHECK(contains(with([](bg_contract& c) {
                       c.agent = "";
                     }),
                     "agent"));
  CAF_CHECK(contains(with([](bg_contract& c) {
                       c.prompt = "\n";
                     }),
                     "prompt"));
  CAF_CHECK(contains(with([](bg_contract& c) {
                       c.roots = {"src", ""};
                     }),
                     "roots entry 2"));
  CAF_CHECK(contains(with([](bg_contract& c) {
                       c.validations = {""};
                     }),
                     "validations entry 1"));
  CAF_CHECK(contains(with([](bg_contract& c) {
                       c.locks = {"a\nb"};
                     }),
                     "control characters"));
  CAF_CHECK(contains(with([](bg_contract& c) {
                       c.title = std::string(max_name_bytes + 1, 'x');
                     }),
                     "longer than"));
  CAF_CHECK_EQUAL(unique_in_order({"b", "a", "b"}), (strings{"b", "a"}));
}

// --- the baseline snapshot ---------------------------------------------------

CAF_TEST(a snapshot sees added modified and deleted files but not a touch) {
  tree t;
  t.dir.write("repo/src/keep.ts", "keep\n");
  t.dir.write("repo/src/edit.ts", "one\n");
  t.dir.write("repo/src/gone.ts", "gone\n");
  t.dir.write("repo/src/.git/config", "nested repository\n");
  t.dir.write("repo/docs/other.md", "not a root\n");
  fs::create_symlink(t.outside, t.root / "src" / "outlink");
  t.dir.write("outside/big.txt", "never walked\n");
  auto before = take_snapshot(t.root, {"src", "new_root"});
  CAF_CHECK_EQUAL(before.count("src/keep.ts"), 1u);
  CAF_CHECK_EQUAL(before["new_root"], absent_fingerprint);
  // A nested repository's git folder is recorded: writes there are seen.
  CAF_CHECK_EQUAL(before.count("src/.git/config"), 1u);
  CAF_CHECK_EQUAL(before.count("docs/other.md"), 0u);
  // The symlinked folder is a link, never entered.
  CAF_CHECK(contains(before["src/outlink"], "link:"));
  CAF_CHECK_EQUAL(before.count("src/outlink/big.txt"), 0u);
  t.dir.write("repo/src/edit.ts", "two\n"); // same size, other content
  fs::remove(t.root / "src" / "gone.ts");
  t.dir.write("repo/src/lib/new.ts", "new\n");
  t.dir.write("repo/new_root/x", "x\n");
  t.dir.write("repo/docs/other.md", "changed, but not under a root\n");
  // A touch changes the time, not the content.
  fs::last_write_time(t.root / "src" / "keep.ts",
                      fs::last_write_time(t.root / "src" / "keep.ts")
                        + std::chrono::hours(1));
  auto diff = compare(before, take_snapshot(t.root, {"src", "new_root"}));
  CAF_CHECK_EQUAL(diff.added, (strings{"new_root/x", "src/lib/new.ts"}));
  CAF_CHECK_EQUAL(diff.modified, strings{"src/edit.ts"});
  CAF_CHECK_EQUAL(diff.deleted, strings{"src/gone.ts"});
  CAF_CHECK_EQUAL(diff.all(), (strings{"new_root/x", "src/edit.ts",
                                       "src/gone.ts", "src/lib/new.ts"}));
}

CAF_TEST(a file replaced by a symlink is modified) {
  tree t;
  auto before = take_snapshot(t.root, {"src"});
  fs::remove(t.root / "src" / "a.ts");
  fs::create_symlink("../docs/guide.md", t.root / "src" / "a.ts");
  auto diff = compare(before, take_snapshot(t.root, {"src"}));
  CAF_CHECK_EQUAL(diff.modified, strings{"src/a.ts"});
  CAF_CHECK(compare(before, before).empty());
}
