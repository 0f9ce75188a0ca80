// Shared test helpers: temporary directories, files, running commands.
// Suites that use the DSL include "caf/test/dsl.hpp" themselves after
// defining CAF_SUITE (and FAIL, see NOTES on the fixture's request()).
#pragma once

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "paths.hpp"

namespace taskforce::test {

/// A fresh directory under the system's temp dir, removed on destruction.
class temp_dir {
 public:
  temp_dir() {
    auto base = std::filesystem::temp_directory_path();
    std::string pattern = (base / "taskforce-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;

  const std::filesystem::path& path() const {
    return path_;
  }

  /// Writes `text` to `relative`, creating folders on the way.
  std::filesystem::path write(const std::string& relative,
                              const std::string& text) const {
    auto file = path_ / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary);
    out << text;
    return file;
  }

 private:
  std::filesystem::path path_;
};

/// The whole content of a file.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

/// Waits (polling, at most `limit`) until `done()` holds; false when it
/// never did. For real processes only: actor tests advance their clock.
template<class F>
bool eventually(F done,
                std::chrono::milliseconds limit = std::chrono::seconds(60)) {
  auto give_up = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > give_up)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

} // namespace taskforce::test
