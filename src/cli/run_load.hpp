// Loading a run's tasks as its driver schedules them: the run's task file
// and the files added to it (`taskforce add`), parsed again with the
// effective config, beside their ledger rows. `run`/`resume` and the
// commands that steer a paused run load a run the same way, so a decision
// taken without a driver is the one the driver would take.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "src/config/config.hpp"
#include "src/plan/graph.hpp"
#include "src/run/scheduler.hpp"
#include "src/store/ledger.hpp"
#include "src/taskfile/task.hpp"

namespace taskforce::cli {

/// `file` relative to `root` when it lies inside it (as the ledger records
/// task files), else absolute.
std::string relative_to(const std::filesystem::path& root,
                        const std::string& file);

/// Parses the task file `file_rel` (relative to `root`, or absolute) with
/// `cfg`'s parsing options. Throws usage_error with every mistake as
/// `FILE:LINE: message`, or when the file has no task.
std::vector<task_spec> parse_task_file(const std::filesystem::path& root,
                                       const std::string& file_rel,
                                       const config& cfg);

/// A run's tasks: `specs` in the ledger's order (the run's file, then each
/// added file in the order added), `rows` one per spec.
struct run_tasks {
  std::vector<task_spec> specs;
  std::vector<store::task_row> rows;
  /// The files added to the run, relative to the repository.
  std::vector<std::string> added_files;
};

/// Reads the tasks of `run` from its files and `db`. Throws usage_error
/// when a file cannot be parsed or has a task the run does not know (the
/// file changed).
run_tasks load_run_tasks(const std::filesystem::path& root,
                         const store::ledger& db, const store::run_row& run,
                         const config& cfg);

/// The scheduler's view of `tasks` (their graph is `graph`): the ledger's
/// states and reasons, the file's holds unless a person lifted them
/// (`approve` on a held task), the risks that need approval.
std::vector<run::task_record> records_of(const plan::task_graph& graph,
                                         const run_tasks& tasks);

} // namespace taskforce::cli
