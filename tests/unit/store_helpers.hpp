// Helpers of the store's tests: a plain SQLite connection standing for
// another program (or an older taskforce), and the test binary started
// again as a helper process.
#pragma once

#include <spawn.h>
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include <sqlite3.h>

namespace taskforce::test {

/// A plain SQLite connection to an existing file, standing for another
/// process or program; never creates the file.
struct raw_db {
  sqlite3* db = nullptr;

  explicit raw_db(const std::filesystem::path& path) {
    sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
    sqlite3_busy_timeout(db, 2000);
  }

  ~raw_db() {
    sqlite3_close_v2(db);
  }

  raw_db(const raw_db&) = delete;
  raw_db& operator=(const raw_db&) = delete;

  /// SQLite's result code of running `sql`.
  int exec(const std::string& sql) {
    return sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
  }

  /// The first column of the first row as an integer; -1 without a row.
  int64_t scalar(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
    int64_t result = -1;
    if (sqlite3_step(s) == SQLITE_ROW)
      result = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return result;
  }

  /// The first column of the first row as text; empty without a row.
  std::string text(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
    std::string result;
    if (sqlite3_step(s) == SQLITE_ROW && sqlite3_column_text(s, 0))
      result = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return result;
  }
};

/// Starts this test binary again with only `env_text` ("NAME=VALUE") in
/// its environment, for a suite whose static initializer turns it into a
/// helper process when NAME is set. Returns the pid, or -1.
inline pid_t spawn_self(std::string env_text) {
  char* env[] = {env_text.data(), nullptr};
  char self[] = "/proc/self/exe";
  char* argv[] = {self, nullptr};
  pid_t child = -1;
  if (posix_spawn(&child, "/proc/self/exe", nullptr, nullptr, argv, env) != 0)
    return -1;
  return child;
}

} // namespace taskforce::test
