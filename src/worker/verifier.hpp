// The verifier: an independent, read-only agent run that inspects a task's
// work after its gate passed and accepts or rejects it (`run.verifierEnabled`,
// `run.verifierPreset`, `run.verifierPrompt`). It runs in a scratch copy of
// the task's checkout (src/git/review.hpp), so nothing it does reaches the
// task. A rejection counts like a failed gate: its reason is steered into
// a repair turn. A verifier that gives no verdict fails the attempt (the
// worker cannot repair a broken verifier). Pure: nothing runs here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "src/proc/run.hpp"
#include "src/report/report.hpp"

namespace taskforce {

/// What the verifier's prompt is made of.
struct verifier_request {
  /// The task id.
  std::string task_id;
  /// The task title.
  std::string title;
  /// The task body.
  std::string body;
  /// The declared write scope.
  std::vector<std::string> files;
  /// The gate command (it passed); empty = none.
  std::string verify;
  /// The worker's summary of what it did.
  std::string summary;
  /// The task's work as a patch.
  std::string diff;
  /// `run.verifierPrompt`.
  std::string instructions;
};

/// The most of the diff the prompt carries (its start); the verifier can
/// read the rest with git in its checkout.
constexpr size_t max_verifier_diff = 96 * 1024;

/// Composes the verifier's prompt, in markdown.
std::string compose_verifier_prompt(const verifier_request& request);

/// How the verifier judged the work.
enum class review_kind {
  /// The work does what the task asks.
  accepted,
  /// The work is refused; `reason` says why.
  rejected,
  /// No verdict (no report, a malformed one, a crash, a timeout).
  failed,
};

/// "accepted", "rejected" or "failed".
const char* to_string(review_kind x);

/// The verdict with its reason and the usage the verifier reported.
struct review_verdict {
  review_kind kind = review_kind::failed;
  /// Why it rejected (or failed); its summary when it accepted.
  std::string reason;
  /// The usage block of its report, when it had one.
  std::optional<report_usage> usage;
};

/// Judges the verifier's run: a `blocked` report (or `[task:blocked]`)
/// rejects with its summary as the reason; a `done` report with exit 0
/// accepts; anything else (no report, malformed, non-zero exit with a
/// `done` report, a signal, a timeout) is no verdict.
review_verdict judge_review(const proc::run_result& result,
                            const report_reading& reading);

} // namespace taskforce
