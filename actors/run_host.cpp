#include "actors/run_host.hpp"

#include <map>
#include <set>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/assist_writer.hpp"
#include "actors/git_service.hpp"
#include "actors/ledger_service.hpp"
#include "actors/merge_check.hpp"
#include "actors/orchestrator.hpp"
#include "actors/worker.hpp"
#include "src/run/assist.hpp"
#include "src/run/control_wire.hpp"
#include "src/store/ledger.hpp"

namespace fs = std::filesystem;

namespace taskforce {

struct run_host::impl {
  caf::actor_system& sys;
  run::opened_run opened;
  run_host_options opts;
  ledger_actor ledger;
  git_actor git;
  mailbox_actor mailbox;
  orchestrator_actor orch;
  caf::actor lanes;
  caf::actor assist;
  control_actor control;
  std::unique_ptr<control_endpoint> endpoint;
  bool stopped = false;

  impl(caf::actor_system& s, run::opened_run o, run_host_options op)
    : sys(s), opened(std::move(o)), opts(std::move(op)) {}
};

run_host::run_host(caf::actor_system& sys, run::opened_run opened,
                   run_host_options opts)
  : impl_(std::make_unique<impl>(sys, std::move(opened), std::move(opts))) {
  auto& m = *impl_;
  auto& run = m.opened;
  auto run_id = run.loaded.run.id;
  auto root = m.opts.root;
  auto ledger_file = run.db.path();
  // The mailbox has its own connection: a worker's mail never waits for a
  // batch of changes.
  m.mailbox = spawn_mailbox(sys, ledger_file);
  m.ledger = spawn_ledger_service(sys, std::move(run.db));
  auto run_cfg = m.opts.cfg.run;
  // What the run writes itself, and where each task's box was.
  auto task_file = run.file;
  std::vector<std::string> run_files;
  if (run_cfg.flip_checkboxes || run_cfg.detect_completion == "checkboxes")
    run_files.push_back(run::relative_to(root, run.file));
  std::string progress;
  if (run::check_progress_file(root, run_cfg.progress_file, &progress).empty()
      && !progress.empty())
    run_files.push_back(progress);
  git_service_setup gs{std::move(run.repo),
                       root,
                       run.base_branch,
                       run_id,
                       m.opts.cfg.run.cleanup_worktrees,
                       {},
                       ledger_file,
                       run.vouched,
                       run.busy,
                       run_files};
  for (auto& s : run.spares)
    gs.spares.push_back(s);
  m.git = spawn_git_service(sys, std::move(gs));
  m.lanes = spawn_process_lanes(sys);

  auto self_exe = m.opts.self_exe;
  auto git = m.git;
  auto mail = m.mailbox;
  auto lanes = m.lanes;
  std::map<std::string, size_t> lines;
  for (auto& t : run.loaded.graph.tasks())
    lines[t.id] = t.line;
  worker_launcher launch
    = [&sys, run_id, run_cfg, root, self_exe, git, mail, lanes, task_file,
       run_files, lines](const run_task& t, uint64_t attempt, bool fresh,
                         caf::actor orch) {
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
        job.lanes = lanes;
        job.standby = t.standby;
        job.task_file = task_file;
        if (auto found = lines.find(t.id); found != lines.end())
          job.task_line = found->second;
        job.run_files = run_files;
        if (t.first_turn == turn_kind::repair) {
          job.first_repair.kind = turn_kind::repair;
          job.first_repair.gate_result = t.gate_result;
          job.first_repair.gate_tail = t.turn_text;
        }
        if (t.first_turn == turn_kind::answer && !t.turn_text.empty()) {
          // The answer a person gave the live run goes into the task's mailbox
          // before its worker exists: the mailbox stores it before it serves
          // the worker's first take, which makes it the worker's answer turn.
          caf::anon_send(mail, post_atom::value, run_id, t.id,
                         turn_kind::answer, t.turn_text);
        }
        // The orchestrator stops it with cancel_atom; the worker kills its
        // command through the process registry.
        return worker_handle{spawn_worker(sys, std::move(job)), {}};
      };
  orchestrator_setup os;
  os.run_id = run_id;
  os.file = run.file;
  os.cfg = m.opts.cfg.run;
  os.rules = run.loaded.rule_set;
  os.graph = run.loaded.graph;
  os.records = run.loaded.records;
  os.memory = run.loaded.memory;
  os.spent = run.loaded.spent;
  os.ledger = m.ledger;
  os.git = m.git;
  os.watcher = m.opts.watcher;
  os.launch = launch;
  os.prepare_workers = true;
  assist_setup as;
  as.root = root;
  as.file = run.file;
  as.tasks = run.loaded.graph.tasks();
  as.flip_checkboxes = run_cfg.flip_checkboxes;
  if (run::check_progress_file(root, run_cfg.progress_file, &as.progress_file)
        .empty()
      && wants_assist_writer(as)) {
    m.assist = spawn_assist_writer(sys, std::move(as));
    os.assist = m.assist;
  }
  if (run_cfg.verify_merged)
    os.check_merge = [&sys, run_id, run_cfg, root,
                      git](const std::string& task_id, uint64_t attempt,
                           const std::string& verify) {
      merge_check_job job;
      job.run_id = run_id;
      job.task_id = task_id;
      job.attempt = std::max<uint64_t>(attempt, 1);
      job.verify = verify;
      job.timeout_ms = run_cfg.verify_timeout_ms;
      job.root = root;
      job.git = git;
      return spawn_merge_check(sys, std::move(job));
    };
  m.orch = spawn_orchestrator(sys, std::move(os));

  if (m.opts.control) {
    control_setup cs;
    cs.run_id = run_id;
    cs.token = run::new_control_token();
    cs.orchestrator = m.orch;
    cs.mailbox = m.mailbox;
    auto cfg = m.opts.cfg;
    cs.parse = [root, cfg](const std::string& file) {
      task_additions more;
      more.file = run::relative_to(root, file);
      more.tasks = run::parse_task_file(root, more.file, cfg);
      run::refuse_preflight(root, more.file, more.tasks, cfg);
      return more;
    };
    auto token = cs.token;
    m.control = spawn_control(sys, std::move(cs));
    try {
      m.endpoint = std::make_unique<control_endpoint>(sys, m.control, root,
                                                      token, run_id);
    } catch (const std::exception& e) {
      // The run goes on; only steering it live is not possible.
      spdlog::warn("run {}: no control endpoint: {}", run_id, e.what());
    }
  }
}

run_host::~run_host() {
  stop();
}

const std::string& run_host::run_id() const {
  return impl_->opened.loaded.run.id;
}

const std::string& run_host::file() const {
  return impl_->opened.file;
}

const run::loaded_run& run_host::loaded() const {
  return impl_->opened.loaded;
}

orchestrator_actor run_host::orchestrator() const {
  return impl_->orch;
}

void run_host::start() {
  caf::anon_send(impl_->orch, start_atom::value);
}

void run_host::pause(const std::string& why, bool interrupt) {
  caf::anon_send(impl_->orch, pause_atom::value, why, interrupt);
}

void run_host::stop() {
  auto& m = *impl_;
  if (m.stopped)
    return;
  m.stopped = true;
  // Nobody may steer a run that is no longer driven.
  if (m.endpoint)
    m.endpoint->stop();
  // Clean merged worktrees kept for reuse go now; anything holding work
  // stays.
  {
    caf::scoped_actor self{m.sys};
    self->request(m.git, std::chrono::seconds(60), finished_atom::value)
      .receive([](bool) {}, [](caf::error&) {});
  }
  auto down = caf::exit_reason::user_shutdown;
  if (m.control)
    caf::anon_send_exit(m.control, down);
  caf::anon_send_exit(m.orch, down);
  // After the events it was sent: its boxes and blocks are written first.
  if (m.assist)
    caf::anon_send_exit(m.assist, down);
  caf::anon_send_exit(m.git, down);
  caf::anon_send_exit(m.mailbox, down);
  caf::anon_send_exit(m.ledger, down);
  // The run lock (held until the host goes) outlives every connection to
  // the ledger and the repository.
  caf::scoped_actor self{m.sys};
  if (m.control)
    self->wait_for(m.control);
  self->wait_for(m.orch, m.git, m.mailbox, m.ledger);
  // No worker asks for a lane any more: the lanes end with it.
  caf::anon_send_exit(m.lanes, down);
  self->wait_for(m.lanes);
  if (m.assist)
    self->wait_for(m.assist);
}

} // namespace taskforce
