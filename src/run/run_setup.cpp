#include "src/run/run_setup.hpp"
#include "src/run/assist.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <variant>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "src/git/git.hpp"
#include "src/proc/registry.hpp"
#include "src/run/base_record.hpp"
#include "src/run/preflight.hpp"
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
// task that is not done (a task without files claims everything), or a
// file standing where such a scope needs a folder, is refused in every
// mode, named with its tasks; in integrate mode any dirty tracked file is, as
// merges update the checkout. The task files themselves may be edited
// between runs (a fixed gate command): they are never counted, and neither
// are the paths in the scope of an attempt cut short in place (`theirs`:
// those tasks; it goes on over what it wrote).
void refuse_dirty(git::repository& repo,
                  const std::vector<std::string>& task_files, const config& cfg,
                  const std::vector<task_spec>& specs,
                  const std::set<std::string>& done,
                  const std::set<std::string>& theirs = {}) {
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
  std::vector<scope::coverage> cut_short;
  bool cut_short_everywhere = false;
  for (auto& s : specs)
    if (theirs.count(s.id) > 0) {
      cut_short_everywhere |= s.files.empty();
      cut_short.emplace_back(s.files);
    }
  auto drop_task_files = [&](std::vector<std::string>& paths) {
    paths.erase(std::remove_if(paths.begin(), paths.end(),
                               [&](const std::string& p) {
                                 if (cut_short_everywhere)
                                   return true;
                                 for (auto& c : cut_short)
                                   if (c.covers(p))
                                     return true;
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
  // Each path with the tasks that would write there: inside a task's scope,
  // or a file standing where its scope needs a folder (the merge would have
  // to replace it).
  std::map<std::string, std::vector<std::string>> touched;
  for (auto& s : specs) {
    if (s.done || done.count(s.id) > 0)
      continue;
    scope::coverage cover{s.files};
    for (auto& path : changed)
      if (s.files.empty() || cover.covers(path)
          || scope::in_the_way(s.files, path))
        touched[path].push_back(s.id);
  }
  if (touched.empty())
    return;
  std::vector<std::string> named;
  for (auto& [path, ids] : touched)
    named.push_back(path + " (" + join(ids) + ")");
  throw setup_error(
    "the main checkout has untracked or uncommitted files where the tasks "
    "will write (their files, or any file for a task without files); "
    "commit, move or remove them first: "
    + join(named, "; "));
}

/// The tasks of `specs` that the last run of `file_rel` (completed or
/// aborted) had done and merged, whose content did not change since and
/// whose merge commit the base branch still holds.
std::vector<merged_before>
find_merged_before(const store::ledger& db, git::repository& repo,
                   const std::string& file_rel, const std::string& base_branch,
                   const std::vector<task_spec>& specs) {
  std::vector<merged_before> out;
  auto last = db.latest_run_of(file_rel);
  if (!last
      || (last->state != run_state::completed
          && last->state != run_state::aborted))
    return out;
  auto tip = git::branch_tip(repo, base_branch);
  if (!tip)
    return out;
  std::map<std::string, store::task_row> rows;
  for (auto& r : db.tasks(last->id))
    rows[r.id] = r;
  for (auto& s : specs) {
    auto found = rows.find(s.id);
    if (s.done || found == rows.end())
      continue;
    auto& r = found->second;
    if (r.state != task_state::done || !r.merge_commit || !r.content_hash
        || *r.content_hash != task_content_hash(s))
      continue;
    // The base may have been reset since: the work must still be in it.
    bool in_base = false;
    try {
      in_base = git::is_ancestor(repo, *r.merge_commit, *tip);
    } catch (const std::exception&) {
      in_base = false; // the commit is gone
    }
    if (!in_base)
      continue;
    // A task carried over by a rerun names the run that merged it.
    auto run_id = last->id;
    const std::string prefix = carried_over_reason;
    if (r.reason && r.reason->rfind(prefix, 0) == 0)
      run_id = r.reason->substr(prefix.size());
    out.push_back({s.id, run_id, *r.merge_commit});
  }
  return out;
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
  nt.content_hash = task_content_hash(spec);
  return nt;
}

std::string task_content_hash(const task_spec& spec) {
  // Each value with its length, so no two tasks read the same.
  std::string text;
  auto put = [&text](const char* key, const std::string& value) {
    text += key;
    text += ' ';
    text += std::to_string(value.size());
    text += ':';
    text += value;
    text += '\n';
  };
  auto put_opt = [&](const char* key, const std::optional<std::string>& v) {
    if (v)
      put(key, *v);
  };
  auto put_list = [&](const char* key, const std::vector<std::string>& xs) {
    for (auto& x : xs)
      put(key, x);
  };
  put("id", spec.id);
  put("title", spec.title);
  put("body", spec.body);
  put_list("dep", spec.deps);
  put_list("file", spec.files);
  put_list("lock", spec.locks);
  put("priority", std::to_string(spec.priority));
  put_opt("verify", spec.verify);
  put_opt("run", spec.run);
  put_opt("agent", spec.agent);
  put_opt("model", spec.model);
  put_opt("risk", spec.risk);
  if (spec.timeout_ms)
    put("timeout", std::to_string(*spec.timeout_ms));
  if (spec.design)
    put("design", "1");
  return store::content_hash(text);
}

void refuse_preflight(const fs::path& root, const std::string& file_rel,
                      const std::vector<task_spec>& tasks, const config& cfg) {
  auto found = preflight(tasks, {cfg.run, root.string(), current_path()});
  if (found.empty())
    return;
  std::string msg;
  for (auto& f : found) {
    if (!msg.empty())
      msg += "\ntaskforce: ";
    msg += taskfile::format_error(file_rel, {f.line, f.message});
  }
  throw setup_error(msg);
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
  // A warning of the parse (checkboxes that are not tasks) refuses a run:
  // it would run something else than the file says.
  parsed.errors.insert(parsed.errors.end(), parsed.warnings.begin(),
                       parsed.warnings.end());
  if (!parsed.ok()) {
    std::stable_sort(parsed.errors.begin(), parsed.errors.end(),
                     [](const auto& a, const auto& b) {
                       return a.line < b.line;
                     });
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
  plan::graph_options gopts;
  if (cfg.run.co_change_learning)
    gopts.co_change = db.co_change_pairs(cfg.run.co_change_min_count);
  out.graph = plan::task_graph{std::move(specs), gopts};
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
    for (auto& a : attempts)
      if (a.state == store::attempt_state::failed)
        ++m.failed;
    out.memory.push_back(std::move(m));
    out.rows.push_back(r);
  }
  out.records = records_of(out.graph, states, reasons, lifted);
  out.rule_set = rules_of(cfg.run);
  out.rule_set.budget = budget_of(cfg.run, row->config_json);
  for (auto& [id, r] : rows) {
    auto& u = r.usage;
    out.spent += spend{
      static_cast<uint64_t>(std::max<int64_t>(0, u.input_tokens)),
      static_cast<uint64_t>(std::max<int64_t>(0, u.output_tokens)), u.cost_usd};
  }
  return out;
}

size_t learn_co_changes(git::repository& repo, store::ledger& db) {
  size_t counted = 0;
  for (auto& m : db.co_change_uncounted()) {
    std::vector<std::string> files;
    // A task that changed nothing recorded the base it found: somebody
    // else's commit, no co-change of its own (counted, so not looked at
    // again).
    if (m.reason == no_changes_reason) {
      if (db.record_co_change(m.run_id, m.task_id, files))
        ++counted;
      continue;
    }
    try {
      auto parent = git::resolve(repo, m.merge_commit + "^1");
      files = git::paths_between(repo, parent, m.merge_commit);
    } catch (const std::exception&) {
      // The commit is gone or has no parent: nothing to learn from it,
      // and nothing to look at again.
      files.clear();
    }
    if (db.record_co_change(m.run_id, m.task_id, files))
      ++counted;
  }
  return counted;
}

void learn_co_changes(const fs::path& root, const config& cfg) {
  if (!cfg.run.co_change_learning)
    return;
  git::library lib;
  auto repo = git::open(root);
  auto db = store::ledger::open(state_dir(root) / store::ledger_file_name);
  learn_co_changes(repo, db);
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
    if (!had_state) {
      refuse_preflight(root, file_rel, specs, cfg);
      refuse_dirty(repo, {file_rel}, cfg, specs, {});
    }
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

  auto db = store::ledger::open(dir / store::ledger_file_name);
  auto unfinished = db.latest_unfinished_run();
  // A merge a kill cut short between the base's move and the update of the
  // checkout: the ledger names it, and only it is completed (an aborted
  // run's too). Nothing else in the checkout is touched.
  {
    std::vector<store::run_row> runs;
    if (unfinished)
      runs.push_back(*unfinished);
    if (auto last = db.latest_run();
        last && (!unfinished || last->id != unfinished->id))
      runs.push_back(*last);
    for (auto& r : runs)
      for (auto& note : finish_landings(repo, db, r.id, r.base_branch))
        spdlog::warn("{}", note);
  }
  // What earlier runs merged is learned before the new graph is built.
  if (cfg.run.co_change_learning)
    learn_co_changes(repo, db);
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

  std::vector<merged_before> open_merged;
  std::string base_branch;
  bool busy = false;
  if (run_id.empty()) {
    // A new run. Tasks an earlier run of the file merged (same content,
    // still in the base) are not run again.
    base_branch = cfg.run.base_branch.empty() ? git::head_branch(repo)
                                              : cfg.run.base_branch;
    if (!git::branch_tip(repo, base_branch))
      throw setup_error("base branch " + base_branch
                        + " has no commit yet; commit something first");
    auto merged = find_merged_before(db, repo, file_rel, base_branch, specs);
    std::map<std::string, const merged_before*> carried;
    for (auto& m : merged)
      carried[m.task_id] = &m;
    std::vector<task_spec> left;
    for (auto& s : specs)
      if (!s.done && carried.count(s.id) == 0)
        left.push_back(s);
    if (left.empty() && !merged.empty()) {
      open_result r;
      r.merged = std::move(merged);
      return r;
    }
    refuse_preflight(root, file_rel, left, cfg);
    std::set<std::string> done;
    for (auto& m : merged)
      done.insert(m.task_id);
    refuse_dirty(repo, {file_rel}, cfg, specs, done);
    store::new_run nr;
    auto now = store::wall_clock_ms();
    nr.id = store::new_run_id(now);
    nr.file = file_rel;
    nr.file_hash = store::content_hash(read_text(in_repo(root, file_rel)));
    nr.base_branch = base_branch;
    nr.max_concurrency = cfg.run.max_concurrency;
    nr.config_json = config_json_of(cfg);
    for (auto& s : specs) {
      auto nt = new_task_of(s);
      if (auto c = carried.find(s.id); c != carried.end()) {
        nt.state = task_state::done;
        nt.reason = carried_over_reason + c->second->run_id;
        nt.merge_commit = c->second->merge_commit;
      }
      nr.tasks.push_back(std::move(nt));
    }
    db.create_run(nr, now);
    run_id = nr.id;
    open_merged = std::move(merged);
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
    // The run's file, then each added file: a task numbered 1 starts the
    // next one (each has at least one task).
    std::vector<std::string> sources{file_rel};
    sources.insert(sources.end(), loaded.added_files.begin(),
                   loaded.added_files.end());
    size_t source = 0;
    std::vector<task_spec> left;
    for (size_t i = 0; i < all.size(); ++i) {
      if (i > 0 && all[i].index == 1) {
        refuse_preflight(root, sources[source], left, cfg);
        left.clear();
        source = std::min(source + 1, sources.size() - 1);
      }
      if (done.count(all[i].id) == 0)
        left.push_back(all[i]);
    }
    refuse_preflight(root, sources[source], left, cfg);
    // Attempts cut short in the main checkout (in place or assist: no
    // worktree of their own) go on over what they wrote, and the base
    // moves that leave no name may be theirs.
    std::set<std::string> cut_short;
    for (auto& row : loaded.rows) {
      bool cut = in_attempt(row.state) || row.state == task_state::merging
                 || row.state == task_state::interrupted;
      if (cut && !db.attempts(run_id, row.id).empty()) {
        busy = busy || row.state != task_state::interrupted;
        if (!row.worktree)
          cut_short.insert(row.id);
      }
    }
    refuse_dirty(repo, files, cfg, all, done, cut_short);
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
  r.merged = std::move(open_merged);
  auto vouched = read_base_state(db, run_id).vouched;
  r.run.emplace(opened_run{std::move(lib), std::move(repo), std::move(lock),
                           std::move(db), file_rel, base_branch,
                           std::move(loaded), std::move(spares),
                           std::move(vouched), busy});
  return r;
}

} // namespace taskforce::run
