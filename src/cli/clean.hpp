// The leftovers of runs that are over, as `taskforce clean` and
// `taskforce status` show them.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "src/git/leftovers.hpp"

namespace taskforce::cli {

/// The leftovers of the repository at `root`, judged with what its ledger
/// (if any) knows of each run.
std::vector<git::leftover> leftovers_of(const std::filesystem::path& root);

/// One line for `status`: "leftovers of earlier runs: 2 worktrees, 1
/// branch (1 holds work); taskforce clean lists them"; "" when none.
std::string leftovers_line(const std::vector<git::leftover>& found);

} // namespace taskforce::cli
