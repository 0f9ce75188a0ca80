// What a person asks of a run from the command line (approve, reject,
// answer, send, broadcast, add), and the verdict: the same request goes to
// a live driver over its control endpoint or, with no driver, is decided
// against the ledger and takes effect at the next resume.
#pragma once

#include <string>

namespace taskforce::run {

enum class steer_verb { approve, reject, answer, send, broadcast, add };

struct steer_request {
  steer_verb verb = steer_verb::approve;
  /// The run (`--run ID`); empty: the repository's latest unfinished run.
  std::string run_id;
  /// The task (empty for broadcast and add).
  std::string task;
  /// reject: the reason; answer, send, broadcast: the text.
  std::string text;
  /// add: the task file, as an absolute path.
  std::string file;
};

enum class steer_outcome {
  /// Done (live) or recorded for the next resume (paused).
  accepted,
  /// Unknown run or task, or a state the command does not apply to.
  refused,
  /// Something failed (the ledger, the endpoint); nothing was changed.
  failed,
};

struct steer_verdict {
  steer_outcome outcome = steer_outcome::failed;
  /// What to tell the person: the effect, or why not (naming the state).
  std::string message;
  /// Whether a live driver decided it (false: recorded for resume).
  bool live = false;
};

} // namespace taskforce::run
