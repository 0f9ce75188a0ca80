#include "src/store/sqlite.hpp"

#include <utility>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

namespace taskforce::store::sqlite {

void fail(sqlite3* db, const std::string& what) {
  throw ledger_error(ledger_errc::sqlite,
                     what + ": " + sqlite3_errmsg(db) + " (SQLite error "
                       + std::to_string(sqlite3_extended_errcode(db)) + ")");
}

// --- statement ---------------------------------------------------------------

statement::~statement() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

statement& statement::check(int rc) {
  if (rc != SQLITE_OK)
    fail(db_, "binding a ledger statement");
  return *this;
}

statement& statement::bind(int i, int64_t x) {
  return check(sqlite3_bind_int64(s_, i, x));
}

statement& statement::bind(int i, double x) {
  return check(sqlite3_bind_double(s_, i, x));
}

statement& statement::bind(int i, const std::string& x) {
  return check(sqlite3_bind_text(s_, i, x.data(), static_cast<int>(x.size()),
                                 SQLITE_TRANSIENT));
}

statement& statement::bind(int i, const char* x) {
  return check(sqlite3_bind_text(s_, i, x, -1, SQLITE_TRANSIENT));
}

statement& statement::bind(int i, std::nullptr_t) {
  return check(sqlite3_bind_null(s_, i));
}

bool statement::step() {
  auto rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW)
    return true;
  if (rc == SQLITE_DONE)
    return false;
  fail(db_, std::string{"ledger statement failed: "} + sqlite3_sql(s_));
}

void statement::run() {
  while (step()) {
    // A write returns no rows; drain anything it does return.
  }
}

bool statement::is_null(int col) const {
  return sqlite3_column_type(s_, col) == SQLITE_NULL;
}

int64_t statement::int64(int col) const {
  return sqlite3_column_int64(s_, col);
}

int statement::integer(int col) const {
  return sqlite3_column_int(s_, col);
}

double statement::real(int col) const {
  return sqlite3_column_double(s_, col);
}

std::string statement::text(int col) const {
  auto p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
  auto n = sqlite3_column_bytes(s_, col);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string{};
}

std::optional<std::string> statement::opt_text(int col) const {
  if (is_null(col))
    return std::nullopt;
  return text(col);
}

std::optional<int64_t> statement::opt_int64(int col) const {
  if (is_null(col))
    return std::nullopt;
  return int64(col);
}

std::optional<int> statement::opt_int(int col) const {
  if (is_null(col))
    return std::nullopt;
  return integer(col);
}

// --- rows ------------------------------------------------------------------

std::string encode_list(const std::vector<std::string>& xs) {
  return nlohmann::json(xs).dump(-1, ' ', false,
                                 nlohmann::json::error_handler_t::replace);
}

void row_reader::operator()(const char*, std::vector<std::string>& x) {
  x.clear();
  auto list = nlohmann::json::parse(st_.text(col_++), nullptr, false);
  if (list.is_array())
    for (auto& item : list)
      if (item.is_string())
        x.push_back(item.get<std::string>());
}

// --- connection --------------------------------------------------------------

connection::connection(const std::filesystem::path& path, open_mode mode) {
  int flags = SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case open_mode::read_only: flags |= SQLITE_OPEN_READONLY; break;
    case open_mode::read_write: flags |= SQLITE_OPEN_READWRITE; break;
    case open_mode::create:
      flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
      break;
  }
  auto rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    close();
    throw ledger_error(rc == SQLITE_CANTOPEN ? ledger_errc::not_found
                                             : ledger_errc::sqlite,
                       "cannot open the ledger " + path.string() + ": " + msg);
  }
}

connection::~connection() {
  close();
}

connection::connection(connection&& other) noexcept
  : db_(std::exchange(other.db_, nullptr)), cache_(std::move(other.cache_)) {
  other.cache_.clear();
}

connection& connection::operator=(connection&& other) noexcept {
  if (this != &other) {
    close();
    db_ = std::exchange(other.db_, nullptr);
    cache_ = std::move(other.cache_);
    other.cache_.clear();
  }
  return *this;
}

void connection::close() noexcept {
  // Statements first: a connection with live statements does not close.
  for (auto& kv : cache_)
    sqlite3_finalize(kv.second);
  cache_.clear();
  if (db_)
    sqlite3_close_v2(db_);
  db_ = nullptr;
}

statement connection::use(const std::string& sql) {
  auto i = cache_.find(sql);
  if (i == cache_.end()) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                           SQLITE_PREPARE_PERSISTENT, &s, nullptr)
        != SQLITE_OK)
      fail(db_, "preparing a ledger statement: " + sql);
    i = cache_.emplace(sql, s).first;
  }
  return statement{db_, i->second};
}

void connection::exec(const std::string& sql, const std::string& what) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    throw ledger_error(ledger_errc::sqlite, what + ": " + msg);
  }
}

int64_t connection::scalar(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK)
    fail(db_, sql);
  int64_t result = 0;
  auto rc = sqlite3_step(s);
  if (rc == SQLITE_ROW)
    result = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    fail(db_, sql);
  return result;
}

int64_t connection::last_insert_rowid() const {
  return sqlite3_last_insert_rowid(db_);
}

int connection::changes() const {
  return sqlite3_changes(db_);
}

void connection::busy_timeout(int ms) {
  sqlite3_busy_timeout(db_, ms);
}

int connection::error_code() const {
  return sqlite3_errcode(db_);
}

std::string connection::error_message() const {
  return sqlite3_errmsg(db_);
}

// --- transactions ------------------------------------------------------------

transaction::transaction(connection& c, bool write) : c_(c) {
  c_.use(write ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED").run();
}

transaction::~transaction() {
  if (!done_)
    sqlite3_exec(c_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void transaction::commit() {
  c_.use("COMMIT").run();
  done_ = true;
}

savepoint::savepoint(connection& c) : c_(c) {
  c_.use("SAVEPOINT item").run();
}

savepoint::~savepoint() {
  if (!done_) {
    auto db = c_.handle();
    sqlite3_exec(db, "ROLLBACK TO item", nullptr, nullptr, nullptr);
    sqlite3_exec(db, "RELEASE item", nullptr, nullptr, nullptr);
  }
}

void savepoint::release() {
  c_.use("RELEASE item").run();
  done_ = true;
}

} // namespace taskforce::store::sqlite
