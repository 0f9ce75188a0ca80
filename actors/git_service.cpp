#include "actors/git_service.hpp"

#include <memory>

#include <caf/all.hpp>

#include "src/git/workspace.hpp"

namespace taskforce {

namespace {

struct git_state {
  static inline const char* name = "git_service";
  /// The run's worktrees and checks (made at spawn, on the actor's thread).
  std::unique_ptr<git::workspace> space;
};

using self_ptr = git_actor::stateful_pointer<git_state>;

caf::error fail(const std::string& what) {
  return caf::make_error(run_errc::git_failure, what);
}

run::merge_end end_of(git::integration::outcome x) {
  using oc = git::integration::outcome;
  switch (x) {
    case oc::merged:
    case oc::already_merged: return run::merge_end::merged;
    case oc::empty: return run::merge_end::empty;
    case oc::conflict:
    case oc::dirty: return run::merge_end::conflict;
    case oc::not_merged: return run::merge_end::not_merged;
    case oc::prepared: return run::merge_end::prepared;
    case oc::stale: return run::merge_end::stale;
    case oc::error: break;
  }
  return run::merge_end::error;
}

merge_outcome outcome_of(git::integration r) {
  merge_outcome out;
  out.end = end_of(r.status);
  out.merge_commit = std::move(r.commit);
  out.paths = std::move(r.paths);
  out.message = std::move(r.message);
  return out;
}

git::integration_request integration_of(const merge_request& req) {
  return {req.task_id, req.title,   req.worktree, req.branch, req.cleanup,
          req.scope,   req.prepare, req.expected, req.adopt};
}

} // namespace

git_actor::behavior_type git_service(self_ptr self, git_service_setup setup) {
  self->state.space = std::make_unique<git::workspace>(
    std::move(setup.repo), std::move(setup.root), std::move(setup.base_branch),
    std::move(setup.run_id), setup.reuse_worktrees, setup.spares);
  auto& space = *self->state.space;
  return {
    [&space](lease_atom, worktree_request& req) -> caf::result<worktree_lease> {
      try {
        auto l = space.lease_worktree(req.task_id, req.fresh, req.known_path);
        return worktree_lease{l.path, l.branch, l.reused, l.start};
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
    [&space](snapshot_atom, scope_request& req) -> caf::result<std::string> {
      try {
        return space.snapshot({req.run_id, req.task_id, req.attempt,
                               req.checkout, req.branch, req.start},
                              std::move(req.scope));
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
    [&space](release_atom, scope_request& req) {
      space.release({req.run_id, req.task_id, req.attempt, req.checkout,
                     req.branch, req.start});
    },
    [&space](changed_atom, scope_request& req) -> caf::result<scope_report> {
      try {
        auto c = space.check({req.run_id, req.task_id, req.attempt,
                              req.checkout, req.branch, req.start});
        return scope_report{std::move(c.paths), std::move(c.moved)};
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
    [&space](merge_atom, merge_request& req) -> caf::result<merge_outcome> {
      try {
        return outcome_of(space.integrate(integration_of(req)));
      } catch (const std::exception& e) {
        merge_outcome out;
        out.end = run::merge_end::error;
        out.message = e.what();
        return out;
      }
    },
    [&space](check_atom, merge_request& req) -> caf::result<merge_outcome> {
      try {
        return outcome_of(space.check_merged(integration_of(req)));
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
    [&space](discard_atom, std::string& run,
             std::string& task) -> caf::result<bool> {
      try {
        return space.discard(run, task);
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
    [&space](finished_atom) -> caf::result<bool> {
      try {
        space.finish();
        return true;
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
  };
}

git_actor spawn_git_service(caf::actor_system& sys, git_service_setup setup) {
  return sys.spawn<caf::detached>(git_service, std::move(setup));
}

} // namespace taskforce
