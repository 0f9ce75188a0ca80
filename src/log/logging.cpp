#include "src/log/logging.hpp"

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace taskforce {

void setup_logging(const std::string& requested) {
  std::string level = requested;
  if (level.empty()) {
    const char* from_env = std::getenv("TASKFORCE_LOG");
    level = from_env != nullptr && *from_env != '\0' ? from_env : "warn";
  }
  auto parsed = spdlog::level::from_str(level);
  // from_str answers `off` for anything it does not know.
  if (parsed == spdlog::level::off && level != "off")
    throw std::invalid_argument("unknown log level \"" + level
                                + "\" (use one of: " + log_level_names + ")");
  auto logger = spdlog::stderr_color_mt("taskforce");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  logger->set_level(parsed);
  spdlog::set_default_logger(logger);
}

} // namespace taskforce
