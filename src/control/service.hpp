// The managed background tasks of one repository as the protocol answers
// them: a control_request in, the answer's fields (a JSON object) out, with
// the changes to publish. Shared by the server's control plane (an actor
// that runs the validations on a helper and publishes the changes) and by
// `taskforce bg …` when no server runs (it runs them itself).
//
// Blocking (SQLite): call it from a detached actor or a command's thread.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/config/config.hpp"
#include "src/control/request.hpp"
#include "src/control/store.hpp"
#include "src/control/validation.hpp"

namespace taskforce::control {

/// The validations a completion must pass before its task is done.
struct pending_validation {
  std::string task_id;
  std::vector<std::string> commands;
  /// Where and how to run them.
  validation_options options;
};

/// What one request did.
struct service_reply {
  bool ok = true;
  /// The answer's fields as a JSON object text (when ok).
  std::string fields = "{}";
  /// The protocol's error code and message (when not ok).
  std::string code;
  std::string message;
  /// What changed, to publish as `bg.changed` events.
  std::vector<bg_change> changes;
  /// bg.complete with validations to run: run them, then finish().
  std::optional<pending_validation> validate;
};

/// The verdict of a run of validations, for bg_store::finish_completion.
validation_outcome outcome_of(const validation_report& report);

/// Each validation's result as a JSON array text (command, status,
/// exit_code, duration_ms, description, output, output_truncated,
/// log_file).
std::string validation_results_json(const validation_report& report);

/// The bg operations of one repository; see the top of this file.
class bg_service {
 public:
  /// Opens (creating it if needed) the ledger of the repository whose top
  /// folder is `repo_top`. Throws store::ledger_error.
  bg_service(const std::filesystem::path& repo_top, const control_config& cfg);
  ~bg_service();
  bg_service(const bg_service&) = delete;
  bg_service& operator=(const bg_service&) = delete;

  /// Handles one bg.* request (not monitor.*). Refusals are answers with
  /// ok false; a ledger failure is one with code "unavailable".
  service_reply handle(const control_request& req, int64_t now_ms);

  /// Ends a completion whose validations ran (see service_reply::validate)
  /// with their verdict and their results (validation_results_json): the
  /// answer of its bg.complete.
  service_reply finish(const pending_validation& pending,
                       const validation_outcome& outcome,
                       const std::string& results_json, int64_t now_ms);

  /// A harness ended `session`: a task whose child it was is interrupted.
  std::vector<bg_change> end_session(const std::string& session,
                                     int64_t now_ms);

  /// Hands expired tokens' tasks back to the queue.
  std::vector<bg_change> expire(int64_t now_ms);

  /// At a server's start: tasks dispatched but never linked are
  /// interrupted (see bg_store::recover).
  std::vector<bg_change> recover(int64_t now_ms);

  /// The fields of a `bg.changed` event for `change`.
  static std::string event_fields(const bg_change& change);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace taskforce::control
