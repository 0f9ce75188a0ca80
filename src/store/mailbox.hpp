// The mailbox: mail between a run and its task workers, durable in the
// ledger's database (table `mail`, schema version 2).
//
//   down: `send`, `broadcast` (a message), `answer` (an answer) ──▶ a task's
//         worker, which takes it with `taskforce inbox` or as the text of
//         its next turn;
//   up:   `taskforce report TEXT` from inside a worker ──▶ the run (`logs`).
//
// Contract:
// - A mailbox works on an open ledger's connection, in the same thread as
//   the ledger (the ledger outlives it). Posting is one write transaction.
// - `take_undelivered` hands out each down mail exactly once, across
//   processes: one `BEGIN IMMEDIATE` transaction marks what it returns as
//   delivered, so two takers at the same moment never both get a mail.
// - Mail is never deleted or rewritten, and marked delivered only once
//   (the schema's triggers refuse anything else).
// - Failures throw `store::ledger_error`.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/store/error.hpp"

namespace taskforce::store {

class ledger;

/// What a mail is.
enum class mail_kind : uint8_t {
  /// Down: a note to a working task (`send`, `broadcast`).
  message,
  /// Down: the answer to a blocked task's question (`answer`).
  answer,
  /// Up: a worker's report to the run (`taskforce report`).
  report,
};

/// The lowercase name.
const char* to_string(mail_kind x);

/// Parses a mail kind name; false when unknown.
bool from_string(std::string_view name, mail_kind& out);

/// Which way a mail goes: down to a worker, or up to the run. Follows from
/// the kind (reports go up).
enum class mail_direction : uint8_t { down, up };

/// The lowercase name.
const char* to_string(mail_direction x);

/// Parses a direction name; false when unknown.
bool from_string(std::string_view name, mail_direction& out);

/// The direction of a kind.
mail_direction direction_of(mail_kind x);

/// One row of `mail`.
struct mail_row {
  /// Increases with every mail of the ledger.
  int64_t id = 0;
  std::string run_id;
  /// The task it goes to or comes from; an up mail may have none.
  std::optional<std::string> task_id;
  mail_kind kind = mail_kind::message;
  mail_direction direction = mail_direction::down;
  std::string text;
  int64_t created_ms = 0;
  /// When it was handed to the worker (down mail only); null until then.
  std::optional<int64_t> delivered_ms;
  /// The attempt it was delivered to, or reported from, when known.
  std::optional<int> attempt;
};

/// A mail to post.
struct new_mail {
  std::string run_id;
  /// Required for down mail.
  std::optional<std::string> task_id;
  mail_kind kind = mail_kind::message;
  std::string text;
  /// The attempt a report comes from, when known.
  std::optional<int> attempt;
};

/// The mail of the runs in one ledger; see the contract above.
class mailbox {
 public:
  /// Works on `db`'s connection; `db` must outlive the mailbox.
  explicit mailbox(ledger& db) : db_(db) {}

  /// Stores a mail. Throws not_found when the run (or the task) does not
  /// exist, invalid_transition for a down mail without a task.
  mail_row post(const new_mail& m, int64_t now_ms);

  /// The task's down mail not delivered yet, oldest first, now marked
  /// delivered at `now_ms` (to `attempt`, when given) in one write
  /// transaction: each mail is returned by exactly one call, whichever
  /// process makes it. Empty when there is none.
  std::vector<mail_row>
  take_undelivered(const std::string& run_id, const std::string& task_id,
                   int64_t now_ms, std::optional<int> attempt = std::nullopt);

  /// Whether down mail waits undelivered for the task: a read, without the
  /// write lock take_undelivered takes.
  bool has_undelivered(const std::string& run_id,
                       const std::string& task_id) const;

  /// Every mail of the run (only of `task_id`, when given), oldest first.
  std::vector<mail_row> list(const std::string& run_id,
                             const std::optional<std::string>& task_id
                             = std::nullopt) const;

  /// Per task of the run: how many down mails wait undelivered (tasks with
  /// none are absent).
  std::map<std::string, int>
  undelivered_counts(const std::string& run_id) const;

 private:
  ledger& db_;
};

} // namespace taskforce::store
