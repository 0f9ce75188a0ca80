// A seeded simulation of whole runs, in the spirit of FoundationDB's: the
// orchestrator with fake workers, git service and ledger on the
// deterministic scheduler, messages delivered in a random order, random task
// graphs and worker outcomes, and injected faults: ledger errors, a ledger
// or git service that dies, git failures and conflicts, workers that die,
// another process moving a task or aborting the run, a person approving,
// rejecting, answering and adding tasks, Ctrl-C, and restarts mid-run (a
// new orchestrator from the fake ledger's durable state, as `resume` does).
//
// Workers report usage (with their verifying progress and their outcome),
// and some runs have a budget (run.maxCostUsd).
//
// After every step: no task is merged twice, nothing is merged unchecked (a
// merge only of a task the ledger has merging, after a passing attempt, or
// after an approval where one is needed; a merge result that failed its
// gate never reaches the base, and the task merges again only after a new
// passing attempt), the concurrency bound holds, no conflicting tasks are
// active together, and no task starts once the usage the ledger has
// reached the budget; at the end of every driver:
// it told its watcher exactly once, and the run ended, or paused with a
// reason.
//
// A fixed number of seeds runs in CI. A failing seed is printed and replays
// exactly: TASKFORCE_SIM_SEED=<seed> runs only that one (with a trace of
// its steps); TASKFORCE_SIM_RUNS=<n> runs n seeds.
#define CAF_SUITE actors.orchestrator_sim
#define FAIL(m) CAF_FAIL(m)
#include <caf/test/dsl.hpp>

#include <cstdlib>
#include <deque>
#include <iostream>
#include <memory>
#include <random>
#include <sstream>

#include <spdlog/spdlog.h>

#include "actors/run_fakes.hpp"

using namespace taskforce;
using namespace taskforce::test;

namespace {

/// One attempt whose worker the simulation plays.
struct live_attempt {
  std::string task;
  uint64_t attempt = 0;
  caf::actor worker;
  bool cancelled = false;
  /// Started on standby (its start not durable yet).
  bool standby = false;
};

struct simulation : test_coordinator_fixture<run_test_config> {
  // -- the seed
  // -----------------------------------------------------------------
  unsigned seed;
  std::mt19937 rng;
  bool verbose;
  /// The latest steps, printed when a rule breaks.
  std::deque<std::string> trace;

  // -- the run
  // ------------------------------------------------------------------
  std::vector<task_spec> specs;
  run::rules rules;
  std::shared_ptr<ledger_book> book = std::make_shared<ledger_book>();
  std::shared_ptr<git_book> gits = std::make_shared<git_book>();
  std::shared_ptr<run_record> rec = std::make_shared<run_record>();
  ledger_actor ledger;
  git_actor git;
  caf::actor watcher;
  orchestrator_actor orch;

  // -- what the simulation knows
  // ------------------------------------------------
  /// How each task's latest attempt ended, as its worker said.
  std::map<std::string, run::attempt_end> last_end;
  /// An approve was sent since the task's latest attempt started.
  std::map<std::string, bool> approve_asked;
  /// The task's work is cleared for a merge: it passed its checks (and
  /// was approved where it must be); a merge again from conflict continues
  /// that.
  std::map<std::string, bool> ever_legit;
  /// The git fake's truth: the task's branch is in the base.
  std::map<std::string, bool> in_base;
  /// Merge commits made per task.
  std::map<std::string, int> merge_commits;
  /// Faults armed for the git fake.
  int git_errors = 0;
  std::vector<live_attempt> lives;
  size_t launches_seen = 0;
  size_t cancels_seen = 0;
  int added = 0;
  /// Drivers so far (the first run and each resume or restart).
  int drivers = 0;

  explicit simulation(unsigned s, bool chatty)
    : seed(s), rng(s), verbose(chatty) {}

  size_t pick(size_t n) {
    return n == 0 ? 0 : static_cast<size_t>(rng() % n);
  }

  bool chance(unsigned percent) {
    return rng() % 100 < percent;
  }

  void note(std::string what) {
    if (verbose)
      std::cerr << "  [" << seed << "] " << what << '\n';
    trace.push_back(std::move(what));
    if (trace.size() > 40)
      trace.pop_front();
  }

  [[noreturn]] void broken(const std::string& rule) {
    std::ostringstream out;
    out << "simulation seed " << seed << " broke a rule: " << rule
        << "\n  replay: TASKFORCE_SIM_SEED=" << seed
        << " build/taskforce_tests -s '^actors\\.orchestrator_sim$'"
        << "\n  last steps:";
    for (auto& t : trace)
      out << "\n    " << t;
    std::cerr << out.str() << std::endl;
    CAF_FAIL("simulation seed " << seed << ": " << rule
                                << " (replay: TASKFORCE_SIM_SEED=" << seed
                                << ")");
    std::abort();
  }

  void require(bool ok, const std::string& rule) {
    if (!ok)
      broken(rule);
  }

  // -- the run's shape
  // ----------------------------------------------------------

  std::vector<std::string> random_files() {
    std::vector<std::string> files;
    if (!chance(15))
      files.push_back("f" + std::to_string(pick(6)));
    if (chance(20))
      files.push_back("g" + std::to_string(pick(3)) + "/**");
    return files;
  }

  void make_run() {
    auto n = 2 + pick(8);
    for (size_t i = 0; i < n; ++i) {
      std::vector<std::string> deps;
      if (i > 0 && chance(35))
        deps.push_back("t" + std::to_string(pick(i)));
      auto t = spec("t" + std::to_string(i), random_files(), deps,
                    static_cast<int64_t>(pick(3)));
      if (chance(8)) {
        t.held = true;
        t.hold_reason = "[NEEDS DECISION]";
      }
      if (chance(12)) {
        t.risk = "high";
        t.needs_approval = true;
      }
      t.done = chance(5);
      specs.push_back(std::move(t));
    }
    rules.max_concurrency = 1 + pick(3);
    rules.max_attempts = 1 + pick(3);
    rules.continue_on_error = chance(40);
    rules.ask_user_on_blocked = chance(40);
    rules.repair_on_failure = chance(70);
    rules.max_repairs = pick(3);
    rules.finish
      = chance(20) ? run::integration::review : run::integration::merge;
    if (chance(40))
      rules.budget.max_cost_usd = 0.01 * static_cast<double>(1 + pick(6));
    for (auto& t : specs)
      book->add_task(t.id, t.done ? task_state::done : task_state::pending);
    gits->on_merge = [this](const merge_request& r) {
      return merge(r);
    };
    book->on_write = [this](const task_transition& tr) {
      check_start(tr);
      check_integration(tr);
    };
    gits->on_check = [this](const merge_request& r) {
      merge_outcome m;
      m.end = in_base[r.task_id] ? run::merge_end::merged
                                 : run::merge_end::not_merged;
      if (in_base[r.task_id])
        m.merge_commit = "m-" + r.task_id;
      return m;
    };
    note("run of " + std::to_string(n) + " tasks, bound "
         + std::to_string(rules.max_concurrency) + ", attempts "
         + std::to_string(rules.max_attempts)
         + (rules.continue_on_error ? ", continueOnError" : "")
         + (rules.ask_user_on_blocked ? ", askUserOnBlocked" : "")
         + (rules.finish == run::integration::review ? ", review" : "")
         + (rules.budget.any()
              ? ", budget $" + std::to_string(rules.budget.max_cost_usd)
              : ""));
  }

  const task_spec* find_spec(const std::string& id) const {
    for (auto& s : specs)
      if (s.id == id)
        return &s;
    return nullptr;
  }

  plan::task_graph graph() const {
    return plan::task_graph{specs};
  }

  // -- the git fake: the rules of merging
  // ---------------------------------------

  /// Whether a person must approve `id`'s work before it is merged.
  bool needs_person(const std::string& id) const {
    auto* s = find_spec(id);
    return (s != nullptr && s->needs_approval)
           || rules.finish == run::integration::review;
  }

  /// The ledger moves a task towards the base branch only after a passing
  /// attempt, or an approval where one is needed; done only once the git
  /// service has its work in the base.
  void check_integration(const task_transition& tr) {
    auto& id = tr.task_id;
    if (tr.to == task_state::merging) {
      if (tr.from == task_state::verifying) {
        require(last_end[id] == run::attempt_end::done,
                id + " merging after an attempt that did not pass");
        // Work that needs a person only passes through on its way to
        // review: it is not cleared for a merge.
        ever_legit[id] = !needs_person(id);
      } else if (tr.from == task_state::review) {
        require(approve_asked[id], id
                                     + " merging from review without an "
                                       "approve");
        ever_legit[id] = true;
      } else {
        require(ever_legit[id], id + " merging again from " + to_string(tr.from)
                                  + ", never cleared for a merge");
      }
    }
    if (tr.from == task_state::merging
        && (tr.to == task_state::ready || tr.to == task_state::failed)) {
      // Only a merge result that failed its gate leaves merging this way:
      // it never reached the base, and the work is not cleared for a merge
      // until an attempt passes again.
      require(!in_base[id], id
                              + " sent back from merging with its work in "
                                "the base");
      ever_legit[id] = false;
    }
    if (tr.to == task_state::done)
      require(in_base[id], id + " done while its work is not in the base");
  }

  caf::result<merge_outcome> merge(const merge_request& r) {
    auto& id = r.task_id;
    auto& t = book->tasks[id];
    note("git: merge " + id);
    require(t.state == task_state::merging,
            "merge of " + id + " asked while the ledger has it "
              + to_string(t.state));
    require(ever_legit[id], "merge of " + id + " that never passed its checks");
    if (git_errors > 0) {
      --git_errors;
      note("git: fails");
      return caf::make_error(run_errc::git_failure,
                             std::string{"index.lock exists"});
    }
    merge_outcome m;
    if (in_base[id]) {
      // Merged already (before a crash): found, not merged again.
      m.end = run::merge_end::merged;
      m.merge_commit = "m-" + id;
      return m;
    }
    auto roll = pick(100);
    if (roll < 10) {
      m.end = run::merge_end::conflict;
      m.paths = {"f0"};
      m.message = "merge conflict in f0";
      return m;
    }
    if (roll < 13) {
      m.end = run::merge_end::error;
      m.message = "libgit2 said no";
      return m;
    }
    if (roll < 20) {
      // verifyMerged: the gate failed on the merge result; the base did not
      // move.
      m.end = run::merge_end::gate_failed;
      m.message = "gate failed on the merge result";
      m.tail = "red";
      return m;
    }
    in_base[id] = true;
    ++merge_commits[id];
    require(merge_commits[id] == 1, "task " + id + " merged twice");
    m.end = run::merge_end::merged;
    m.merge_commit = "m-" + id;
    return m;
  }

  // -- drivers
  // ------------------------------------------------------------------

  /// A driver starts (the first run, a resume, or after a crash): new
  /// actors over the ledger's durable state.
  void start_driver() {
    // Tasks the ledger took before the last driver stopped are part of the
    // run (a driver loads them with the run).
    sync_adds();
    ++drivers;
    ledger = sys.spawn(fake_ledger, book);
    git = sys.spawn(fake_git, gits);
    if (!watcher)
      watcher = sys.spawn(fake_watcher, rec);
    orchestrator_setup s;
    s.run_id = book->run_id;
    s.rules = rules;
    s.graph = graph();
    std::vector<task_state> states;
    for (auto& t : specs) {
      auto& bt = book->tasks[t.id];
      states.push_back(bt.state);
      task_memory m;
      m.attempt = bt.attempt;
      m.worktree = bt.facts.worktree.value_or("");
      m.branch = bt.facts.branch.value_or("");
      s.memory.push_back(m);
    }
    s.records = records_of(s.graph, states, {});
    // The budget counts from what the ledger has, as load_run does.
    s.spent = durable_spent();
    s.ledger = ledger;
    s.git = git;
    s.watcher = watcher;
    // Odd seeds start workers on standby while their start is recorded.
    s.prepare_workers = seed % 2 == 1;
    auto r = rec;
    auto* system = &sys;
    s.launch = [r, system](const run_task& t, uint64_t attempt, bool fresh,
                           caf::actor) {
      auto w = system->spawn(fake_worker, r, t.id);
      r->launched.push_back(launched_attempt{t, attempt, fresh, w});
      return worker_handle{w, {}};
    };
    orch = spawn_orchestrator(sys, std::move(s));
    note("driver " + std::to_string(drivers) + " starts");
    self->send(orch, start_atom::value);
  }

  /// The process driving the run dies: every actor of it is gone, the
  /// ledger keeps what it committed, and the next driver recovers.
  void crash() {
    sync_workers();
    note("crash");
    self->send_exit(orch, caf::exit_reason::kill);
    for (auto& l : lives)
      self->send_exit(l.worker, caf::exit_reason::kill);
    self->send_exit(ledger, caf::exit_reason::kill);
    self->send_exit(git, caf::exit_reason::kill);
    sched.run();
    // Workers started while the rest went down go down with it.
    for (auto seen = lives.size(); sync_workers(), lives.size() > seen;
         seen = lives.size()) {
      for (auto k = seen; k < lives.size(); ++k)
        self->send_exit(lives[k].worker, caf::exit_reason::kill);
      sched.run();
    }
    for (auto& l : lives)
      last_end[l.task] = run::attempt_end::interrupted;
    lives.clear();
    book->mark_interrupted();
  }

  /// The driver told its watcher: the run ended, or paused with a reason.
  void driver_ended(size_t told) {
    sched.run();
    sync_workers();
    require(rec->finished.size() == told, "the watcher was told twice");
    auto& [state, why] = rec->finished.back();
    note(std::string{"driver ends: "} + to_string(state) + " - " + why);
    for (auto& l : lives)
      require(l.cancelled,
              "driver ended with a worker of " + l.task + " still running");
    bool lost = why.rfind("the ledger failed", 0) == 0;
    if (state == run_state::paused)
      require(!why.empty(), "the run paused without a reason");
    if (!lost) {
      require(book->run == state, std::string{"the ledger has the run "}
                                    + to_string(book->run) + ", the watcher "
                                    + to_string(state));
      require(book->run_reason == why,
              "the ledger has another reason: " + book->run_reason);
    }
    if (state == run_state::completed)
      for (auto& [id, t] : book->tasks)
        require(is_final(t.state)
                  || (t.state == task_state::failed && rules.continue_on_error),
                "completed with " + id + " " + to_string(t.state));
    // What a driver leaves running dies with it.
    crash();
  }

  // -- rules checked after every step
  // --------------------------------------------

  /// Positions in `specs` of the tasks the ledger has in a state `which`
  /// accepts.
  template<class Which>
  std::vector<size_t> tasks_where(Which which) {
    std::vector<size_t> out;
    for (size_t i = 0; i < specs.size(); ++i)
      if (which(book->tasks[specs[i].id].state))
        out.push_back(i);
    return out;
  }

  /// The usage the ledger has for the run.
  run::spend durable_spent() const {
    run::spend total;
    for (auto& [id, t] : book->tasks)
      for (auto& turn : t.facts.spent)
        total += run::spend{turn.usage.input_tokens, turn.usage.output_tokens,
                            turn.usage.cost_usd};
    return total;
  }

  /// Usage a worker reports for one turn, now and then none.
  std::vector<turn_spent> random_spent(uint64_t turn) {
    if (chance(30))
      return {};
    return {
      turn_spent{turn, "start",
                 token_usage{10, 5, 0.005 * static_cast<double>(1 + pick(3))}}};
  }

  /// A task starts only when nothing that conflicts with it runs or
  /// merges (it would fork from a base without that work), and only while
  /// the usage the ledger has is below the budget (the scheduler counted
  /// at least that much when it decided the start).
  void check_start(const task_transition& tr) {
    note("ledger: " + tr.task_id + " " + to_string(tr.from) + ">"
         + to_string(tr.to)
         + (tr.reason.empty() ? "" : " (" + tr.reason + ")"));
    if (tr.to != task_state::running || in_attempt(tr.from))
      return;
    require(!run::reached(rules.budget, durable_spent()),
            tr.task_id + " starts after the usage reached the budget ($"
              + std::to_string(durable_spent().cost_usd) + ")");
    auto g = graph();
    auto i = g.find(tr.task_id);
    if (!i)
      return; // added, not known here yet
    for (auto j : tasks_where([](task_state s) {
           return is_active(s);
         }))
      require(!g.conflict(*i, j),
              tr.task_id + " starts while conflicting " + specs[j].id + " is "
                + to_string(book->tasks[specs[j].id].state));
  }

  void check_rules() {
    auto g = graph();
    auto open = tasks_where([](task_state s) {
      return in_attempt(s);
    });
    require(open.size() <= rules.max_concurrency,
            "the ledger has " + std::to_string(open.size()) + " attempts open");
    for (auto a : open)
      for (auto b : open)
        require(a == b || !g.conflict(a, b), "conflicting " + specs[a].id
                                               + " and " + specs[b].id
                                               + " run together");
    require(lives.size() <= rules.max_concurrency,
            std::to_string(lives.size()) + " workers at once");
  }

  // -- workers
  // ------------------------------------------------------------------

  void sync_workers() {
    for (; launches_seen < rec->launched.size(); ++launches_seen) {
      auto& l = rec->launched[launches_seen];
      lives.push_back(
        live_attempt{l.task.id, l.attempt, l.worker, false, l.task.standby});
      approve_asked[l.task.id] = false;
      note("launched " + l.task.id + " attempt " + std::to_string(l.attempt));
    }
    for (; cancels_seen < rec->cancelled.size(); ++cancels_seen) {
      auto& task = rec->cancelled[cancels_seen];
      for (auto& l : lives)
        if (l.task == task)
          l.cancelled = true;
      // A worker on standby that was never let go ends at once, as
      // interrupted: it ran nothing (the orchestrator may ignore its word).
      auto& gone = rec->went_workers;
      for (auto l = lives.begin(); l != lives.end();) {
        if (l->task != task || !l->standby
            || std::find(gone.begin(), gone.end(), l->worker.address())
                 != gone.end()) {
          ++l;
          continue;
        }
        attempt_outcome o;
        o.task_id = l->task;
        o.attempt = l->attempt;
        o.end = run::attempt_end::interrupted;
        o.reason = to_string(o.end);
        last_end[l->task] = o.end;
        note("standby worker " + l->task + " ends interrupted");
        self->send(orch, outcome_atom::value, o);
        l = lives.erase(l);
      }
    }
  }

  void finish_worker() {
    auto k = pick(lives.size());
    auto l = lives[k];
    lives.erase(lives.begin() + static_cast<std::ptrdiff_t>(k));
    attempt_outcome o;
    o.task_id = l.task;
    o.attempt = l.attempt;
    o.worktree = "/wt/" + l.task;
    o.branch = "taskforce/r1/" + l.task;
    o.turns = 1;
    auto roll = pick(100);
    if (l.cancelled && roll < 85)
      o.end = run::attempt_end::interrupted;
    else if (roll < 60)
      o.end = run::attempt_end::done;
    else if (roll < 80)
      o.end = run::attempt_end::failed;
    else if (roll < 94)
      o.end = run::attempt_end::blocked;
    else
      o.end = run::attempt_end::interrupted;
    o.reason = to_string(o.end);
    o.exit_code = o.end == run::attempt_end::done ? 0 : 1;
    if (o.end != run::attempt_end::interrupted)
      o.spent = random_spent(2);
    last_end[l.task] = o.end;
    note("worker " + l.task + " ends " + to_string(o.end));
    self->send(orch, outcome_atom::value, o);
  }

  void progress() {
    auto& l = lives[pick(lives.size())];
    attempt_progress p;
    p.task_id = l.task;
    p.attempt = l.attempt;
    auto roll = pick(3);
    p.phase = roll == 0   ? attempt_phase::leased
              : roll == 1 ? attempt_phase::verifying
                          : attempt_phase::repairing;
    if (p.phase == attempt_phase::leased) {
      p.worktree = "/wt/" + l.task;
      p.branch = "taskforce/r1/" + l.task;
    }
    if (p.phase == attempt_phase::verifying)
      p.spent = random_spent(1);
    note("worker " + l.task + " " + to_string(p.phase));
    self->send(orch, progress_atom::value, p);
  }

  void kill_worker() {
    auto k = pick(lives.size());
    auto l = lives[k];
    lives.erase(lives.begin() + static_cast<std::ptrdiff_t>(k));
    last_end[l.task] = run::attempt_end::failed;
    note("worker " + l.task + " dies");
    self->send_exit(l.worker, caf::exit_reason::kill);
  }

  // -- a person
  // -----------------------------------------------------------------

  std::string any_task() {
    return specs[pick(specs.size())].id;
  }

  /// A task the ledger has in `st`, or any.
  std::string task_in(task_state st) {
    std::vector<std::string> ids;
    for (auto& [id, t] : book->tasks)
      if (t.state == st)
        ids.push_back(id);
    return ids.empty() ? any_task() : ids[pick(ids.size())];
  }

  void person() {
    switch (pick(5)) {
      case 0: {
        auto id = chance(70) ? task_in(task_state::review) : any_task();
        approve_asked[id] = true;
        note("approve " + id);
        caf::anon_send(orch, approve_atom::value, id);
        break;
      }
      case 1: {
        auto id = chance(60) ? task_in(task_state::held) : any_task();
        note("reject " + id);
        caf::anon_send(orch, reject_atom::value, id, std::string{"no"});
        break;
      }
      case 2: {
        auto id = chance(80) ? task_in(task_state::blocked) : any_task();
        note("answer " + id);
        caf::anon_send(orch, answer_atom::value, id, std::string{"do this"});
        break;
      }
      case 3: {
        if (added >= 3)
          break;
        auto t = spec("n" + std::to_string(added++), random_files());
        if (chance(50))
          t.deps.push_back(any_task());
        note("add " + t.id);
        // The simulation knows it once the ledger has it.
        task_additions more{"", {t}};
        caf::anon_send(orch, add_atom::value, more);
        pending_adds.push_back(t);
        break;
      }
      default: {
        // Merged by hand while it waited in review.
        auto id = task_in(task_state::review);
        if (book->tasks[id].state == task_state::review && !in_base[id]) {
          note("hand merge of " + id);
          in_base[id] = true;
          ++merge_commits[id];
        }
        break;
      }
    }
  }

  /// Tasks sent to `add`; they join `specs` once the ledger has them.
  std::vector<task_spec> pending_adds;

  void sync_adds() {
    for (auto i = pending_adds.begin(); i != pending_adds.end();) {
      if (book->tasks.count(i->id) > 0) {
        specs.push_back(*i);
        i = pending_adds.erase(i);
      } else {
        ++i;
      }
    }
  }

  // -- faults
  // -------------------------------------------------------------------

  void fault() {
    switch (pick(8)) {
      case 0:
        note("the ledger's next batch fails");
        book->fail_batches = 1;
        break;
      case 1:
        note("the ledger's next run change fails");
        book->fail_runs = 1;
        break;
      case 2:
        note("the ledger dies");
        self->send_exit(ledger, caf::exit_reason::kill);
        break;
      case 3:
        note("the git service dies");
        self->send_exit(git, caf::exit_reason::kill);
        break;
      case 4:
        note("git fails the next merge");
        git_errors = 1;
        break;
      case 5: {
        // Another process moves a task nobody works on.
        auto id = task_in(task_state::pending);
        auto& t = book->tasks[id];
        if (t.state == task_state::pending || t.state == task_state::ready) {
          t.state = chance(50) ? task_state::held : task_state::skipped;
          note("another process moves " + id + " to " + to_string(t.state));
        }
        break;
      }
      case 6:
        if (book->run == run_state::running) {
          note("another process aborts the run");
          book->run = run_state::aborted;
          book->run_reason = "aborted by another process";
          sched.trigger_timeouts();
        }
        break;
      default:
        note("Ctrl-C");
        self->send(orch, pause_atom::value,
                   std::string{"interrupted by Ctrl-C"}, true);
        break;
    }
  }

  // -- the loop
  // -----------------------------------------------------------------

  /// Runs one random pending message.
  void deliver() {
    auto& jobs = sched.jobs;
    auto k = pick(jobs.size());
    if (k > 0)
      std::rotate(jobs.begin(), jobs.begin() + static_cast<std::ptrdiff_t>(k),
                  jobs.begin() + static_cast<std::ptrdiff_t>(k) + 1);
    sched.run_once();
  }

  /// One driver, until it tells its watcher or crashes. Returns false when
  /// it crashed (a restart follows).
  bool drive() {
    auto told = rec->finished.size();
    start_driver();
    for (int steps = 0;; ++steps) {
      require(steps < 20000, "the run neither ended nor paused");
      sync_workers();
      sync_adds();
      check_rules();
      if (rec->finished.size() > told) {
        driver_ended(told + 1);
        return true;
      }
      bool jobs = sched.has_job();
      auto roll = pick(100);
      if (jobs && roll < 75) {
        deliver();
      } else if (!lives.empty() && roll < 88) {
        finish_worker();
      } else if (!lives.empty() && roll < 91) {
        progress();
      } else if (roll < 94) {
        person();
      } else if (!lives.empty() && roll < 95) {
        kill_worker();
      } else if (roll < 98) {
        fault();
      } else if (roll < 99) {
        crash();
        return false;
      } else if (jobs) {
        deliver();
      } else if (lives.empty()) {
        // Nothing moves: only a person can help (a run kept open for an
        // answer); anything else is a run that hangs.
        bool waiting = false;
        for (auto& [id, t] : book->tasks)
          waiting = waiting || t.state == task_state::blocked;
        require(waiting && rules.ask_user_on_blocked
                  && book->run == run_state::paused,
                "nothing moves and the run neither ended nor paused");
        auto id = task_in(task_state::blocked);
        note("answer " + id + " (the run waits for it)");
        caf::anon_send(orch, answer_atom::value, id, std::string{"go"});
      }
    }
  }

  void go() {
    make_run();
    while (drivers < 8) {
      if (!drive()) {
        // Crashed: the next driver recovers, unless the run is over (the
        // command resumes no completed or aborted run).
        if (is_finished(book->run))
          break;
        continue;
      }
      auto st = rec->finished.back().first;
      if (st != run_state::paused)
        break;
      // Paused: resume (now and then after a hand merge of a task kept
      // for review).
      if (chance(30)) {
        auto id = task_in(task_state::review);
        if (book->tasks[id].state == task_state::review && !in_base[id]) {
          note("hand merge of " + id);
          in_base[id] = true;
          ++merge_commits[id];
        }
      }
    }
  }

  ~simulation() {
    for (auto& l : rec->launched)
      self->send_exit(l.worker, caf::exit_reason::kill);
    if (orch)
      self->send_exit(orch, caf::exit_reason::kill);
    if (ledger)
      self->send_exit(ledger, caf::exit_reason::kill);
    if (git)
      self->send_exit(git, caf::exit_reason::kill);
    if (watcher)
      self->send_exit(watcher, caf::exit_reason::kill);
    gits->on_merge = nullptr;
    gits->on_check = nullptr;
    book->on_write = nullptr;
    sched.run();
    rec->launched.clear();
  }
};

unsigned env_number(const char* name, unsigned fallback) {
  auto* v = std::getenv(name);
  if (v == nullptr || *v == '\0')
    return fallback;
  return static_cast<unsigned>(std::strtoul(v, nullptr, 10));
}

} // namespace

CAF_TEST(random runs with faults keep every rule) {
  // Thousands of injected faults would each log an error.
  auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::off);
  struct restore {
    spdlog::level::level_enum level;
    ~restore() {
      spdlog::set_level(level);
    }
  } restore_level{level};
  if (auto* one = std::getenv("TASKFORCE_SIM_SEED"); one && *one) {
    auto seed = env_number("TASKFORCE_SIM_SEED", 1);
    simulation sim{seed, true};
    sim.go();
    return;
  }
  auto runs = env_number("TASKFORCE_SIM_RUNS", 300);
  for (unsigned seed = 1; seed <= runs; ++seed) {
    simulation sim{seed, false};
    sim.go();
  }
}
