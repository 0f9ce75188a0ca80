#include "actors/git_service.hpp"

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include <caf/all.hpp>

#include <spdlog/spdlog.h>

#include "src/git/review.hpp"
#include "src/git/workspace.hpp"
#include "src/run/base_record.hpp"
#include "src/store/ledger.hpp"

namespace taskforce {

namespace {

struct git_state {
  static inline const char* name = "git_service";
  /// The run's worktrees and checks (made at spawn, on the actor's thread).
  std::unique_ptr<git::workspace> space;
  /// The main repository again, for the verifier's scratch checkouts
  /// (src/git/review.hpp), which the workspace knows nothing of.
  std::optional<git::repository> repo;
  /// The base branch (the scratch's diff starts where the task forked).
  std::string base_branch;
  /// The run.
  std::string run_id;
  /// The repository's top folder.
  std::filesystem::path root;
  /// Open scratch checkouts, by (task, attempt).
  std::map<std::pair<std::string, uint64_t>, git::review_checkout> reviews;
  /// The service's own connection to the ledger, and what it writes there
  /// about the base (its landings, the tips it vouches for).
  std::optional<store::ledger> db;
  std::unique_ptr<run::base_record> record;
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
    case oc::base_moved: return run::merge_end::base_moved;
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

/// Opens the verifier's scratch checkout for an attempt.
caf::result<std::string, std::string>
open_review(git_state& st, const scope_request& req,
            const std::vector<std::string>& paths) {
  try {
    auto r = git::open_review(*st.repo, st.root, req.run_id, req.task_id,
                              req.checkout, paths, st.base_branch);
    auto path = r.path.string();
    auto diff = r.diff;
    st.reviews[{req.task_id, req.attempt}] = std::move(r);
    return {std::move(path), std::move(diff)};
  } catch (const std::exception& e) {
    return fail(std::string{"cannot prepare the verifier's checkout: "}
                + e.what());
  }
}

/// Lists what the verifier changed, notes it in `log_file` and removes
/// the scratch.
caf::result<std::vector<std::string>>
close_review(git_state& st, const scope_request& req,
             const std::string& log_file) {
  auto it = st.reviews.find({req.task_id, req.attempt});
  if (it == st.reviews.end())
    return std::vector<std::string>{};
  auto review = std::move(it->second);
  st.reviews.erase(it);
  try {
    auto changed = git::close_review(*st.repo, review);
    if (!changed.empty() && !log_file.empty()) {
      std::ofstream out(log_file, std::ios::app);
      out << "\ntaskforce: the verifier is read-only; its changes were "
             "discarded:\n";
      for (auto& p : changed)
        out << "  " << p << '\n';
    }
    return changed;
  } catch (const std::exception& e) {
    return fail(std::string{"cannot remove the verifier's checkout: "}
                + e.what());
  }
}

git_actor::behavior_type git_service(self_ptr self, git_service_setup setup) {
  auto& st = self->state;
  st.root = setup.root;
  st.base_branch = setup.base_branch;
  st.run_id = setup.run_id;
  st.repo = git::open(setup.root);
  try {
    // Scratch checkouts a killed process left hold nothing of value.
    git::remove_reviews(*st.repo, st.run_id);
  } catch (const std::exception&) {
    // Whatever is left is dropped again before the task's next review.
  }
  self->state.space = std::make_unique<git::workspace>(
    std::move(setup.repo), std::move(setup.root), std::move(setup.base_branch),
    std::move(setup.run_id), setup.reuse_worktrees, setup.spares);
  auto& space = *self->state.space;
  if (!setup.ledger_file.empty()) {
    try {
      st.db = store::ledger::open(setup.ledger_file);
      st.record = std::make_unique<run::base_record>(*st.db, st.run_id);
    } catch (const std::exception& e) {
      // The merges still land; a kill between a landing and its checkout
      // update is then not completed by the next start.
      spdlog::error("run {}: the git service cannot write to the ledger: {}",
                    st.run_id, e.what());
    }
  }
  try {
    space.guard(st.record.get(), setup.vouched, setup.busy,
                std::move(setup.run_files));
  } catch (const std::exception& e) {
    spdlog::error("run {}: cannot look at the base branch: {}", st.run_id,
                  e.what());
  }
  return {
    [&space](lease_atom, worktree_request& req) -> caf::result<worktree_lease> {
      try {
        auto l = space.lease_worktree(req.task_id, req.fresh, req.known_path,
                                      req.attempt);
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
        return scope_report{std::move(c.paths), std::move(c.moved),
                            std::move(c.base_moved), std::move(c.main_paths)};
      } catch (const std::exception& e) {
        return fail(e.what());
      }
    },
    [self](review_atom, scope_request& req, std::vector<std::string>& paths)
      -> caf::result<std::string, std::string> {
      return open_review(self->state, req, paths);
    },
    [self](reviewed_atom, scope_request& req,
           std::string& log_file) -> caf::result<std::vector<std::string>> {
      return close_review(self->state, req, log_file);
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
