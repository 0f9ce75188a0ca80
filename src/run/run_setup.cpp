#include "src/run/run_setup.hpp"
#include "src/run/assist.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <variant>

#include <nlohmann/json.hpp>

#include "src/git/git.hpp"
#include "src/proc/registry.hpp"
#include "src/scope/coverage.hpp"
#include "src/taskfile/parse.hpp"
#include "src/text/file.hpp"
#include "src/text/join.hpp"

namespace fs = std::filesystem;

namespace taskforce::run {

fs::path state_dir(const fs::path& root) {
  return root / ".taskforce";
}

fs::path worker_records(const fs::path& root) {
  return state_dir(root) / "procs";
}

size_t kill_leftover_workers(const fs::path& root) {
  return proc::recover_leftovers(worker_records(root).string());
}

namespace {

std::string read_text(const fs::path& p) {
  auto text = read_file(p);
  if (!text)
    throw setup_error(p.string() + ": cannot read the task file");
  return std::move(*text);
}

fs::path in_repo(const fs::path& root, const std::string& file_rel) {
  fs::path path = file_rel;
  return path.is_relative() ? root / path : path;
}

// Never start on top of uncommitted work the tasks may touch. A dirty
// tracked path or an untracked one (ignored files aside) in the scope of a
// task that is not done (a task without files claims everything) is
// refused in every mode; in integrate mode any dirty tracked file is, as
// merges update the checkout. The task files themselves may be edited
// between runs (a fixed gate command): they are never counted.
void refuse_dirty(git::repository& repo,
                  const std::vector<std::string>& task_files, const config& cfg,
                  const std::vector<task_spec>& specs,
                  const std::set<std::string>& done) {
  // The progress file is the run's to write (run.progressFile), like the
  // boxes of the task files.
  auto own = task_files;
  std::string progress;
  if (check_progress_file(repo.workdir(), cfg.run.progress_file, &progress)
        .empty()
      && !progress.empty())
    own.push_back(progress);
  // taskforce's own folder counts neither (before the first run it is not
  // excluded yet, and may hold a config).
  auto drop_task_files = [&](std::vector<std::string>& paths) {
    paths.erase(std::remove_if(paths.begin(), paths.end(),
                               [&](const std::string& p) {
                                 return std::find(own.begin(), own.end(), p)
                                          != own.end()
                                        || p.rfind(".taskforce/", 0) == 0;
                               }),
                paths.end());
  };
  auto dirty = git::dirty_tracked_paths(repo);
  drop_task_files(dirty);
  if (cfg.run.mode != "assist" && !dirty.empty())
    throw setup_error("the main checkout has uncommitted changes to tracked "
                      "files; commit or stash them first: "
                      + join(dirty));
  auto changed = git::changed_paths(repo);
  drop_task_files(changed);
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
    throw setup_error(
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

} // namespace

store::new_task new_task_of(const task_spec& spec) {
  store::new_task nt;
  nt.id = spec.id;
  nt.index = static_cast<int>(spec.index);
  nt.title = spec.title;
  nt.state = spec.done ? task_state::done : task_state::pending;
  if (spec.done)
    nt.reason = "checked in the task file";
  return nt;
}

std::string relative_to(const fs::path& root, const std::string& file) {
  auto abs = fs::weakly_canonical(fs::absolute(file));
  auto rel = abs.lexically_relative(fs::weakly_canonical(root));
  if (rel.empty() || *rel.begin() == "..")
    return abs.string();
  return rel.generic_string();
}

std::vector<task_spec> parse_task_file(const fs::path& root,
                                       const std::string& file_rel,
                                       const config& cfg) {
  auto text = read_text(in_repo(root, file_rel));
  auto popts = taskfile::options_from(cfg.run);
  popts.working_directory = root.string();
  popts.repository = root.string();
  auto parsed = taskfile::parse(text, file_rel, popts);
  if (!parsed.ok()) {
    std::string msg;
    for (auto& e : parsed.errors) {
      if (!msg.empty())
        msg += "\ntaskforce: ";
      msg += taskfile::format_error(file_rel, e);
    }
    throw setup_error(msg);
  }
  if (parsed.tasks.empty())
    throw setup_error(file_rel + ": no tasks");
  return std::move(parsed.tasks);
}

loaded_run load_run(const fs::path& root, const store::ledger& db,
                    const std::string& run_id, const config& cfg) {
  loaded_run out;
  auto row = db.find_run(run_id);
  if (!row)
    throw setup_error("no run " + run_id);
  out.run = *row;
  out.added_files = db.added_files(run_id);
  auto specs = parse_task_file(root, row->file, cfg);
  for (auto& f : out.added_files) {
    auto more = parse_task_file(root, f, cfg);
    specs.insert(specs.end(), std::make_move_iterator(more.begin()),
                 std::make_move_iterator(more.end()));
  }
  std::map<std::string, store::task_row> rows;
  for (auto& r : db.tasks(run_id))
    rows[r.id] = r;
  for (auto& s : specs)
    if (rows.count(s.id) == 0)
      throw setup_error(row->file + ": task " + s.id + " is not part of run "
                        + run_id
                        + " (the file changed); abort the run to start over");
  out.graph = plan::task_graph{std::move(specs)};
  std::vector<task_state> states;
  std::vector<std::string> reasons;
  std::vector<bool> lifted;
  for (size_t i = 0; i < out.graph.size(); ++i) {
    auto& s = out.graph.task(i);
    auto& r = rows[s.id];
    states.push_back(r.state);
    reasons.push_back(r.reason.value_or(""));
    lifted.push_back(r.hold_lifted);
    task_memory m;
    m.worktree = r.worktree.value_or("");
    m.branch = r.branch.value_or("");
    m.merge_commit = r.merge_commit.value_or("");
    m.session = r.session.value_or("");
    auto attempts = db.attempts(run_id, s.id);
    if (!attempts.empty())
      m.attempt = static_cast<uint64_t>(std::max(0, attempts.back().number));
    if (r.state != task_state::done)
      for (auto& a : attempts)
        m.invocations += 1 + static_cast<uint64_t>(std::max(0, a.repairs));
    out.memory.push_back(std::move(m));
    out.rows.push_back(r);
  }
  out.records = records_of(out.graph, states, reasons, lifted);
  out.rule_set = rules_of(cfg.run);
  return out;
}

open_result open_run(const open_options& opts) {
  auto& root = opts.root;
  auto& cfg = opts.cfg;
  if (auto why = check_progress_file(root, cfg.run.progress_file); !why.empty())
    throw setup_error(why);
  auto lib = std::make_unique<git::library>();
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
      refuse_dirty(repo, {file_rel}, cfg, specs, {});
  } else if (!had_state) {
    throw setup_error("no run to resume in " + root.string());
  }

  fs::create_directories(dir);
  git::ensure_excluded(repo, "/.taskforce/");
  auto lock_or_holder
    = store::run_lock::try_acquire(dir / store::run_lock_file_name);
  if (auto* holder = std::get_if<store::run_lock_holder>(&lock_or_holder))
    throw setup_error(store::describe(*holder)
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
        open_result r;
        r.completed_run = *last;
        return r;
      }
      throw setup_error("no unfinished run to resume");
    }
    run_id = unfinished->id;
    file_rel = unfinished->file;
  } else if (unfinished && unfinished->file != file_rel) {
    throw setup_error("run " + unfinished->id + " of " + unfinished->file
                      + " is unfinished; `taskforce resume` or `taskforce "
                        "abort` it first");
  } else if (unfinished) {
    run_id = unfinished->id;
  }

  std::string base_branch;
  if (run_id.empty()) {
    // A new run.
    refuse_dirty(repo, {file_rel}, cfg, specs, {});
    base_branch = cfg.run.base_branch.empty() ? git::head_branch(repo)
                                              : cfg.run.base_branch;
    if (!git::branch_tip(repo, base_branch))
      throw setup_error("base branch " + base_branch
                        + " has no commit yet; commit something first");
    store::new_run nr;
    auto now = store::wall_clock_ms();
    nr.id = store::new_run_id(now);
    nr.file = file_rel;
    nr.file_hash = store::content_hash(read_text(in_repo(root, file_rel)));
    nr.base_branch = base_branch;
    nr.max_concurrency = cfg.run.max_concurrency;
    nr.config_json = config_json_of(cfg);
    for (auto& s : specs)
      nr.tasks.push_back(new_task_of(s));
    db.create_run(nr, now);
    run_id = nr.id;
  } else {
    // Resuming: the run as its files have it now, checked against the
    // checkout before anything changes.
    auto loaded = load_run(root, db, run_id, cfg);
    std::set<std::string> done;
    std::vector<task_spec> all;
    for (size_t i = 0; i < loaded.graph.size(); ++i) {
      all.push_back(loaded.graph.task(i));
      if (loaded.rows[i].state == task_state::done)
        done.insert(loaded.graph.task(i).id);
    }
    auto files = loaded.added_files;
    files.push_back(file_rel);
    refuse_dirty(repo, files, cfg, all, done);
    base_branch = loaded.run.base_branch;
    // Attempts a killed driver cut short become interrupted and a running
    // run paused. What a resume gives another chance (failed, blocked, a
    // conflict merged again) is the scheduler's start.
    db.mark_interrupted(run_id, "the process driving the run stopped",
                        store::wall_clock_ms());
  }
  lock.set_run(run_id);
  if (!git::head_commit(repo))
    throw setup_error("the repository has no commit yet");

  auto loaded = load_run(root, db, run_id, cfg);
  // Worktrees of done tasks left by an earlier process: spares, if clean.
  // Never one that an unfinished task works in (they share folders once a
  // spare was reused).
  std::vector<std::string> spares;
  std::set<std::string> in_use;
  for (auto& row : loaded.rows)
    if (row.state != task_state::done && row.worktree)
      in_use.insert(*row.worktree);
  for (auto& row : loaded.rows)
    if (row.state == task_state::done && row.worktree
        && in_use.count(*row.worktree) == 0)
      spares.push_back(*row.worktree);
  open_result r;
  r.run.emplace(opened_run{std::move(lib), std::move(repo), std::move(lock),
                           std::move(db), file_rel, base_branch,
                           std::move(loaded), std::move(spares)});
  return r;
}

} // namespace taskforce::run
