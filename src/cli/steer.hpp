// Shared pieces of the commands that read and steer a run through the
// ledger (status, list, logs, diff, abort, discard), also while another
// process drives it.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "src/store/ledger.hpp"

namespace taskforce::cli {

/// Opens the repository's ledger (read-only unless `write`); throws
/// usage_error when the repository has never run anything.
store::ledger open_ledger(const std::filesystem::path& root, bool write);

/// The run a command means: `--run ID` when given, else the latest
/// unfinished run, else the latest run. Throws usage_error when none.
store::run_row pick_run(const store::ledger& db, const std::string& run_id);

/// Whether a process drives a run in this repository right now, and which.
std::optional<std::string> driver_of(const std::filesystem::path& root);

} // namespace taskforce::cli
