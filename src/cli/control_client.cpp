#include "src/cli/control_client.hpp"

namespace taskforce::cli {

// Placeholder until the driver's control endpoint exists: no driver
// is ever found.
std::optional<run::steer_verdict>
steer_live(const std::filesystem::path&, const run::steer_request&) {
  return std::nullopt;
}

} // namespace taskforce::cli
