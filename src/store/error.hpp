// How a call into the store fails: one exception type with a code, for the
// ledger, its schema and the mailbox alike.
#pragma once

#include <stdexcept>
#include <string>

namespace taskforce::store {

/// Why a ledger call failed.
enum class ledger_errc {
  /// SQLite reported an error (I/O, corruption, busy past the timeout…).
  sqlite,
  /// The database was written by a newer schema, or is not a ledger.
  schema,
  /// The run or task does not exist.
  not_found,
  /// The run or task already exists.
  duplicate,
  /// The lifecycle forbids the move, or the task was not in `expect`.
  invalid_transition,
  /// A JSON argument is not a JSON object.
  bad_json,
  /// What a task is to write is reserved by another holder (a managed
  /// task, another run's task): it waits; the message says for whom.
  reserved,
};

/// A failed ledger call: `what()` says what and why, SQLite's message
/// included.
class ledger_error : public std::runtime_error {
 public:
  ledger_error(ledger_errc code, const std::string& what)
    : std::runtime_error(what), code_(code) {}

  /// The kind of failure.
  ledger_errc code() const noexcept {
    return code_;
  }

 private:
  ledger_errc code_;
};

} // namespace taskforce::store
