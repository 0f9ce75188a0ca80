// Requests from a command to a server. A control-plane request: to the
// repository's running server when there is one (its endpoint file, with the
// token), so the server's own state stays the one truth; nothing when none
// runs, and the command then works on the ledger itself.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "src/control/request.hpp"

namespace taskforce::cli {

/// One answer of the control plane, from a server or from the ledger.
struct control_outcome {
  bool ok = false;
  /// The answer's fields (when ok): the protocol's answer without "id"
  /// and "ok", as compact JSON text.
  std::string fields = "{}";
  /// The protocol's error code and message (when not ok).
  std::string code;
  std::string message;
};

/// A refusal.
control_outcome refused_outcome(std::string code, std::string message);

/// Sends `req` (the protocol request's fields, without "op") as `op` to the
/// server of the repository at `top`, waiting at most `patience`. Nullopt
/// when no server runs; a file that cannot be trusted, a refused token or
/// a server that does not answer is a refusal (code unavailable): nothing
/// is done on the ledger behind a server's back.
std::optional<control_outcome> ask_server(const std::filesystem::path& top,
                                          control::control_op op,
                                          const nlohmann::json& req,
                                          std::chrono::milliseconds patience);

/// The outcome a protocol response line states: its fields when ok, else
/// its error (a line that is no response object is a refusal, code
/// unavailable).
control_outcome outcome_of(const std::string& response);

/// Sends `req` (a protocol request with its "op"; "id" is added when
/// missing) to the per-user server, starting one when none runs and
/// `start`; every wait ends by `deadline`. Nullopt when none runs and
/// `start` is false. Throws net::endpoint_error when the server cannot be
/// reached, started, or does not answer in time.
std::optional<control_outcome>
ask_user_server(nlohmann::json req, bool start,
                std::chrono::steady_clock::time_point deadline);

/// ask_user_server for an `acquire` that may wait: when no answer came by
/// `deadline`, its holder is released (reason aborted) on the same
/// connection before the timeout is thrown, so a permit granted just as the
/// caller gave up is not left held, and a wait still queued is cancelled.
std::optional<control_outcome>
acquire_from_user_server(nlohmann::json req, bool start,
                         std::chrono::steady_clock::time_point deadline);

} // namespace taskforce::cli
