// The store of managed background tasks on a real ledger and a real folder
// tree: contracts, one-use tokens, slots and leases, dependencies, the
// completion gate's bookkeeping, cancels and restarts (run tasks' leases:
// reservation_test.cpp).
#define CAF_SUITE unit.bg_store
#include <caf/test/unit_test.hpp>

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "src/control/store.hpp"
#include "src/store/ledger.hpp"
#include "test.hpp"
#include "unit/store_helpers.hpp"

using namespace taskforce;
using namespace taskforce::control;
namespace fs = std::filesystem;

using strings = std::vector<std::string>;

namespace {

constexpr int64_t t0 = 1'000'000;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The message of the control_error `f` throws with `code`; "" when it
/// throws nothing, "wrong code …" for another code.
template<class F>
std::string refusal(control_errc code, F f) {
  try {
    f();
  } catch (const control_error& e) {
    if (e.code() == code)
      return e.what();
    return std::string{"wrong code: "} + to_string(e.code()) + ": " + e.what();
  }
  return "";
}

bg_contract contract(const std::string& title, strings roots, strings deps = {},
                     strings validations = {}) {
  bg_contract c;
  c.title = title;
  c.agent = "coder";
  c.prompt = "Do " + title;
  c.session = "orchestrator";
  c.roots = std::move(roots);
  c.deps = std::move(deps);
  c.validations = std::move(validations);
  return c;
}

/// A repository folder (src, docs) with its ledger and a store on it.
struct fixture {
  test::temp_dir dir;
  fs::path repo = dir.path() / "repo";
  std::optional<store::ledger> db;
  std::optional<bg_store> bg;
  bg_limits limits{4, true};

  fixture() {
    fs::create_directories(repo / "src");
    fs::create_directories(repo / "docs");
    dir.write("repo/src/a.ts", "a\n");
    dir.write("repo/docs/guide.md", "guide\n");
    open();
  }

  fs::path ledger_path() const {
    return repo / ".taskforce" / store::ledger_file_name;
  }

  void open() {
    bg.reset();
    db.reset();
    db.emplace(store::ledger::open(ledger_path()));
    bg.emplace(*db, repo);
  }

  bg_task task(const std::string& id) {
    return bg->status(id).at(0);
  }

  /// prepare, expecting a dispatch.
  dispatch dispatched(const bg_contract& c, int64_t now = t0) {
    auto r = bg->prepare(c, limits, now);
    CAF_REQUIRE(r.dispatch);
    return *r.dispatch;
  }

  /// prepare and link: a running task's id.
  std::string running(const bg_contract& c, const std::string& child,
                      int64_t now = t0) {
    auto d = dispatched(c, now);
    bg->link(d.token, child, now + 1);
    return d.task_id;
  }

  void write(const std::string& rel, const std::string& text) {
    dir.write("repo/" + rel, text);
  }

  int64_t count(const std::string& sql) {
    test::raw_db raw{ledger_path()};
    return raw.scalar(sql);
  }
};

strings ids(const std::vector<bg_change>& changes) {
  strings result;
  for (auto& c : changes)
    result.push_back(c.task_id + ":" + c.kind + ":" + to_string(c.to));
  return result;
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(bg_store_tests, fixture)

// --- contracts and tokens ----------------------------------------------------

CAF_TEST(a prepared task gets a slot and a one use token) {
  auto r = bg->prepare(contract("one", {"./src", "src/lib"}), limits, t0);
  CAF_REQUIRE(r.dispatch);
  CAF_CHECK_EQUAL(r.task.id, "bg-1");
  CAF_CHECK_EQUAL(r.task.state, bg_state::ready);
  CAF_CHECK_EQUAL(r.task.roots, strings{"src"});
  CAF_CHECK_EQUAL(r.task.leased_roots, strings{"src"});
  CAF_CHECK_EQUAL(r.dispatch->token.size(), 32u);
  CAF_CHECK_EQUAL(r.dispatch->token.find_first_not_of("0123456789abcdef"),
                  std::string::npos);
  CAF_CHECK_EQUAL(r.dispatch->expires_ms, t0 + token_lifetime_ms);
  CAF_CHECK_EQUAL(r.dispatch->prompt, "Do one");
  CAF_CHECK_EQUAL(r.dispatch->kind, token_kind::dispatch);
  CAF_CHECK_EQUAL(ids(r.changes),
                  (strings{"bg-1:created:queued", "bg-1:state:ready"}));
  // The status never shows the token.
  CAF_CHECK_EQUAL(r.task.token,
                  std::optional<token_kind>{token_kind::dispatch});
  auto other = bg->prepare(contract("two", {"docs"}), limits, t0);
  CAF_REQUIRE(other.dispatch);
  CAF_CHECK_NOT_EQUAL(other.dispatch->token, r.dispatch->token);
  CAF_CHECK_EQUAL(other.task.id, "bg-2");
}

CAF_TEST(a refused contract leaves nothing behind) {
  for (auto c :
       {contract("bad root", {"../outside"}),
        contract("bad dep", {"src"}, {"bg-9"}), contract("", {"src"})}) {
    auto why = refusal(control_errc::bad_request, [&] {
      bg->prepare(c, limits, t0);
    });
    CAF_CHECK(!why.empty());
    CAF_MESSAGE(why);
  }
  CAF_CHECK(bg->status().empty());
  CAF_CHECK(bg->leases().empty());
  CAF_CHECK(bg->events().empty());
  CAF_CHECK_EQUAL(count("SELECT count(*) FROM bg_tasks"), 0);
}

CAF_TEST(state and events survive closing and reopening the ledger) {
  auto id = running(contract("a", {"src"}), "child-1");
  open();
  auto t = task(id);
  CAF_CHECK_EQUAL(t.state, bg_state::running);
  CAF_CHECK_EQUAL(t.child_session, std::optional<std::string>{"child-1"});
  CAF_CHECK_EQUAL(t.leased_roots, strings{"src"});
  strings kinds;
  for (auto& e : bg->events(id))
    kinds.push_back(e.kind + ":" + (e.to ? to_string(*e.to) : "-"));
  CAF_CHECK_EQUAL(kinds,
                  (strings{"created:queued", "state:ready", "state:running"}));
  // The event log is append-only.
  test::raw_db raw{ledger_path()};
  CAF_CHECK_NOT_EQUAL(raw.exec("DELETE FROM bg_events"), 0);
  CAF_CHECK_EQUAL(bg->events(id).size(), 3u);
}

CAF_TEST(a token links once) {
  auto d = dispatched(contract("a", {"src"}));
  CAF_CHECK(contains(refusal(control_errc::not_found,
                             [&] {
                               bg->link("0123", "child", t0);
                             }),
                     "unknown token"));
  auto linked = bg->link(d.token, "child-1", t0 + 1);
  CAF_CHECK_EQUAL(linked.task.state, bg_state::running);
  CAF_CHECK(!linked.abort_child);
  CAF_CHECK(contains(refusal(control_errc::token_used,
                             [&] {
                               bg->link(d.token, "child-1", t0 + 2);
                             }),
                     "used already"));
  CAF_CHECK(!refusal(control_errc::token_used, [&] {
               bg->link(d.token, "child-2", t0 + 2);
             }).empty());
  CAF_CHECK_EQUAL(task(d.task_id).child_session,
                  std::optional<std::string>{"child-1"});
}

CAF_TEST(a token consumed by a before hook is consumed once) {
  auto d = dispatched(contract("a", {"src"}));
  auto consumed = bg->consume(d.token, t0 + 1);
  CAF_CHECK_EQUAL(consumed.task.state, bg_state::starting);
  CAF_CHECK(!refusal(control_errc::token_used, [&] {
               bg->consume(d.token, t0 + 2);
             }).empty());
  CAF_CHECK_EQUAL(bg->link(d.token, "child", t0 + 3).task.state,
                  bg_state::running);
  CAF_CHECK(!refusal(control_errc::token_used, [&] {
               bg->link(d.token, "other", t0 + 4);
             }).empty());
}

CAF_TEST(a child session cannot be linked to two live tasks) {
  running(contract("a", {"src"}), "child");
  auto d = dispatched(contract("b", {"docs"}));
  CAF_CHECK(contains(refusal(control_errc::bad_request,
                             [&] {
                               bg->link(d.token, "child", t0 + 2);
                             }),
                     "child of task bg-1"));
  CAF_CHECK(!refusal(control_errc::bad_request, [&] {
               bg->link(d.token, "", t0 + 2);
             }).empty());
  CAF_CHECK_EQUAL(task(d.task_id).state, bg_state::ready);
}

CAF_TEST(an expired token returns its task to the queue) {
  auto first = dispatched(contract("first", {"src"}));
  auto second = bg->prepare(contract("second", {"src/lib"}), limits, t0);
  CAF_CHECK_EQUAL(second.task.state, bg_state::queued);
  auto late = t0 + 6 * 60 * 1000;
  auto claimed = bg->start(second.task.id, limits, late);
  // The first's lease was freed by the expiry, so the second got the root.
  CAF_REQUIRE(claimed.dispatch);
  CAF_CHECK_EQUAL(claimed.dispatch->task_id, second.task.id);
  CAF_CHECK_EQUAL(ids(claimed.changes),
                  (strings{"bg-1:state:queued", "bg-2:state:ready"}));
  auto t = task(first.task_id);
  CAF_CHECK_EQUAL(t.state, bg_state::queued);
  CAF_CHECK(!t.token);
  CAF_CHECK(t.leased_roots.empty());
  CAF_CHECK(contains(*t.reason, "expired"));
  CAF_CHECK(contains(refusal(control_errc::token_expired,
                             [&] {
                               bg->link(first.token, "c", late + 1);
                             }),
                     "expired"));
  CAF_CHECK(!refusal(control_errc::token_expired, [&] {
               bg->consume(first.token, late + 1);
             }).empty());
}

CAF_TEST(an expired token is refused before anything expires it) {
  auto d = dispatched(contract("a", {"src"}));
  CAF_CHECK(!refusal(control_errc::token_expired, [&] {
               bg->link(d.token, "c", t0 + token_lifetime_ms);
             }).empty());
  CAF_CHECK_EQUAL(task(d.task_id).state, bg_state::ready);
  CAF_CHECK_EQUAL(ids(bg->expire(t0 + token_lifetime_ms)),
                  strings{"bg-1:state:queued"});
}

CAF_TEST(two stores on one fresh ledger both work) {
  auto other_db = store::ledger::open(ledger_path());
  bg_store other{other_db, repo};
  auto a = bg->prepare(contract("a", {"src"}), limits, t0);
  auto b = other.prepare(contract("b", {"src/lib"}), limits, t0 + 1);
  CAF_CHECK_EQUAL(a.task.id, "bg-1");
  CAF_CHECK_EQUAL(b.task.id, "bg-2");
  // The second store sees the first's lease.
  CAF_CHECK_EQUAL(b.task.state, bg_state::queued);
  CAF_CHECK(contains(*b.task.reason, "overlaps root src of bg-1"));
  CAF_CHECK_EQUAL(bg->status().size(), 2u);
}

// --- slots, leases and dependencies ------------------------------------------

CAF_TEST(one slot hands out one task at a time) {
  limits.max_concurrent = 1;
  auto first = dispatched(contract("first", {"src"}));
  auto second = bg->prepare(contract("second", {"docs"}), limits, t0);
  CAF_CHECK_EQUAL(second.task.state, bg_state::queued);
  CAF_CHECK(contains(*second.task.reason, "no free slot"));
  auto none = bg->start(std::nullopt, limits, t0 + 1);
  CAF_CHECK(!none.dispatch);
  CAF_CHECK(contains(none.reason, "no free slot"));
  bg->link(first.token, "child", t0 + 2);
  auto done = bg->begin_completion(
    {first.task_id, completion_status::done, "did it", {}}, limits, t0 + 3);
  CAF_CHECK(done.accepted);
  CAF_CHECK_EQUAL(done.task.state, bg_state::done);
  auto next = bg->start(std::nullopt, limits, t0 + 4);
  CAF_REQUIRE(next.dispatch);
  CAF_CHECK_EQUAL(next.dispatch->task_id, second.task.id);
}

CAF_TEST(starting a named task never claims older work) {
  limits.max_concurrent = 1;
  auto busy = dispatched(contract("busy", {"src"}));
  auto older = bg->prepare(contract("older", {"docs"}), limits, t0);
  auto newer = bg->prepare(contract("newer", {"docs/x"}), limits, t0);
  bg->cancel(busy.task_id, t0 + 1);
  bg->cancel(busy.task_id, t0 + 2); // the unlinked child is given up on
  auto r = bg->start(newer.task.id, limits, t0 + 3);
  CAF_REQUIRE(r.dispatch);
  CAF_CHECK_EQUAL(r.dispatch->task_id, newer.task.id);
  CAF_CHECK_EQUAL(task(older.task.id).state, bg_state::queued);
  CAF_CHECK(
    contains(bg->start(older.task.id, limits, t0 + 4).reason, "no free slot"));
  CAF_CHECK(!refusal(control_errc::not_found, [&] {
               bg->start(std::string{"bg-99"}, limits, t0);
             }).empty());
}

CAF_TEST(dependencies and overlapping roots hold work back) {
  limits.max_concurrent = 2;
  auto dependency = dispatched(contract("dependency", {"dep"}));
  auto dependent = bg->prepare(
    contract("dependent", {"child"}, {dependency.task_id}), limits, t0);
  auto conflicting
    = bg->prepare(contract("conflicting", {"dep/file"}), limits, t0);
  CAF_CHECK_EQUAL(dependent.task.state, bg_state::queued);
  CAF_CHECK_EQUAL(conflicting.task.state, bg_state::queued);
  auto none = bg->start(std::nullopt, limits, t0 + 1);
  CAF_CHECK(!none.dispatch);
  CAF_MESSAGE(none.reason);
  bg->link(dependency.token, "c1", t0 + 2);
  bg->begin_completion({dependency.task_id, completion_status::done, "", {}},
                       limits, t0 + 3);
  auto next = bg->start(std::nullopt, limits, t0 + 4);
  CAF_REQUIRE(next.dispatch);
  CAF_CHECK_EQUAL(next.dispatch->task_id, dependent.task.id);
}

CAF_TEST(a failed dependency blocks its dependents) {
  auto bad = running(contract("bad", {"src"}), "c1");
  auto blocked = bg->prepare(contract("blocked", {"docs"}, {bad}), limits, t0);
  CAF_CHECK_EQUAL(blocked.task.state, bg_state::queued);
  CAF_CHECK(contains(*blocked.task.reason, "waits for bg-1"));
  auto changes = bg->fail(bad, "the child crashed", t0 + 5);
  CAF_CHECK_EQUAL(ids(changes),
                  (strings{"bg-1:state:failed", "bg-2:state:blocked"}));
  auto t = task(blocked.task.id);
  CAF_CHECK_EQUAL(t.state, bg_state::blocked);
  CAF_CHECK_EQUAL(t.reason, std::optional<std::string>{"dependency bg-1 is "
                                                       "failed"});
  CAF_CHECK(!bg->start(std::nullopt, limits, t0 + 6).dispatch);
  // A task blocked by a dependency holds no slot.
  limits.max_concurrent = 1;
  CAF_CHECK(bg->prepare(contract("free", {"other"}), limits, t0 + 7).dispatch);
  // A new task depending on the failed one is blocked at once.
  auto later = bg->prepare(contract("later", {"x"}, {bad}), limits, t0 + 8);
  CAF_CHECK_EQUAL(later.task.state, bg_state::blocked);
}

CAF_TEST(a failed dependency continued to done unblocks) {
  auto bad = running(contract("prerequisite", {"src"}), "c1");
  auto dependent
    = bg->prepare(contract("dependent", {"docs"}, {bad}), limits, t0);
  bg->fail(bad, "crashed", t0 + 1);
  CAF_CHECK_EQUAL(task(dependent.task.id).state, bg_state::blocked);
  auto again = bg->continue_task(bad, "try again", limits, t0 + 2);
  CAF_REQUIRE(again.dispatch);
  // No longer failed: its dependent waits again instead of being blocked.
  CAF_CHECK_EQUAL(task(dependent.task.id).state, bg_state::queued);
  bg->link(again.dispatch->token, "c2", t0 + 3);
  bg->begin_completion({bad, completion_status::done, "", {}}, limits, t0 + 4);
  auto next = bg->start(std::nullopt, limits, t0 + 5);
  CAF_REQUIRE(next.dispatch);
  CAF_CHECK_EQUAL(next.dispatch->task_id, dependent.task.id);
}

CAF_TEST(a dependency cycle is refused) {
  limits.max_concurrent = 0; // everything stays queued
  auto a = bg->prepare(contract("a", {"a"}), limits, t0).task.id;
  auto b = bg->prepare(contract("b", {"b"}, {a}), limits, t0).task.id;
  CAF_CHECK(contains(refusal(control_errc::bad_request,
                             [&] {
                               bg->add_dependency(a, b, t0);
                             }),
                     "dependency cycle"));
  CAF_CHECK(task(a).deps.empty());
  CAF_CHECK(!refusal(control_errc::bad_request, [&] {
               bg->add_dependency(a, a, t0);
             }).empty());
  auto c = bg->prepare(contract("c", {"c"}), limits, t0).task.id;
  bg->add_dependency(c, a, t0);
  CAF_CHECK_EQUAL(task(c).deps, strings{a});
}

// --- the completion gate -----------------------------------------------------

CAF_TEST(a claim must match the changes recorded under the roots) {
  auto id = running(contract("a", {"src"}), "child");
  write("src/new.ts", "new\n");
  write("src/a.ts", "changed\n");
  write("docs/guide.md", "outside the roots\n");
  auto diff = bg->recorded_changes(id);
  CAF_CHECK_EQUAL(diff.added, strings{"src/new.ts"});
  CAF_CHECK_EQUAL(diff.modified, strings{"src/a.ts"});
  auto empty = bg->begin_completion({id, completion_status::done, "", {}},
                                    limits, t0 + 5);
  CAF_CHECK(!empty.accepted);
  CAF_CHECK(contains(empty.reason, "does not match"));
  CAF_CHECK_EQUAL(empty.unclaimed, (strings{"src/a.ts", "src/new.ts"}));
  CAF_CHECK_EQUAL(empty.task.state, bg_state::running);
  auto outside
    = bg->begin_completion({id,
                            completion_status::done,
                            "",
                            {"src/a.ts", "src/new.ts", "docs/guide.md"}},
                           limits, t0 + 6);
  CAF_CHECK(!outside.accepted);
  CAF_CHECK_EQUAL(outside.outside, strings{"docs/guide.md"});
  auto extra = bg->begin_completion(
    {id, completion_status::done, "", {"src/a.ts", "src/new.ts", "src/z.ts"}},
    limits, t0 + 7);
  CAF_CHECK(!extra.accepted);
  CAF_CHECK_EQUAL(extra.unchanged, strings{"src/z.ts"});
  auto good
    = bg->begin_completion({id,
                            completion_status::done,
                            "done",
                            {(repo / "src/new.ts").string(), "./src/a.ts"}},
                           limits, t0 + 8);
  CAF_CHECK(good.accepted);
  CAF_CHECK_EQUAL(good.task.state, bg_state::done);
  CAF_CHECK_EQUAL(good.task.files, (strings{"src/a.ts", "src/new.ts"}));
  CAF_CHECK(good.task.leased_roots.empty());
}

CAF_TEST(without enforced roots a claim is not compared) {
  limits.enforce_write_roots = false;
  auto id = running(contract("a", {"src"}), "child");
  write("src/new.ts", "new\n");
  auto r = bg->begin_completion({id, completion_status::done, "", {}}, limits,
                                t0 + 5);
  CAF_CHECK(r.accepted);
}

CAF_TEST(a failed validation puts the task back to running) {
  auto first = dispatched(contract("first", {"src"}, {}, {"true"}));
  auto second = bg->prepare(contract("second", {"src/sub"}), limits, t0);
  CAF_CHECK_EQUAL(second.task.state, bg_state::queued);
  bg->link(first.token, "child", t0 + 1);
  auto check = bg->begin_completion(
    {first.task_id, completion_status::done, "done", {}}, limits, t0 + 2);
  CAF_CHECK(check.accepted);
  CAF_CHECK_EQUAL(check.task.state, bg_state::checking);
  CAF_CHECK_EQUAL(check.validations, strings{"true"});
  auto failed = bg->finish_completion(first.task_id,
                                      {false,
                                       "Validation failed: `true` "
                                       "exited with 1",
                                       "FAIL: test"},
                                      t0 + 3);
  CAF_CHECK_EQUAL(failed.task.state, bg_state::running);
  CAF_CHECK(contains(*failed.task.reason, "Validation failed"));
  CAF_CHECK_EQUAL(failed.task.output_tail,
                  std::optional<std::string>{"FAIL: test"});
  CAF_CHECK_EQUAL(failed.task.leased_roots, strings{"src"});
  bg->begin_completion({first.task_id, completion_status::done, "done", {}},
                       limits, t0 + 4);
  auto passed = bg->finish_completion(first.task_id, {true, "", ""}, t0 + 5);
  CAF_CHECK_EQUAL(passed.task.state, bg_state::done);
  CAF_CHECK(passed.task.leased_roots.empty());
  auto next = bg->start(std::nullopt, limits, t0 + 6);
  CAF_REQUIRE(next.dispatch);
  CAF_CHECK_EQUAL(next.dispatch->task_id, second.task.id);
}

CAF_TEST(a second completion is already being processed and a cancel wins) {
  auto id = running(contract("a", {"src"}, {}, {"make test"}), "child");
  auto first = bg->begin_completion({id, completion_status::done, "", {}},
                                    limits, t0 + 2);
  CAF_CHECK_EQUAL(first.task.state, bg_state::checking);
  CAF_CHECK(contains(refusal(control_errc::invalid_state,
                             [&] {
                               bg->begin_completion(
                                 {id, completion_status::done, "", {}}, limits,
                                 t0 + 3);
                             }),
                     "already being processed"));
  auto cancelled = bg->cancel(id, t0 + 4);
  CAF_CHECK_EQUAL(cancelled.abort_child, std::optional<std::string>{"child"});
  CAF_CHECK(cancelled.released);
  CAF_CHECK(
    contains(refusal(control_errc::invalid_state,
                     [&] {
                       bg->finish_completion(id, {true, "", ""}, t0 + 5);
                     }),
             "is cancelled"));
  CAF_CHECK_EQUAL(task(id).state, bg_state::cancelled);
}

CAF_TEST(a blocked task continues once per token) {
  auto d = dispatched(contract("a", {"src"}));
  bg->link(d.token, "child", t0 + 1);
  auto blocked = bg->begin_completion(
    {d.task_id, completion_status::blocked, "which database?", {}}, limits,
    t0 + 2);
  CAF_CHECK_EQUAL(blocked.task.state, bg_state::blocked);
  CAF_CHECK_EQUAL(blocked.task.reason,
                  std::optional<std::string>{"which database?"});
  CAF_CHECK_EQUAL(blocked.task.leased_roots, strings{"src"});
  auto c = bg->continue_task(d.task_id, "use A", limits, t0 + 3);
  CAF_REQUIRE(c.dispatch);
  CAF_CHECK_EQUAL(c.dispatch->kind, token_kind::continuation);
  CAF_CHECK_EQUAL(c.dispatch->prompt, "Do a\n\nContinuation request: use A");
  CAF_CHECK_EQUAL(c.task.state, bg_state::ready);
  CAF_CHECK(contains(refusal(control_errc::invalid_state,
                             [&] {
                               bg->continue_task(d.task_id, "use B", limits,
                                                 t0 + 4);
                             }),
                     "cannot continue yet"));
  CAF_CHECK_EQUAL(bg->link(c.dispatch->token, "child", t0 + 5).task.state,
                  bg_state::running);
  CAF_CHECK(!refusal(control_errc::token_used, [&] {
               bg->link(c.dispatch->token, "child", t0 + 6);
             }).empty());
  CAF_CHECK(!refusal(control_errc::invalid_state, [&] {
               bg->continue_task(d.task_id, "again", limits, t0 + 7);
             }).empty());
}

CAF_TEST(a continuation waits in the queue when its roots are taken) {
  auto id = running(contract("a", {"src"}), "child");
  bg->end_session("child", t0 + 2);
  CAF_CHECK(task(id).leased_roots.empty());
  auto other = dispatched(contract("b", {"src/lib"}), t0 + 3);
  auto c = bg->continue_task(id, "go on", limits, t0 + 4);
  CAF_CHECK(!c.dispatch);
  CAF_CHECK_EQUAL(c.task.state, bg_state::queued);
  CAF_CHECK(contains(*c.task.reason, "overlaps"));
  bg->cancel(other.task_id, t0 + 5);
  bg->cancel(other.task_id, t0 + 6);
  auto s = bg->start(std::nullopt, limits, t0 + 7);
  CAF_REQUIRE(s.dispatch);
  CAF_CHECK_EQUAL(s.dispatch->kind, token_kind::continuation);
  CAF_CHECK_EQUAL(s.dispatch->prompt, "Do a\n\nContinuation request: go on");
}

// --- cancels, children and restarts ------------------------------------------

CAF_TEST(a cancel before the link keeps the lease until the late child links) {
  auto d = dispatched(contract("a", {"src"}));
  bg->consume(d.token, t0 + 1);
  auto c = bg->cancel(d.task_id, t0 + 2);
  CAF_CHECK(!c.released);
  CAF_CHECK(contains(c.message, "stay reserved"));
  CAF_CHECK_EQUAL(c.task.state, bg_state::cancelled);
  CAF_CHECK_EQUAL(c.task.leased_roots, strings{"src"});
  CAF_CHECK_EQUAL(
    bg->prepare(contract("b", {"src"}), limits, t0 + 3).task.state,
    bg_state::queued);
  auto late = bg->link(d.token, "late-child", t0 + 4);
  CAF_CHECK(late.abort_child);
  CAF_CHECK_EQUAL(late.task.state, bg_state::cancelled);
  CAF_CHECK_EQUAL(late.task.child_session,
                  std::optional<std::string>{"late-child"});
  CAF_CHECK(late.task.leased_roots.empty());
  auto w = bg->may_write("late-child", "src/a.ts", true);
  CAF_CHECK(!w.allowed);
  CAF_CHECK(contains(w.reason, "cancelled"));
}

CAF_TEST(a repeated cancel releases and a third is refused) {
  auto d = dispatched(contract("a", {"src"}));
  auto first = bg->cancel(d.task_id, t0 + 1);
  CAF_CHECK(!first.released);
  CAF_CHECK_EQUAL(first.task.leased_roots, strings{"src"});
  auto second = bg->cancel(d.task_id, t0 + 2);
  CAF_CHECK(second.released);
  CAF_CHECK_EQUAL(second.message, "released");
  CAF_CHECK(second.task.leased_roots.empty());
  CAF_CHECK(contains(refusal(control_errc::invalid_state,
                             [&] {
                               bg->cancel(d.task_id, t0 + 3);
                             }),
                     "already cancelled"));
  // The token cannot start a child any more.
  CAF_CHECK(!refusal(control_errc::token_expired, [&] {
               bg->link(d.token, "child", t0 + 4);
             }).empty());
}

CAF_TEST(a cancelled unlinked task is released when its token expires) {
  auto d = dispatched(contract("a", {"src"}));
  bg->cancel(d.task_id, t0 + 1);
  auto changes = bg->expire(t0 + token_lifetime_ms);
  CAF_CHECK_EQUAL(ids(changes), strings{"bg-1:updated:cancelled"});
  CAF_CHECK(task(d.task_id).leased_roots.empty());
}

CAF_TEST(a running task cancelled names its child to abort) {
  auto id = running(contract("a", {"src"}), "child");
  auto c = bg->cancel(id, t0 + 5);
  CAF_CHECK(c.released);
  CAF_CHECK_EQUAL(c.abort_child, std::optional<std::string>{"child"});
  CAF_CHECK(!refusal(control_errc::invalid_state, [&] {
               bg->cancel(id, t0 + 6);
             }).empty());
  auto done_id = running(contract("b", {"docs"}), "c2", t0 + 7);
  bg->begin_completion({done_id, completion_status::done, "", {}}, limits,
                       t0 + 8);
  CAF_CHECK(contains(refusal(control_errc::invalid_state,
                             [&] {
                               bg->cancel(done_id, t0 + 9);
                             }),
                     "is done"));
}

CAF_TEST(children of tasks that are not running may not write) {
  auto running_id = running(contract("running", {"src"}), "c-running");
  auto w = bg->may_write("c-running", "src/new.ts", true);
  CAF_CHECK(w.allowed);
  CAF_CHECK_EQUAL(w.task_id, std::optional<std::string>{running_id});
  auto out = bg->may_write("c-running", "README.md", true);
  CAF_CHECK(!out.allowed);
  CAF_CHECK(contains(out.reason, "outside"));
  CAF_CHECK(bg->may_write("c-running", "README.md", false).allowed);
  auto blocked = running(contract("blocked", {"b"}), "c-blocked");
  bg->begin_completion({blocked, completion_status::blocked, "stuck", {}},
                       limits, t0 + 2);
  auto failed = running(contract("failed", {"f"}), "c-failed");
  bg->fail(failed, "gave up", t0 + 2);
  auto interrupted = running(contract("interrupted", {"i"}), "c-interrupted");
  bg->end_session("c-interrupted", t0 + 2);
  for (auto [child, state] :
       {std::pair{"c-blocked", "blocked"}, std::pair{"c-failed", "failed"},
        std::pair{"c-interrupted", "interrupted"}}) {
    auto v = bg->may_write(child, "b/x", false);
    CAF_CHECK(!v.allowed);
    CAF_CHECK(contains(v.reason, state));
  }
  // A session no task knows is not managed here.
  auto unknown = bg->may_write("someone", "README.md", true);
  CAF_CHECK(unknown.allowed);
  CAF_CHECK(!unknown.task_id);
}

CAF_TEST(a child that ends or is gone interrupts its task and frees its roots) {
  auto a = running(contract("a", {"src"}), "c-a");
  auto b = running(contract("b", {"docs"}), "c-b");
  auto c = running(contract("c", {"c"}), "c-c");
  auto ended = bg->end_session("c-a", t0 + 5);
  CAF_CHECK_EQUAL(ids(ended), strings{a + ":state:interrupted"});
  CAF_CHECK(task(a).leased_roots.empty());
  // The status says it ended without reporting.
  CAF_CHECK(contains(*task(a).reason, "without reporting its completion"));
  auto gone = bg->reconcile({"c-c"}, t0 + 6);
  CAF_CHECK_EQUAL(ids(gone), strings{b + ":state:interrupted"});
  CAF_CHECK_EQUAL(task(c).state, bg_state::running);
  CAF_CHECK(bg->end_session("nobody", t0 + 7).empty());
}

CAF_TEST(a restart interrupts unlinked work and keeps its lease) {
  auto run = running(contract("running", {"src"}), "child");
  auto unlinked = dispatched(contract("unlinked", {"docs"}));
  auto checking = running(contract("checking", {"c"}, {}, {"make"}), "c2");
  bg->begin_completion({checking, completion_status::done, "", {}}, limits,
                       t0 + 2);
  open(); // the server restarts
  auto changes = bg->recover(t0 + 10);
  CAF_CHECK_EQUAL(ids(changes),
                  (strings{unlinked.task_id + ":state:interrupted",
                           checking + ":state:running"}));
  CAF_CHECK_EQUAL(task(run).state, bg_state::running);
  auto t = task(unlinked.task_id);
  CAF_CHECK_EQUAL(t.state, bg_state::interrupted);
  CAF_CHECK_EQUAL(t.leased_roots, strings{"docs"});
  // The late child is linked and aborted; the lease stays.
  auto late = bg->link(unlinked.token, "late", t0 + 11);
  CAF_CHECK(late.abort_child);
  CAF_CHECK_EQUAL(late.task.state, bg_state::interrupted);
  CAF_CHECK_EQUAL(late.task.leased_roots, strings{"docs"});
  auto w = bg->may_write("late", "docs/x.md", true);
  CAF_CHECK(!w.allowed);
  CAF_CHECK(contains(w.reason, "interrupted"));
  auto c = bg->cancel(unlinked.task_id, t0 + 12);
  CAF_CHECK(c.released);
  CAF_CHECK(task(unlinked.task_id).leased_roots.empty());
}

CAF_TEST(a write through a symlink is judged where it lands) {
  fs::create_symlink("../docs", repo / "src" / "link");
  running(contract("a", {"src"}), "child");
  auto through = bg->may_write("child", "src/link/guide.md", true);
  CAF_CHECK(!through.allowed);
  CAF_CHECK_EQUAL(through.path, "docs/guide.md");
  CAF_CHECK(contains(through.reason, "outside the task's roots src"));
  auto escape = bg->may_write("child", "src/../../elsewhere", true);
  CAF_CHECK(!escape.allowed);
  auto git = bg->may_write("child", ".git/config", true);
  CAF_CHECK(!git.allowed);
  CAF_CHECK(contains(git.reason, ".git"));
  CAF_CHECK(
    bg->may_write("child", (repo / "src/new.ts").string(), true).allowed);
}

CAF_TEST(gits folders in any case and nested repositories are refused) {
  // As roots: .GIT is .git on a case-insensitive filesystem; a nested
  // repository's git folder belongs to git wherever it is.
  for (auto root :
       {".GIT", ".Git/hooks", ".TASKFORCE", "src/.git", "src/.GIT/hooks"}) {
    auto why = refusal(control_errc::bad_request, [&] {
      bg->prepare(contract("bad", {root}), limits, t0);
    });
    CAF_CHECK(contains(why, "which belongs to"));
    CAF_MESSAGE(why);
  }
  // A root holding a nested repository: writes into its git folder would
  // go unseen, so the root is refused.
  fs::create_directories(repo / "src" / "vendor" / "lib" / ".git");
  write("src/vendor/lib/.git/HEAD", "ref: refs/heads/main\n");
  CAF_CHECK(contains(refusal(control_errc::bad_request,
                             [&] {
                               bg->prepare(contract("vendor", {"src"}), limits,
                                           t0);
                             }),
                     "holds a nested git repository (src/vendor/lib/.git/)"));
  CAF_CHECK(bg->status().empty());
  fs::remove_all(repo / "src" / "vendor");
  // A write there by a child rooted above it is refused.
  running(contract("a", {"src"}), "child");
  auto nested = bg->may_write("child", "src/.git/config", true);
  CAF_CHECK(!nested.allowed);
  CAF_CHECK(contains(nested.reason, "nested repository's git folder"));
  auto upper = bg->may_write("child", "src/lib/.GIT/hooks/pre-commit", true);
  CAF_CHECK(!upper.allowed);
  CAF_CHECK(!bg->may_write("child", ".GIT/config", true).allowed);
  CAF_CHECK(bg->may_write("child", "src/.gitignore", true).allowed);
}

CAF_TEST(a nested repository made after the link is seen by the gate) {
  auto id = running(contract("a", {"src"}), "child");
  write("src/sub/.git/config", "[core]\n");
  write("src/sub/x.ts", "x\n");
  auto r = bg->begin_completion(
    {id, completion_status::done, "", {"src/sub/x.ts"}}, limits, t0 + 5);
  CAF_CHECK(!r.accepted);
  CAF_CHECK_EQUAL(r.unclaimed, strings{"src/sub/.git/config"});
}

CAF_TEST(a deleted file is claimed like a changed one) {
  auto id = running(contract("a", {"src"}), "child");
  fs::remove(repo / "src" / "a.ts");
  CAF_CHECK_EQUAL(bg->recorded_changes(id).deleted, strings{"src/a.ts"});
  auto r = bg->begin_completion({id, completion_status::done, "", {"src/a.ts"}},
                                limits, t0 + 5);
  CAF_CHECK(r.accepted);
  CAF_CHECK_EQUAL(r.task.state, bg_state::done);
}

CAF_TEST(changes made before the link do not belong to the task) {
  auto d = dispatched(contract("a", {"src"}));
  write("src/before.ts", "someone else\n");
  bg->link(d.token, "child", t0 + 1);
  write("src/mine.ts", "mine\n");
  auto r = bg->begin_completion(
    {d.task_id, completion_status::done, "", {"src/mine.ts"}}, limits, t0 + 2);
  CAF_CHECK(r.accepted);
}

CAF_TEST(a restart frees a task whose token expired meanwhile) {
  auto d = dispatched(contract("a", {"src"}));
  open();
  auto changes = bg->recover(t0 + token_lifetime_ms + 1);
  CAF_CHECK_EQUAL(ids(changes), strings{d.task_id + ":state:queued"});
  CAF_CHECK(task(d.task_id).leased_roots.empty());
}

CAF_TEST(a task without roots holds none and writes nowhere) {
  auto id = running(contract("review", {}), "child");
  CAF_CHECK(task(id).leased_roots.empty());
  CAF_CHECK(!bg->may_write("child", "src/a.ts", true).allowed);
  // It conflicts with nobody.
  CAF_CHECK(bg->prepare(contract("b", {"src"}), limits, t0 + 1).dispatch);
  auto r = bg->begin_completion({id, completion_status::done, "looks fine", {}},
                                limits, t0 + 2);
  CAF_CHECK(r.accepted);
}

CAF_TEST(named locks are exclusive like roots) {
  auto a = contract("a", {"src"});
  a.locks = {"database"};
  auto b = contract("b", {"docs"});
  b.locks = {"database", "database"};
  dispatched(a);
  auto second = bg->prepare(b, limits, t0);
  CAF_CHECK_EQUAL(second.task.state, bg_state::queued);
  CAF_CHECK_EQUAL(second.task.locks, strings{"database"});
  CAF_CHECK(contains(*second.task.reason, "lock database is held by bg-1"));
  // Without enforced roots, locks still conflict.
  limits.enforce_write_roots = false;
  CAF_CHECK(!bg->start(std::nullopt, limits, t0 + 1).dispatch);
}

CAF_TEST_FIXTURE_SCOPE_END()
