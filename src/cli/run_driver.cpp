#include "src/cli/run_driver.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <caf/all.hpp>
#include <nlohmann/json.hpp>

#include "actors/git_service.hpp"
#include "actors/ledger_service.hpp"
#include "actors/orchestrator.hpp"
#include "actors/runtime_config.hpp"
#include "actors/worker.hpp"
#include "src/cli/cli.hpp"
#include "src/cli/live_table.hpp"
#include "src/cli/run_load.hpp"
#include "actors/mail_service.hpp"
#include "src/git/git.hpp"
#include "src/plan/graph.hpp"
#include "src/proc/registry.hpp"
#include "src/scope/coverage.hpp"
#include "src/store/ledger.hpp"
#include "src/store/run_lock.hpp"
#include "src/taskfile/parse.hpp"
#include "src/worker/script.hpp"
#include "src/text/file.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

fs::path state_dir(const fs::path& root) {
  return root / ".taskforce";
}

namespace {

// -- Ctrl-C ---------------------------------------------------------------------

std::atomic<int> interrupts{0};

extern "C" void on_interrupt(int) {
  if (interrupts.fetch_add(1) >= 1) {
    // The second Ctrl-C: stop now. The ledger still says running; the next
    // start finds the attempts interrupted and resumes them.
    proc::kill_all_running();
    const char msg[] = "\ntaskforce: stopped at once; run `taskforce resume` "
                       "to continue\n";
    auto n = ::write(2, msg, sizeof msg - 1);
    (void) n;
    ::_exit(1);
  }
}

struct signal_guard {
  struct sigaction old_int {};
  struct sigaction old_term {};
  signal_guard() {
    interrupts = 0;
    struct sigaction sa {};
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
  }
  ~signal_guard() {
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
  }
};

// -- helpers --------------------------------------------------------------------

std::string read_text(const fs::path& p) {
  auto text = read_file(p);
  if (!text)
    throw usage_error(p.string() + ": cannot read the task file");
  return std::move(*text);
}

std::string join(const std::vector<std::string>& xs, const char* sep = ", ") {
  std::string out;
  for (auto& x : xs) {
    if (!out.empty())
      out += sep;
    out += x;
  }
  return out;
}

// Never start on top of uncommitted work the tasks may touch. A dirty
// tracked path or an untracked one (ignored files aside) in the scope of a
// task that is not done (a task without files claims everything) is
// refused in every mode; in integrate mode any dirty tracked file is, as
// merges update the checkout. The task file itself may be edited between
// runs (a fixed gate command): it is never counted.
void refuse_dirty(git::repository& repo, const std::string& task_file,
                  const std::vector<std::string>& added_files,
                  const config& cfg, const std::vector<task_spec>& specs,
                  const std::set<std::string>& done) {
  // taskforce's own folder counts neither (before the first run it is not
  // excluded yet, and may hold a config).
  auto drop_task_file = [&](std::vector<std::string>& paths) {
    paths.erase(std::remove_if(paths.begin(), paths.end(),
                               [&](const std::string& p) {
                                 return p == task_file
                                        || std::find(added_files.begin(),
                                                     added_files.end(), p)
                                             != added_files.end()
                                        || p.rfind(".taskforce/", 0) == 0;
                               }),
                paths.end());
  };
  auto dirty = git::dirty_tracked_paths(repo);
  drop_task_file(dirty);
  if (cfg.run.mode != "assist" && !dirty.empty())
    throw usage_error("the main checkout has uncommitted changes to tracked "
                      "files; commit or stash them first: "
                      + join(dirty));
  auto changed = git::changed_paths(repo);
  drop_task_file(changed);
  std::set<std::string> touched;
  for (auto& s : specs) {
    if (s.done || done.count(s.id) > 0)
      continue;
    scope::coverage cover{s.files};
    for (auto& path : changed)
      if (s.files.empty() || cover.covers(path))
        touched.insert(path);
  }
  if (!touched.empty())
    throw usage_error(
      "the main checkout has uncommitted work where the tasks may write "
      "(their files, or any file for a task without files); commit or stash "
      "it first: "
      + join(std::vector<std::string>(touched.begin(), touched.end())));
}

std::string config_json_of(const config& cfg) {
  auto all = nlohmann::json::parse(config_json(cfg), nullptr, false);
  if (all.is_object() && all.contains("run"))
    return all["run"].dump();
  return "{}";
}

/// Prepares the ledger for driving `run`: attempts cut short become
/// interrupted and a running run paused. What a resume gives another chance
/// (failed, blocked, a conflict merged again) is the scheduler's start.
void prepare_resume(store::ledger& db, const std::string& run_id) {
  db.mark_interrupted(run_id, "the process driving the run stopped",
                      store::wall_clock_ms());
}

} // namespace

int drive_run(const drive_options& opts) {
  auto root = opts.root;
  auto cfg = opts.cfg;
  git::library lib;
  auto repo = git::open(root);
  auto dir = state_dir(root);
  std::error_code ec;
  bool had_state = fs::exists(dir / store::ledger_file_name, ec);
  // A damaged ledger is refused before anything on disk changes (it would
  // forget the runs it holds). Other trouble (a journal that only a writer
  // can roll back) is for the real open below.
  if (had_state) {
    try {
      store::ledger::open(dir / store::ledger_file_name,
                          store::ledger_options{true});
    } catch (const store::ledger_error& e) {
      if (e.code() == store::ledger_errc::schema)
        throw;
    }
  }

  // A new run on a fresh repository: refuse bad input before creating
  // anything at all.
  std::string file_rel;
  std::vector<task_spec> specs;
  if (!opts.file.empty()) {
    file_rel = relative_to(root, opts.file);
    specs = parse_task_file(root, file_rel, cfg);
    if (!had_state)
      refuse_dirty(repo, file_rel, {}, cfg, specs, {});
  } else if (!had_state) {
    throw usage_error("no run to resume in " + root.string());
  }

  fs::create_directories(dir);
  git::ensure_excluded(repo, "/.taskforce/");
  auto lock_or_holder = store::run_lock::try_acquire(
    dir / store::run_lock_file_name);
  if (auto* holder = std::get_if<store::run_lock_holder>(&lock_or_holder))
    throw usage_error(store::describe(*holder)
                      + "; two processes never drive a run at once");
  auto lock = std::move(std::get<store::run_lock>(lock_or_holder));

  // Whatever a killed run left behind: its workers (in their groups or out
  // of them), then git's leftovers.
  kill_leftover_workers(root);
  git::clear_stale_locks(repo);
  git::prune_worktrees(repo);
  git::empty_trash(repo);
  git::complete_checkout(repo);

  auto db = store::ledger::open(dir / store::ledger_file_name);
  auto unfinished = db.latest_unfinished_run();
  std::string run_id;
  if (opts.file.empty()) {
    if (!unfinished) {
      auto last = db.latest_run();
      if (last && last->state == run_state::completed) {
        // A kill after completion may have left merged worktrees behind.
        git::remove_merged_leftovers(repo, last->base_branch, last->id, {});
        std::cout << "nothing to resume: run " << last->id << " ("
                  << last->file << ") completed\n";
        return exit_ok;
      }
      throw usage_error("no unfinished run to resume");
    }
    run_id = unfinished->id;
    file_rel = unfinished->file;
    specs = parse_task_file(root, file_rel, cfg);
  } else if (unfinished && unfinished->file != file_rel) {
    throw usage_error("run " + unfinished->id + " of " + unfinished->file
                      + " is unfinished; `taskforce resume` or `taskforce "
                        "abort` it first");
  } else if (unfinished) {
    run_id = unfinished->id;
  }
  std::vector<std::string> added_files;
  if (!run_id.empty()) {
    // The run's file and the files added to it, as the steering commands
    // load them.
    auto loaded = load_run_tasks(root, db, *db.find_run(run_id), cfg);
    specs = std::move(loaded.specs);
    added_files = std::move(loaded.added_files);
  }
  {
    std::set<std::string> done;
    if (!run_id.empty())
      for (auto& t : db.tasks(run_id))
        if (t.state == task_state::done)
          done.insert(t.id);
    refuse_dirty(repo, file_rel, added_files, cfg, specs, done);
  }

  std::string base_branch;
  if (run_id.empty()) {
    // A new run.
    base_branch = cfg.run.base_branch.empty() ? git::head_branch(repo)
                                              : cfg.run.base_branch;
    if (!git::branch_tip(repo, base_branch))
      throw usage_error("base branch " + base_branch
                        + " has no commit yet; commit something first");
    store::new_run nr;
    auto now = store::wall_clock_ms();
    nr.id = store::new_run_id(now);
    nr.file = file_rel;
    fs::path fp = file_rel;
    nr.file_hash = store::content_hash(
      read_text(fp.is_relative() ? root / fp : fp));
    nr.base_branch = base_branch;
    nr.max_concurrency = cfg.run.max_concurrency;
    nr.config_json = config_json_of(cfg);
    for (auto& s : specs) {
      store::new_task nt;
      nt.id = s.id;
      nt.index = static_cast<int>(s.index);
      nt.title = s.title;
      nt.state = s.done ? task_state::done : task_state::pending;
      if (s.done)
        nt.reason = "checked in the task file";
      nr.tasks.push_back(nt);
    }
    db.create_run(nr, now);
    run_id = nr.id;
  } else {
    auto row = db.find_run(run_id);
    base_branch = row->base_branch;
    prepare_resume(db, run_id);
  }
  lock.set_run(run_id);
  if (!git::head_commit(repo))
    throw usage_error("the repository has no commit yet");

  // The tasks as the orchestrator schedules them.
  std::map<std::string, store::task_row> rows;
  for (auto& r : db.tasks(run_id))
    rows[r.id] = r;
  for (auto& s : specs)
    if (rows.count(s.id) == 0)
      throw usage_error(file_rel + ": task " + s.id
                        + " is not part of run " + run_id
                        + " (the file changed); abort the run to start over");
  plan::task_graph graph{specs};
  std::vector<task_state> states;
  std::vector<std::string> reasons;
  std::vector<task_memory> memory;
  for (size_t i = 0; i < graph.size(); ++i) {
    auto& s = graph.task(i);
    auto& row = rows[s.id];
    states.push_back(row.state);
    reasons.push_back(row.reason.value_or(""));
    task_memory m;
    m.worktree = row.worktree.value_or("");
    m.branch = row.branch.value_or("");
    m.merge_commit = row.merge_commit.value_or("");
    auto attempts = db.attempts(run_id, s.id);
    if (!attempts.empty())
      m.attempt = static_cast<uint64_t>(std::max(0, attempts.back().number));
    if (row.state != task_state::done)
      for (auto& a : attempts)
        m.invocations += 1 + static_cast<uint64_t>(std::max(0, a.repairs));
    memory.push_back(std::move(m));
  }
  auto records = records_of(graph, states, reasons);
  // A hold a person lifted (`approve`) stays lifted though the file still
  // has its marker.
  for (size_t i = 0; i < graph.size(); ++i)
    if (rows[graph.task(i).id].hold_lifted)
      records[i].hold = false;

  // The actors.
  runtime_config sys_cfg{0, false};
  caf::actor_system sys{sys_cfg};
  auto ledger = spawn_ledger_service(sys, std::move(db));
  git_service_setup gs{std::move(repo), root, base_branch, run_id,
                       cfg.run.cleanup_worktrees, {}};
  // Worktrees of done tasks left by an earlier process: spares, if clean.
  // Never one that an unfinished task works in (they share folders once a
  // spare was reused).
  std::set<std::string> in_use;
  for (auto& [id, row] : rows)
    if (row.state != task_state::done && row.worktree)
      in_use.insert(*row.worktree);
  for (auto& [id, row] : rows)
    if (row.state == task_state::done && row.worktree
        && in_use.count(*row.worktree) == 0)
      gs.spares.push_back(*row.worktree);
  auto git = spawn_git_service(sys, std::move(gs));
  // The workers' mail (answers and messages), from the ledger.
  auto mail = spawn_mail_service(sys, dir / store::ledger_file_name);
  caf::scoped_actor self{sys};
  bool tty = !opts.plain && ::isatty(1) == 1;
  live_table table{std::cout, tty, color_wanted()};
  if (!opts.events_file.empty())
    table.write_events_to(opts.events_file);
  std::vector<table_row> table_rows;
  for (size_t i = 0; i < graph.size(); ++i) {
    table_row r;
    r.id = graph.task(i).id;
    r.title = graph.task(i).title;
    r.state = to_string(states[i]);
    r.reason = reasons[i];
    table_rows.push_back(r);
  }
  table.set_rows(std::move(table_rows));
  table.set_ask_user_on_blocked(cfg.run.ask_user_on_blocked);

  auto self_exe = current_executable();
  auto run_cfg = cfg.run;
  worker_launcher launch = [&sys, run_id, run_cfg, root, self_exe, git,
                            mail](const run_task& t, uint64_t attempt,
                                 bool fresh, caf::actor orch) {
    worker_job job;
    job.run_id = run_id;
    job.task = {t.id, t.title, t.body, t.files, t.run, t.verify, t.model};
    job.agent = t.agent;
    job.timeout_ms = t.timeout_ms;
    job.attempt = attempt;
    job.invocations = t.invocations;
    job.previous_failure = t.previous_failure;
    job.known_worktree = t.worktree;
    job.session = t.session;
    job.fresh = fresh;
    job.cfg = run_cfg;
    job.root = root;
    job.self_exe = self_exe;
    job.git = git;
    job.orchestrator = orch;
    job.mail = mail;
    // The orchestrator stops it with cancel_atom; the worker kills its
    // command through the process registry.
    return worker_handle{spawn_worker(sys, std::move(job)), {}};
  };
  orchestrator_setup os;
  os.run_id = run_id;
  os.file = file_rel;
  os.cfg = cfg.run;
  os.rules = rules_of(cfg.run);
  os.graph = std::move(graph);
  os.records = std::move(records);
  os.memory = std::move(memory);
  os.ledger = ledger;
  os.git = git;
  os.watcher = caf::actor_cast<caf::actor>(self);
  os.launch = launch;
  auto orch = spawn_orchestrator(sys, std::move(os));

  signal_guard signals;
  if (!tty)
    std::cout << "run " << run_id << " (" << file_rel << ")\n";
  self->send(orch, start_atom::value);
  std::string final_state, final_reason;
  bool asked_to_pause = false;
  while (final_state.empty()) {
    self->receive(
      [&](run_event& ev) { table.apply(ev); },
      [&](finished_atom, run_state state, std::string& reason) {
        final_state = to_string(state);
        final_reason = reason;
      },
      caf::after(std::chrono::milliseconds(200)) >> [&] {
        if (interrupts.load() > 0 && !asked_to_pause) {
          asked_to_pause = true;
          if (!tty)
            std::cout << "interrupted: pausing (Ctrl-C again to stop at "
                         "once)\n";
          self->send(orch, pause_atom::value,
                     std::string{"interrupted by Ctrl-C"}, true);
        }
        table.redraw(now_ms());
      });
  }
  table.finish(now_ms());
  // Clean merged worktrees kept for reuse go now; anything holding work
  // stays.
  self->request(git, std::chrono::seconds(60), finished_atom::value)
    .receive([](bool) {}, [](caf::error&) {});
  // Counted from the ledger's point of view: what the orchestrator recorded.
  int code = exit_failed;
  if (final_state == "completed" && final_reason.empty())
    code = exit_ok;
  if (final_state == "completed")
    std::cout << "run " << run_id << " completed"
              << (final_reason.empty() ? "" : ": " + final_reason) << '\n';
  else if (final_state == "paused")
    std::cout << "run " << run_id << " paused: " << final_reason
              << "\nresume with: taskforce resume\n";
  else
    std::cout << "run " << run_id << " " << final_state
              << (final_reason.empty() ? "" : ": " + final_reason) << '\n';
  self->send_exit(orch, caf::exit_reason::user_shutdown);
  self->send_exit(git, caf::exit_reason::user_shutdown);
  self->send_exit(ledger, caf::exit_reason::user_shutdown);
  self->send_exit(mail, caf::exit_reason::user_shutdown);
  return code;
}

} // namespace taskforce::cli
