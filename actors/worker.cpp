#include "actors/worker.hpp"

#include <fstream>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "src/report/report.hpp"
#include "src/worker/agent_preset.hpp"
#include "src/worker/prompt.hpp"
#include "src/worker/script.hpp"
#include "src/scope/coverage.hpp"
#include "src/scope/physical.hpp"
#include "src/store/ledger.hpp"

namespace fs = std::filesystem;

namespace taskforce {

fs::path worker_records(const fs::path& root) {
  return root / ".taskforce" / "procs";
}

size_t kill_leftover_workers(const fs::path& root) {
  return proc::recover_leftovers(worker_records(root).string());
}

backend_call backend_command(const worker_job& job, const backend_round& r) {
  auto& t = job.task;
  backend_call call;
  if (r.backend == "shell") {
    if (t.run.empty())
      throw std::runtime_error("the shell worker needs a `run:` command");
    call.argv = {"/bin/sh", "-c", t.run};
    return call;
  }
  if (r.backend == "scripted") {
    auto script = job.cfg.script_file;
    if (script.empty())
      throw std::runtime_error(
        "the scripted worker needs run.scriptFile in the config");
    if (fs::path{script}.is_relative())
      script = (job.root / script).string();
    call.argv = scripted_worker_argv(job.self_exe, script, t.id, r.invocation);
    return call;
  }
  // agent: a preset with the composed prompt.
  auto preset = load_agent_preset(r.preset, job.root.string());
  prompt_request pr;
  pr.task_id = t.id;
  pr.title = t.title;
  pr.body = t.body;
  pr.files = t.files;
  pr.verify = t.verify;
  pr.instructions = job.cfg.worker_instructions;
  pr.instructions_file_text = read_instructions_file(
    job.cfg.worker_instructions_file, job.root.string());
  pr.repair_round = static_cast<int>(r.repair);
  pr.gate_result = r.gate_result;
  pr.gate_tail = r.gate_tail;
  pr.previous_failure = r.previous_failure;
  agent_values v;
  v.prompt = compose_prompt(pr);
  // Outside the worktree: inside, it would count as a change of the task.
  v.prompt_file = (r.log_dir / ("prompt-" + std::to_string(r.invocation)
                                + ".md"))
                    .string();
  {
    std::ofstream out(v.prompt_file, std::ios::binary);
    out << v.prompt;
  }
  v.model = t.model.empty() ? job.cfg.worker_model : t.model;
  v.worktree = r.cwd.string();
  v.task_id = t.id;
  v.title = t.title;
  v.files = t.files;
  auto cmd = expand_agent_preset(preset, v);
  call.argv = std::move(cmd.argv);
  call.env = std::move(cmd.env);
  call.stdin_file = std::move(cmd.stdin_file);
  return call;
}

namespace {

std::string tail_of(const std::string& text, size_t n) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

std::string join(const std::vector<std::string>& xs) {
  std::string out;
  for (auto& x : xs) {
    if (!out.empty())
      out += ", ";
    out += x;
  }
  return out;
}

/// The attempt, step by step, on the worker's own thread.
class attempt_runner {
public:
  attempt_runner(caf::blocking_actor* self, worker_job& job)
    : self_(self), job_(job) {
    out_.task_id = job.task.id;
    out_.attempt = job.attempt;
  }

  void run() {
    try {
      steps();
    } catch (const std::exception& e) {
      out_.end = run::attempt_end::failed;
      out_.reason = e.what();
    }
    if (job_.cancel.cancelled() && out_.end != run::attempt_end::done) {
      out_.end = run::attempt_end::interrupted;
      out_.reason = "interrupted";
    }
    self_->send(job_.orchestrator, outcome_atom::value, out_);
  }

private:
  void progress(attempt_phase phase, const std::string& detail) {
    attempt_progress p{job_.task.id, job_.attempt, phase, detail, {}, {}};
    if (phase == attempt_phase::leased) {
      p.worktree = out_.worktree;
      p.branch = out_.branch;
    }
    self_->send(job_.orchestrator, progress_atom::value, std::move(p));
  }

  bool lease() {
    auto& cfg = job_.cfg;
    if (!cfg.use_worktrees || cfg.mode == "assist")
      return in_place();
    worktree_request req{job_.run_id, job_.task.id, job_.fresh,
                         job_.task.worktree};
    bool ok = false;
    std::string why;
    self_->request(job_.git, caf::infinite, lease_atom::value, req)
      .receive(
        [&](worktree_lease& l) {
          ok = true;
          out_.worktree = l.path;
          out_.branch = l.branch;
          start_ = l.start;
          cwd_ = l.path;
        },
        [&](caf::error& err) { why = self_->system().render(err); });
    if (ok)
      return true;
    if (cfg.require_worktrees) {
      out_.reason = "cannot create the worktree: " + why;
      return false;
    }
    spdlog::warn("{}: no worktree ({}), running in place", job_.task.id, why);
    return in_place();
  }

  /// In place, the attempt is judged against the checkout as it is now:
  /// the git service keeps a snapshot of it.
  bool in_place() {
    cwd_ = job_.root;
    std::string why;
    self_->request(job_.git, caf::infinite, snapshot_atom::value, cwd_.string())
      .receive([&](std::string& head) { start_ = head; },
               [&](caf::error& err) { why = self_->system().render(err); });
    if (why.empty())
      return true;
    out_.reason = "cannot take a snapshot of the checkout: " + why;
    return false;
  }

  /// The task's scope where it lies in this checkout now: a symlink that
  /// merged work added since the plan may lead it elsewhere, or out.
  bool resolve_scope() {
    scope::physical_root disk{cwd_};
    for (auto& entry : job_.task.files) {
      auto where = disk.resolve_entry(entry);
      if (!where.error.empty()) {
        out_.reason = "files: " + where.error;
        return false;
      }
      scope_.push_back(where.path);
    }
    return true;
  }

  /// What the attempt brings so far, as the git service sees it.
  scope_report changes() {
    scope_request req{job_.run_id,   job_.task.id, job_.attempt,
                      cwd_.string(), out_.branch, start_};
    scope_report report;
    std::string why;
    self_->request(job_.git, caf::infinite, changed_atom::value, req)
      .receive([&](scope_report& r) { report = std::move(r); },
               [&](caf::error& err) { why = self_->system().render(err); });
    if (!why.empty())
      throw std::runtime_error("cannot list the changes: " + why);
    return report;
  }

  /// Whether everything the attempt brings lies in the task's scope after
  /// `gate` (false: after the worker) changed the checkout; sets the
  /// reason when not. HEAD must not have moved, no changed path may lead
  /// out of the repository, and with enforceDiffScope every changed path
  /// must be covered by the scope where it physically lies.
  bool in_scope(bool gate) {
    auto who = std::string{gate ? "the gate" : "the worker"};
    auto report = changes();
    if (!report.moved.empty()) {
      out_.reason = "after " + who + " ran, " + report.moved;
      return false;
    }
    scope::physical_root disk{cwd_};
    scope::coverage cover{scope_};
    bool judge = job_.cfg.enforce_diff_scope && !scope_.empty();
    std::vector<std::string> refused;
    std::vector<std::string> outside;
    for (auto& path : report.paths) {
      auto where = disk.locate_changed(path);
      if (!where.error.empty())
        refused.push_back(where.error);
      else if (judge && !cover.covers(where.path))
        outside.push_back(path);
    }
    if (!refused.empty()) {
      out_.reason = who + " left paths no task may write: " + join(refused);
      return false;
    }
    if (outside.empty())
      return true;
    out_.reason = gate ? "the gate left changes outside the task's scope: "
                           + join(outside)
                           + " (files a gate generates belong in .gitignore)"
                       : "changed files outside its scope: " + join(outside);
    return false;
  }

  proc::run_result run_command(backend_call call, const fs::path& log,
                               int64_t timeout_ms, bool append) {
    proc::run_options ro;
    ro.argv = std::move(call.argv);
    ro.stdin_file = std::move(call.stdin_file);
    ro.cwd = cwd_.string();
    ro.log_file = log.string();
    ro.append_log = append;
    ro.timeout = std::chrono::milliseconds(timeout_ms); // saturates in run()
    ro.cancel = job_.cancel;
    ro.env = {{"TASKFORCE_RUN", job_.run_id},
              {"TASKFORCE_TASK", job_.task.id},
              {"TASKFORCE_ATTEMPT", std::to_string(job_.attempt)},
              {"TASKFORCE_REPAIR", std::to_string(out_.repairs)},
              {"TASKFORCE_WORKTREE", cwd_.string()},
              {"TASKFORCE_ROOT", job_.root.string()}};
    if (!repair_note_.empty())
      ro.env.emplace_back("TASKFORCE_GATE_FAILURE", tail_of(repair_note_, 4000));
    for (auto& kv : call.env)
      ro.env.push_back(std::move(kv));
    // Recorded before it starts, so that the next driver finds what a crash
    // of this one left running (kill_leftover_workers).
    ro.label = job_.run_id + "/" + job_.task.id + "/";
    ro.record_folder = worker_records(job_.root).string();
    return proc::run(ro);
  }

  bool interrupted() {
    if (!job_.cancel.cancelled())
      return false;
    out_.end = run::attempt_end::interrupted;
    out_.reason = "interrupted";
    return true;
  }

  void steps() {
    auto& t = job_.task;
    auto& cfg = job_.cfg;
    out_.end = run::attempt_end::failed;
    if (interrupted())
      return;
    if (!lease() || !resolve_scope())
      return;
    progress(attempt_phase::leased, "");
    auto log_dir = job_.root / ".taskforce"
                   / store::attempt_log_dir(job_.run_id, t.id,
                                            static_cast<int>(job_.attempt));
    fs::create_directories(log_dir);
    // `agent:` names a backend, or an agent preset for the agent backend.
    backend_round round;
    round.backend = t.agent.empty() ? cfg.worker : t.agent;
    round.preset = cfg.agent_preset;
    if (round.backend != "shell" && round.backend != "scripted"
        && round.backend != "agent") {
      round.preset = round.backend;
      round.backend = "agent";
    }
    round.cwd = cwd_;
    round.log_dir = log_dir;
    round.previous_failure = t.previous_failure;
    auto backend = parse_worker_backend(round.backend)
                     .value_or(worker_backend::shell);
    int64_t timeout = t.timeout_ms > 0 ? t.timeout_ms : cfg.task_timeout_ms;
    for (;;) {
      round.invocation = t.invocations + out_.turns + 1;
      round.repair = out_.repairs;
      auto call = backend_command(job_, round);
      ++out_.turns;
      auto r = run_command(std::move(call), log_dir / "worker.log", timeout,
                           out_.repairs > 0);
      out_.exit_code = r.exit_code;
      if (interrupted())
        return;
      auto reading = read_report(r.tail);
      auto v = judge_worker(backend, r, reading);
      if (v.report && v.report->usage) {
        out_.spent.input_tokens += v.report->usage->input_tokens;
        out_.spent.output_tokens += v.report->usage->output_tokens;
        out_.spent.cost_usd += v.report->usage->cost_usd;
      }
      out_.tail = tail_of(r.tail, 2000);
      if (v.kind == verdict_kind::blocked) {
        out_.end = run::attempt_end::blocked;
        out_.reason = v.reason;
        return;
      }
      if (v.kind == verdict_kind::failed) {
        out_.reason = "worker: " + v.reason;
        return;
      }
      progress(attempt_phase::verifying, "");
      if (!in_scope(false))
        return;
      if (t.verify.empty()) {
        out_.end = run::attempt_end::done;
        out_.reason = v.reason;
        return;
      }
      auto g = run_command(backend_call{{"/bin/sh", "-c", t.verify}, {}, {}},
                           log_dir / "verify.log", cfg.verify_timeout_ms,
                           out_.repairs > 0);
      if (interrupted())
        return;
      out_.tail = tail_of(g.tail, 2000);
      out_.exit_code = g.exit_code;
      if (g.success()) {
        // What the gate left is part of what the task brings.
        if (!in_scope(true))
          return;
        out_.end = run::attempt_end::done;
        out_.reason = v.reason;
        return;
      }
      auto failure = "gate failed (" + g.describe() + ")";
      if (!cfg.repair_on_failure || out_.repairs >= cfg.max_repairs) {
        out_.reason = failure;
        return;
      }
      ++out_.repairs;
      repair_note_ = failure + "\n" + g.tail;
      round.gate_result = g.describe();
      round.gate_tail = g.tail;
      progress(attempt_phase::repairing,
               "repair " + std::to_string(out_.repairs) + ": " + failure);
    }
  }

  caf::blocking_actor* self_;
  worker_job& job_;
  attempt_outcome out_;
  fs::path cwd_;
  /// Where the task's branch (in place: HEAD) was as the attempt began.
  std::string start_;
  /// The task's files where they physically lie in cwd_.
  std::vector<std::string> scope_;
  std::string repair_note_;
};

void worker(caf::blocking_actor* self, worker_job job) {
  attempt_runner runner{self, job};
  runner.run();
}

} // namespace

caf::actor spawn_worker(caf::actor_system& sys, worker_job job) {
  return sys.spawn(worker, std::move(job));
}

} // namespace taskforce
