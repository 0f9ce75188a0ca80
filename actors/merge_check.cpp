#include "actors/merge_check.hpp"

#include <memory>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "src/proc/registry.hpp"
#include "src/run/run_setup.hpp"
#include "src/store/ledger.hpp"
#include "src/worker/turn.hpp"

namespace taskforce {

namespace {

/// How much of the gate's output the outcome carries.
constexpr size_t outcome_tail = 2000;

struct merge_check_state {
  static inline const char* name = "merge_check";

  /// The job, as given.
  merge_check_job job;
  /// The request, as the orchestrator sent it.
  merge_request req;
  /// The answer owed.
  caf::typed_response_promise<merge_outcome> promise;
  /// The merge result being checked, and how often one was made.
  std::string candidate;
  int rounds = 0;
  /// Who asked: its going down ends the check.
  caf::actor_addr requester;
  /// The gate's helper; null when none runs.
  caf::actor helper;
  /// The running gate's mark, shared with the functor that kills it when
  /// the check ends.
  std::shared_ptr<std::string> mark = std::make_shared<std::string>();

  ~merge_check_state() {
    if (promise.pending()) {
      merge_outcome out;
      out.end = run::merge_end::error;
      out.message = "the merge check stopped before it answered";
      promise.deliver(std::move(out));
    }
  }
};

using self_ptr = caf::stateful_actor<merge_check_state>*;

void prepare(self_ptr self);

void answer(self_ptr self, merge_outcome out) {
  auto& st = self->state;
  if (st.promise.pending())
    st.promise.deliver(std::move(out));
  self->quit();
}

void git_failed(self_ptr self, const caf::error& err) {
  merge_outcome out;
  out.end = run::merge_end::error;
  out.message = "git: " + self->system().render(err);
  answer(self, std::move(out));
}

/// Asks the git service for `req`; `then` gets its outcome.
template<class F>
void ask(self_ptr self, merge_request req, F then) {
  self->request(self->state.job.git, caf::infinite, merge_atom::value, req)
    .then(
      [self, then](merge_outcome& out) mutable {
        then(out);
      },
      [self](caf::error& err) {
        git_failed(self, err);
      });
}

void land(self_ptr self) {
  auto req = self->state.req;
  req.expected = self->state.candidate;
  ask(self, std::move(req), [self](merge_outcome& out) {
    // Someone moved the base (or the branch) while the gate ran: the
    // result that passed is not what would land. Make it again.
    if (out.end == run::merge_end::stale)
      return prepare(self);
    answer(self, std::move(out));
  });
}

/// The gate failed on the merge result: the task's branch and worktree
/// move to it, so the repair sees what the base brought in; the base does
/// not move.
void failed(self_ptr self, const proc_exited& exit) {
  auto& st = self->state;
  merge_outcome out;
  out.end = run::merge_end::gate_failed;
  out.message = "gate failed on the merge result (the base as it is now, "
                "with the task merged): "
                + exit.description;
  out.tail = exit.tail.size() <= outcome_tail
               ? exit.tail
               : exit.tail.substr(exit.tail.size() - outcome_tail);
  auto req = st.req;
  req.expected = st.candidate;
  req.adopt = true;
  self->request(st.job.git, caf::infinite, merge_atom::value, req)
    .then(
      [self, out](merge_outcome& moved) mutable {
        if (moved.end != run::merge_end::prepared)
          spdlog::warn("{}: the repair starts from the task's branch as it "
                       "was: {}",
                       self->state.job.task_id, moved.message);
        answer(self, std::move(out));
      },
      [self, out](caf::error& err) mutable {
        spdlog::warn("{}: the repair starts from the task's branch as it "
                     "was: {}",
                     self->state.job.task_id, self->system().render(err));
        answer(self, std::move(out));
      });
}

void gate_exited(self_ptr self, proc_exited exit) {
  auto& st = self->state;
  if (st.helper)
    self->demonitor(st.helper);
  st.helper = nullptr;
  st.mark->clear();
  if (!exit.error.empty()) {
    merge_outcome out;
    out.end = run::merge_end::error;
    out.message = "gate on the merge result: " + exit.error;
    return answer(self, std::move(out));
  }
  if (exit.success())
    return land(self);
  failed(self, exit);
}

void run_gate(self_ptr self, const std::string& checkout) {
  auto& st = self->state;
  auto& job = st.job;
  proc::run_options opts;
  opts.argv = {"/bin/sh", "-c", job.verify};
  opts.cwd = checkout;
  turn_context ctx{job.run_id, job.task_id, job.attempt, turn_kind::start,
                   job.root.string()};
  opts.env = turn_environment(ctx);
  opts.env.emplace_back("TASKFORCE_MERGE_RESULT", st.candidate);
  auto dir = job.root / ".taskforce"
             / store::attempt_log_dir(job.run_id, job.task_id,
                                      static_cast<int>(job.attempt));
  opts.log_file = (dir / "verify-merged.log").string();
  opts.append_log = st.rounds > 1;
  opts.timeout = std::chrono::milliseconds(job.timeout_ms);
  opts.label = job.run_id + "/" + job.task_id + "/";
  opts.record_folder = run::worker_records(job.root).string();
  process_job pj;
  pj.run = std::move(opts);
  pj.owner = caf::actor_cast<caf::actor>(self);
  auto spawn = job.processes ? job.processes : spawn_process;
  st.helper = spawn(self->system(), std::move(pj));
  self->monitor(st.helper);
}

void prepare(self_ptr self) {
  auto& st = self->state;
  if (++st.rounds > merge_check_rounds) {
    merge_outcome out;
    out.end = run::merge_end::error;
    out.message = "the base kept moving while the merge result was checked";
    return answer(self, std::move(out));
  }
  auto req = st.req;
  req.prepare = true;
  ask(self, std::move(req), [self](merge_outcome& out) {
    if (out.end != run::merge_end::prepared || out.paths.empty())
      return answer(self, std::move(out)); // nothing new would land
    self->state.candidate = out.merge_commit;
    run_gate(self, out.paths.front());
  });
}

} // namespace

caf::behavior merge_check(self_ptr self, merge_check_job job) {
  auto& st = self->state;
  st.job = std::move(job);
  // No gate outlives its check, however the check ends.
  self->attach_functor([mark = st.mark] {
    if (!mark->empty())
      proc::kill_running(*mark);
  });
  self->set_down_handler([self](caf::down_msg& d) {
    auto& st = self->state;
    if (st.helper && d.source == st.helper.address()) {
      if (!st.mark->empty())
        proc::kill_running(*st.mark);
      proc_exited exit;
      exit.error
        = "the process helper stopped: " + self->system().render(d.reason);
      gate_exited(self, std::move(exit));
      return;
    }
    // The requester is gone: nobody waits for the answer. (A helper's
    // down after its exit was handled is nothing.)
    if (d.source == st.requester)
      self->quit();
  });
  return {
    [self](merge_atom, merge_request& req) -> caf::result<merge_outcome> {
      auto& st = self->state;
      if (st.promise.pending())
        return merge_outcome{
          run::merge_end::error, "", {}, "a merge check takes one merge", ""};
      // Read before the promise takes the sender away.
      auto requester = caf::actor_cast<caf::actor>(self->current_sender());
      if (requester) {
        st.requester = requester.address();
        self->monitor(requester);
      }
      st.req = std::move(req);
      st.promise = self->make_response_promise<merge_outcome>();
      prepare(self);
      return st.promise;
    },
    [self](proc_started& s) {
      auto& st = self->state;
      if (!st.helper || self->current_sender() != st.helper.address())
        return;
      *st.mark = s.mark;
    },
    [](proc_output&) {},
    [self](proc_exited& exit) {
      auto& st = self->state;
      if (!st.helper || self->current_sender() != st.helper.address())
        return;
      gate_exited(self, std::move(exit));
    },
  };
}

caf::actor spawn_merge_check(caf::actor_system& sys, merge_check_job job) {
  return sys.spawn(merge_check, std::move(job));
}

} // namespace taskforce
