// The worker report: what a worker says about its task at the end of its
// output, and the verdict on an attempt that combines it with how the
// process ended.
//
// The contract (also in the prompt every agent gets):
//   - the last fenced ```json block of the output is authoritative:
//     {"status": "done"|"blocked", "summary": "...", "files": ["..."],
//      "usage": {"input_tokens": N, "output_tokens": N, "cost_usd": X}}
//     (only "status" is required; a block without "status" is no report);
//   - otherwise the last `[task:done]` or `[task:blocked]` marker, the text
//     after it being the summary (the reason, for blocked);
//   - otherwise there is no report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/proc/run.hpp"

namespace taskforce {

/// What the worker says it achieved.
enum class report_status { done, blocked };

/// "done" or "blocked".
const char* to_string(report_status x);

/// Where a report was read from.
enum class report_source { json, marker };

/// "json" or "marker".
const char* to_string(report_source x);

/// Tokens and money a worker says it spent.
struct report_usage {
  /// Input (prompt) tokens.
  uint64_t input_tokens = 0;
  /// Output (completion) tokens.
  uint64_t output_tokens = 0;
  /// Cost in US dollars.
  double cost_usd = 0;
};

/// The most tokens one report counts (each of input and output); more is
/// counted as this, with a warning.
constexpr uint64_t max_report_tokens = 1000000000000ull;

/// The most cost one report counts, in US dollars; more is counted as this,
/// with a warning.
constexpr double max_report_cost_usd = 1000000.0;

/// A worker's report.
struct worker_report {
  /// done or blocked.
  report_status status = report_status::done;
  /// The summary (JSON) or the text after the marker, trimmed.
  std::string summary;
  /// The files the worker says it changed (JSON only).
  std::vector<std::string> files;
  /// The usage block, when the report had one.
  std::optional<report_usage> usage;
  /// A JSON block or a marker.
  report_source source = report_source::json;
  /// What was kept to a ceiling (usage beyond max_report_tokens or
  /// max_report_cost_usd), in words.
  std::vector<std::string> warnings;
};

/// The result of reading an output: a report, a malformed one, or nothing.
struct report_reading {
  /// The report, when one was found and is well formed.
  std::optional<worker_report> report;
  /// Set when the last ```json block is malformed: says where and why. The
  /// report is then empty: a broken authoritative block is not guessed at.
  std::string error;
  /// True when there is neither a report nor an error.
  bool none() const {
    return !report && error.empty();
  }
};

/// Reads the report from a worker's final output (usually the run's tail).
report_reading read_report(std::string_view output);

/// How a worker backend judges its output.
enum class worker_backend { shell, agent, scripted };

/// "shell", "agent" or "scripted".
const char* to_string(worker_backend x);

/// Parses "shell", "agent" or "scripted"; nullopt otherwise.
std::optional<worker_backend> parse_worker_backend(std::string_view name);

/// The outcome of one worker run.
enum class verdict_kind { done, blocked, failed };

/// "done", "blocked" or "failed".
const char* to_string(verdict_kind x);

/// The outcome with its reason and the report behind it.
struct verdict {
  /// done, blocked or failed.
  verdict_kind kind = verdict_kind::failed;
  /// Why (failed, blocked) or the summary (done); one line for the ledger.
  std::string reason;
  /// The report, when there was one.
  std::optional<worker_report> report;
};

/// Judges a finished worker run. Timeouts, cancels and malformed reports
/// fail. Then, for `shell`: a blocked report blocks, otherwise exit 0 is done
/// and anything else fails. For `agent` and `scripted`: a blocked report
/// blocks; a done report with exit 0 is done; no report fails ("no report"),
/// and so does a non-zero exit or a signal.
verdict judge_worker(worker_backend backend, const proc::run_result& result,
                     const report_reading& reading);

} // namespace taskforce
