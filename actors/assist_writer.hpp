// The assist writer: the run's only writer of its task file's boxes
// (run.flipCheckboxes) and of its progress file (run.progressFile). The
// orchestrator hands it every durable task change as a run_event; when a
// task is done it checks the task's box in the task file (as the file is
// then: a person's edits meanwhile stay, only that box changes), and when a
// task is done, failed or blocked it appends the task's block to the
// progress file. Detached: it does file work. A write that fails is logged
// and the run goes on (the work itself is recorded in the ledger).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include "src/taskfile/task.hpp"

namespace taskforce {

/// What the assist writer needs.
struct assist_setup {
  /// The repository's top folder.
  std::filesystem::path root;
  /// The task file, relative to `root` (or absolute).
  std::string file;
  /// The run's tasks as parsed (their lines and titles).
  std::vector<task_spec> tasks;
  /// Check a done task's box.
  bool flip_checkboxes = false;
  /// The progress file relative to `root`; empty = none.
  std::string progress_file;
};

/// Whether a run with these settings needs an assist writer.
inline bool wants_assist_writer(const assist_setup& s) {
  return s.flip_checkboxes || !s.progress_file.empty();
}

/// Spawns the assist writer (detached); send it run_event messages.
caf::actor spawn_assist_writer(caf::actor_system& sys, assist_setup setup);

} // namespace taskforce
