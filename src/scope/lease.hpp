// The one rule of write reservations ("leases"), shared by task-list runs
// and managed background tasks: what a holder may reserve, when two
// reservations overlap, and how a conflict is told.
//
// A holder claims roots, globs and named locks, all repository-relative
// and physical (symlinks already followed, see physical.hpp):
// - a root is a file or a folder and everything below it (a managed task's
//   roots; a run task's literal `files` entries and `dir/` entries);
// - a glob is a run task's glob entry (`src/*.ts`); a run task without
//   `files` may write anything and claims the glob `**`;
// - a lock is a name (`db`).
// Two claims overlap when some path lies in both (a root is the same as the
// globs `r` and `r/**`; globs are compared exactly, see glob.hpp), or when
// two locks have the same name. A root spelled with glob characters is
// compared with a glob by the glob's literal folders alone (conservative).
//
// Holders are named by convention: a managed task by its id ("bg-3"), a
// run's task by `run_task_holder` ("run/<run>/<task>").
//
// Pure: no filesystem, no database.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace taskforce::scope {

/// What a lease is on.
enum class lease_kind { root, glob, lock };

/// "root", "glob" or "lock".
const char* to_string(lease_kind x);

/// Parses "root", "glob" or "lock"; false for anything else.
bool from_string(std::string_view text, lease_kind& x);

/// Something a holder reserves.
struct claim {
  lease_kind kind = lease_kind::root;
  std::string name;
};

/// One row of the reservation table: a holder and what it reserves.
struct lease {
  std::string holder;
  lease_kind kind = lease_kind::root;
  std::string name;
};

/// Whether canonical `path` is `root` or lies below it, component-wise
/// (`src` holds `src/lib`, not `srcx`).
bool path_within(std::string_view path, std::string_view root);

/// Whether two roots overlap: the same, or one inside the other.
bool roots_conflict(std::string_view a, std::string_view b);

/// Whether two claims overlap (see above).
bool overlaps(const claim& a, const claim& b);

/// The claims of a run's task: each `files` entry (normalised and physical
/// as the task file parser leaves them: a literal or `dir/` is a root, a
/// glob a glob; no entries at all is the glob `**`) and each lock.
std::vector<claim> task_claims(const std::vector<std::string>& files,
                               const std::vector<std::string>& locks);

/// The claims of canonical roots and locks (a managed task's).
std::vector<claim> root_claims(const std::vector<std::string>& roots,
                               const std::vector<std::string>& locks);

/// The holder name of a task-list run's task: "run/<run>/<task>".
std::string run_task_holder(const std::string& run_id,
                            const std::string& task_id);

/// The run and task a run task's holder names; nullopt for any other
/// holder (a managed task's).
std::optional<std::pair<std::string, std::string>>
run_task_of(std::string_view holder);

/// A holder in words: "managed task bg-3", "task t1 of run R".
std::string describe_holder(std::string_view holder);

/// A claim wanted while another holder has an overlapping one.
struct lease_conflict {
  /// Who has it.
  std::string holder;
  lease_kind kind = lease_kind::root;
  /// What they have (e.g. "src").
  std::string held;
  /// What was wanted (e.g. "src/lib").
  std::string wanted;
  lease_kind wanted_kind = lease_kind::root;

  /// From the side of the one who wants it: "root src/lib overlaps root
  /// src of bg-1", "lock db is held by bg-1" (a run task's holder in
  /// words: "… of task t1 of run R").
  std::string describe() const;

  /// Why a run's task waits: "waits for managed task bg-1 (src)", "waits
  /// for managed task bg-1 (lock db)".
  std::string waits_for() const;
};

/// The first conflict of `wanted` with `held` leases of holders other than
/// `self`; nullopt when there is none.
std::optional<lease_conflict> find_conflict(const std::string& self,
                                            const std::vector<claim>& wanted,
                                            const std::vector<lease>& held);

/// The same for canonical `roots` and `locks`.
std::optional<lease_conflict>
find_conflict(const std::string& self, const std::vector<std::string>& roots,
              const std::vector<std::string>& locks,
              const std::vector<lease>& held);

} // namespace taskforce::scope
