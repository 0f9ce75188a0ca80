// The contract of a managed background task: what the orchestrating
// session asks for in `bg.prepare`, and the rules it must meet before
// anything is written.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace taskforce::control {

/// A task as `bg.prepare` asks for it.
struct bg_contract {
  /// A short name for people; non-empty.
  std::string title;
  /// The agent (subagent type) that does the work; non-empty.
  std::string agent;
  /// The complete prompt the child is started with; non-empty.
  std::string prompt;
  /// The orchestrating session that prepares it, when the harness has one.
  std::optional<std::string> session;
  /// Write roots as given (canonicalised by the store). May be empty: a
  /// task that writes nothing (a review) holds no root, and with
  /// control.enforceWriteRoots every write of its child is refused.
  std::vector<std::string> roots;
  /// Named locks (any non-empty names without control characters): two
  /// live tasks never hold the same lock.
  std::vector<std::string> locks;
  /// Ids of tasks that must be done before this one starts (existing
  /// tasks; duplicates are dropped).
  std::vector<std::string> deps;
  /// Commands run in order by the completion gate; each non-empty.
  std::vector<std::string> validations;
};

/// The longest title, agent name or lock name, in bytes.
constexpr size_t max_name_bytes = 512;

/// Checks the fields of `c` that need no repository and no ledger: title,
/// agent and prompt non-empty (not only blanks), names within
/// `max_name_bytes` and free of control characters, every root, lock,
/// dependency and validation a non-empty string. Throws
/// control_error(bad_request) naming the field.
void validate_contract(const bg_contract& c);

/// `xs` without duplicates, first occurrences kept in order.
std::vector<std::string> unique_in_order(const std::vector<std::string>& xs);

} // namespace taskforce::control
