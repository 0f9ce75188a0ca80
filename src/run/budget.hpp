// Budgets: `run.maxCostUsd` and `run.maxTokens` stop a run once the usage
// its workers reported reaches either limit (at or above; tokens are input
// plus output; 0 is off). Pure: the scheduler applies the rule, the command
// line explains it.
#pragma once

#include <cstdint>
#include <string>

#include "src/config/config.hpp"

namespace taskforce::run {

/// The run's reason when its budget stopped it.
constexpr const char* budget_reason = "budget";

/// Tokens and cost reported by workers, summed.
struct spend {
  uint64_t input_tokens = 0;
  uint64_t output_tokens = 0;
  double cost_usd = 0;

  /// Input plus output, saturating.
  uint64_t tokens() const;

  /// Adds `other`, saturating (a sum never wraps around).
  spend& operator+=(const spend& other);
};

/// The limits of one run.
struct budget {
  /// 0 = no limit on cost.
  double max_cost_usd = 0;
  /// 0 = no limit on tokens.
  uint64_t max_tokens = 0;

  /// Whether either limit is set.
  bool any() const {
    return max_cost_usd > 0 || max_tokens > 0;
  }
};

/// Whether `spent` reached a limit of `b` (at or above).
bool reached(const budget& b, const spend& spent);

/// What reached which limit, for people: "cost $0.0300 reached maxCostUsd
/// 0.03" (both when both did); empty when none was reached.
std::string describe_reached(const budget& b, const spend& spent);

/// The limits for a run: those of `cfg` (the invocation's config); a limit
/// it leaves at 0 is taken from the run's recorded config (`recorded_json`,
/// the `run` section as the run was created), so a resume that does not
/// mention a budget never lifts it. A resume raises a limit with its own
/// `--config`.
budget budget_of(const run_config& cfg, const std::string& recorded_json);

/// `$0.0123`: a cost for people (4 decimals below $1000, 2 above).
std::string format_cost(double usd);

} // namespace taskforce::run
