// The SQLite layer of the store: one connection with its prepared
// statements, transactions and savepoints, and SQLite's failures as
// `ledger_error`. Nothing here knows what the tables mean (schema.hpp,
// ledger.hpp and mailbox.hpp do).
//
// Contract:
// - A connection is used by one thread at a time (opened NOMUTEX).
// - Every failing SQLite call throws `ledger_error{ledger_errc::sqlite}`
//   carrying SQLite's message and extended code; a transaction that is not
//   committed rolls back when it goes out of scope.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "src/store/error.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace taskforce::store::sqlite {

/// Throws `ledger_errc::sqlite` with `what` and the connection's last error.
[[noreturn]] void fail(sqlite3* db, const std::string& what);

/// One use of a cached prepared statement: bound, stepped, then reset and
/// unbound on destruction so the next use starts clean.
class statement {
 public:
  statement(sqlite3* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  ~statement();

  statement(const statement&) = delete;
  statement& operator=(const statement&) = delete;

  /// Binds parameter `i` (1-based); a nullopt or nullptr binds NULL.
  statement& bind(int i, int64_t x);
  statement& bind(int i, int x) {
    return bind(i, static_cast<int64_t>(x));
  }
  statement& bind(int i, double x);
  statement& bind(int i, const std::string& x);
  statement& bind(int i, const char* x);
  statement& bind(int i, std::nullptr_t);
  template<class T>
  statement& bind(int i, const std::optional<T>& x) {
    if (x)
      return bind(i, *x);
    return bind(i, nullptr);
  }

  /// Steps once; true when a row is available.
  bool step();

  /// Steps to completion (for writes).
  void run();

  /// Column readers of the current row (0-based).
  bool is_null(int col) const;
  int64_t int64(int col) const;
  int integer(int col) const;
  double real(int col) const;
  std::string text(int col) const;
  std::optional<std::string> opt_text(int col) const;
  std::optional<int64_t> opt_int64(int col) const;
  std::optional<int> opt_int(int col) const;

 private:
  statement& check(int rc);

  sqlite3* db_;
  sqlite3_stmt* s_;
};

/// A list of strings as it is stored in one column: a JSON array.
std::string encode_list(const std::vector<std::string>& xs);

/// Reads the columns of a statement's current row, in order, into the
/// fields a row type lists. Each row type has one function listing its
/// fields with their SQL expressions,
///
///     template <class F> void columns(run_row& r, F&& f) {
///       f("id", r.id);
///       f("state", r.state);   // an enum: its from_string()
///       …
///     }
///
/// which gives both the SELECT list (`select_list`) and the reading
/// (`read_row`), so the two can never disagree.
class row_reader {
 public:
  explicit row_reader(const statement& st, int first = 0)
    : st_(st), col_(first) {}

  void operator()(const char*, std::string& x) {
    x = st_.text(col_++);
  }
  void operator()(const char*, std::optional<std::string>& x) {
    x = st_.opt_text(col_++);
  }
  void operator()(const char*, int64_t& x) {
    x = st_.int64(col_++);
  }
  void operator()(const char*, std::optional<int64_t>& x) {
    x = st_.opt_int64(col_++);
  }
  void operator()(const char*, int& x) {
    x = st_.integer(col_++);
  }
  void operator()(const char*, std::optional<int>& x) {
    x = st_.opt_int(col_++);
  }
  void operator()(const char*, uint64_t& x) {
    x = static_cast<uint64_t>(st_.int64(col_++));
  }
  void operator()(const char*, double& x) {
    x = st_.real(col_++);
  }
  void operator()(const char*, bool& x) {
    x = st_.int64(col_++) != 0;
  }
  /// A list stored by `encode_list`; anything else reads as empty.
  void operator()(const char*, std::vector<std::string>& x);
  /// An enum, by the name its `from_string` knows.
  template<class Enum, class = std::enable_if_t<std::is_enum_v<Enum>>>
  void operator()(const char*, Enum& x) {
    from_string(st_.text(col_++), x);
  }

 private:
  const statement& st_;
  int col_;
};

/// The current row as a `Row` (see row_reader).
template<class Row>
Row read_row(const statement& st) {
  Row r;
  columns(r, row_reader{st});
  return r;
}

/// The comma-separated SQL expressions of `Row`'s columns, in order.
template<class Row>
std::string select_list() {
  Row r;
  std::string result;
  columns(r, [&](const char* expr, auto&) {
    if (!result.empty())
      result += ", ";
    result += expr;
  });
  return result;
}

/// How a connection opens its file.
enum class open_mode {
  /// Never writes; fails when the file is missing.
  read_only,
  /// Reads and writes an existing file.
  read_write,
  /// Reads and writes, creating the file when it is missing.
  create,
};

/// An open database file and the statements prepared on it.
class connection {
 public:
  /// Opens `path`. Throws `not_found` when it cannot be opened at all,
  /// `sqlite` for other failures.
  connection(const std::filesystem::path& path, open_mode mode);
  ~connection();

  connection(connection&& other) noexcept;
  connection& operator=(connection&& other) noexcept;
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  /// The raw handle (for error codes).
  sqlite3* handle() const {
    return db_;
  }

  /// A statement prepared once per connection and reused: a transition
  /// runs half a dozen statements, and preparing them anew would cost more
  /// than the writes themselves.
  statement use(const std::string& sql);

  /// Runs a script of statements that return no rows; failures say `what`.
  void exec(const std::string& sql, const std::string& what);

  /// The first column of the first row of `sql` (0 when there is none),
  /// prepared for this call only (pragmas, checks while opening).
  int64_t scalar(const std::string& sql);

  /// The rowid of the last row inserted through this connection.
  int64_t last_insert_rowid() const;

  /// Rows changed by the last INSERT, UPDATE or DELETE.
  int changes() const;

  /// How long a writer waits for another process's transaction.
  void busy_timeout(int ms);

  /// SQLite's primary result code of the last failed call.
  int error_code() const;

  /// SQLite's message for the last failed call.
  std::string error_message() const;

 private:
  void close() noexcept;

  sqlite3* db_ = nullptr;
  std::unordered_map<std::string, sqlite3_stmt*> cache_;
};

/// A transaction that rolls back unless committed. Writers take the write
/// lock at BEGIN (IMMEDIATE), so they wait in the busy timeout up front
/// instead of failing halfway; readers use a deferred one for a consistent
/// snapshot.
class transaction {
 public:
  transaction(connection& c, bool write);
  ~transaction();

  transaction(const transaction&) = delete;
  transaction& operator=(const transaction&) = delete;

  void commit();

 private:
  connection& c_;
  bool done_ = false;
};

/// A savepoint inside a transaction: what happens after it is undone alone
/// unless it is released.
class savepoint {
 public:
  explicit savepoint(connection& c);
  ~savepoint();

  savepoint(const savepoint&) = delete;
  savepoint& operator=(const savepoint&) = delete;

  /// Keeps what happened since the savepoint.
  void release();

 private:
  connection& c_;
  bool done_ = false;
};

} // namespace taskforce::store::sqlite
