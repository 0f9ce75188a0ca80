// The command line's side of a live driver's control endpoint.
#pragma once

#include <filesystem>
#include <optional>

#include "src/run/steer_request.hpp"

namespace taskforce::cli {

/// Asks the driver of `root`'s run, if one is up, to carry out `request`;
/// its verdict within a second. Nothing when no driver is running (the
/// caller then records the request for the next resume).
std::optional<run::steer_verdict> steer_live(const std::filesystem::path& root,
                                             const run::steer_request& request);

} // namespace taskforce::cli
