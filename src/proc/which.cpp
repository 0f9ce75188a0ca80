#include "src/proc/which.hpp"

#include <unistd.h>

#include <filesystem>

namespace fs = std::filesystem;

namespace taskforce::proc {

namespace {

bool executable_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

} // namespace

std::optional<std::string> find_program(const std::string& program,
                                        const std::string& path_env,
                                        const std::string& cwd) {
  if (program.empty())
    return std::nullopt;
  auto from = [&](const std::string& dir) {
    fs::path p = dir.empty() ? fs::path{"."} : fs::path{dir};
    if (p.is_relative() && !cwd.empty())
      p = fs::path{cwd} / p;
    return p;
  };
  if (program.find('/') != std::string::npos) {
    fs::path p = program;
    if (p.is_relative())
      p = from("") / p;
    if (executable_file(p))
      return p.string();
    return std::nullopt;
  }
  size_t start = 0;
  while (start <= path_env.size()) {
    auto end = path_env.find(':', start);
    if (end == std::string::npos)
      end = path_env.size();
    auto candidate = from(path_env.substr(start, end - start)) / program;
    if (executable_file(candidate))
      return candidate.string();
    start = end + 1;
  }
  return std::nullopt;
}

} // namespace taskforce::proc
