// Logging setup: spdlog to standard error, never to standard output, which
// belongs to protocol lines and machine output.
#pragma once

#include <stdexcept>
#include <string>

namespace taskforce {

/// The level names accepted by --log-level and TASKFORCE_LOG.
constexpr const char* log_level_names
  = "trace, debug, info, warn, error, critical, off";

/// Sends the default logger to standard error at `level` (one of
/// log_level_names). An empty level takes TASKFORCE_LOG, else "warn".
/// Throws std::invalid_argument for an unknown level.
void setup_logging(const std::string& level);

} // namespace taskforce
