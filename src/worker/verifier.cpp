#include "src/worker/verifier.hpp"

#include <algorithm>
#include <sstream>

#include "src/text/markdown.hpp"

namespace taskforce {

namespace {

std::string fenced(const std::string& text, const std::string& lang) {
  auto fence = fence_for(text);
  return fence + lang + "\n" + text
         + (text.empty() || text.back() == '\n' ? "" : "\n") + fence + "\n";
}

} // namespace

const char* to_string(review_kind x) {
  switch (x) {
    case review_kind::accepted: return "accepted";
    case review_kind::rejected: return "rejected";
    case review_kind::failed: break;
  }
  return "failed";
}

// The example block is deliberately not valid JSON, like the worker's: a
// verifier that echoes its prompt must not pass the example off as its
// verdict.
std::string compose_verifier_prompt(const verifier_request& r) {
  std::ostringstream out;
  out << "# Review of task " << r.task_id << ": " << trimmed(r.title) << "\n\n"
      << "You are an independent reviewer. Another agent worked on the task "
         "below; its verification command passed. Decide whether the work "
         "really does what the task asks, and nothing it should not. The "
         "current directory is a scratch copy of its checkout with the work "
         "as uncommitted changes (`git status`, `git diff HEAD`): read and "
         "run what you like, but change nothing - your changes are "
         "discarded.\n\n";
  auto body = trimmed(r.body);
  out << "## The task\n\n"
      << (body.empty() ? "(no description)" : body) << "\n\n";
  if (!r.files.empty()) {
    out << "Its declared write scope:\n\n";
    for (auto& f : r.files)
      out << "- `" << f << "`\n";
    out << '\n';
  }
  if (!r.verify.empty())
    out << "Its verification command (it passed):\n\n"
        << fenced(r.verify, "sh") << '\n';
  auto summary = trimmed(r.summary);
  if (!summary.empty())
    out << "The worker's summary: " << summary << "\n\n";
  out << "## The changes\n\n";
  if (r.diff.empty()) {
    out << "The task changed no file.\n\n";
  } else if (r.diff.size() > max_verifier_diff) {
    out << "The first " << max_verifier_diff << " of " << r.diff.size()
        << " bytes; run `git diff HEAD` for the rest.\n\n"
        << fenced(r.diff.substr(0, max_verifier_diff), "diff") << '\n';
  } else {
    out << fenced(r.diff, "diff") << '\n';
  }
  out << "## Your verdict\n\n"
         "End your final message with exactly one fenced JSON block, as the "
         "last thing you print:\n\n"
         "```json\n"
         "{\"status\": \"done\" to accept or \"blocked\" to reject, "
         "\"summary\": \"one line: why\"}\n"
         "```\n\n"
         "Reject (`\"status\": \"blocked\"`) only for a concrete defect the "
         "task's author must fix, and say what it is in `\"summary\"`: it "
         "is sent to them as is. You may add `\"usage\": {\"input_tokens\": "
         "N, \"output_tokens\": N, \"cost_usd\": X}`. If you cannot print "
         "JSON, end with a line `[task:done]` or `[task:blocked] <what is "
         "wrong>` instead.\n";
  auto extra = trimmed(r.instructions);
  if (!extra.empty())
    out << "\n## Instructions\n\n" << extra << '\n';
  return out.str();
}

review_verdict judge_review(const proc::run_result& result,
                            const report_reading& reading) {
  review_verdict v;
  if (reading.report)
    v.usage = reading.report->usage;
  if (result.timed_out) {
    v.reason = "the verifier timed out";
    return v;
  }
  if (result.signal != 0) {
    v.reason
      = "the verifier was killed by signal " + std::to_string(result.signal);
    return v;
  }
  if (!reading.error.empty()) {
    v.reason = "the verifier's report is malformed: " + reading.error;
    return v;
  }
  if (!reading.report) {
    v.reason = "the verifier gave no verdict (exit "
               + std::to_string(result.exit_code) + ")";
    return v;
  }
  auto summary = trimmed(reading.report->summary);
  if (reading.report->status == report_status::blocked) {
    v.kind = review_kind::rejected;
    v.reason = summary.empty() ? "no reason given" : summary;
    return v;
  }
  if (result.exit_code != 0) {
    v.reason = "the verifier exited " + std::to_string(result.exit_code);
    return v;
  }
  v.kind = review_kind::accepted;
  v.reason = summary;
  return v;
}

} // namespace taskforce
