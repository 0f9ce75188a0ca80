#include "src/run/budget.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include <nlohmann/json.hpp>

namespace taskforce::run {

namespace {

uint64_t add_saturating(uint64_t a, uint64_t b) {
  auto top = std::numeric_limits<uint64_t>::max();
  return a > top - b ? top : a + b;
}

std::string format_limit(double x) {
  return nlohmann::json(x).dump();
}

} // namespace

uint64_t spend::tokens() const {
  return add_saturating(input_tokens, output_tokens);
}

spend& spend::operator+=(const spend& other) {
  input_tokens = add_saturating(input_tokens, other.input_tokens);
  output_tokens = add_saturating(output_tokens, other.output_tokens);
  if (std::isfinite(other.cost_usd) && other.cost_usd > 0)
    cost_usd += other.cost_usd;
  return *this;
}

bool reached(const budget& b, const spend& spent) {
  return (b.max_cost_usd > 0 && spent.cost_usd >= b.max_cost_usd)
         || (b.max_tokens > 0 && spent.tokens() >= b.max_tokens);
}

std::string describe_reached(const budget& b, const spend& spent) {
  std::string out;
  if (b.max_cost_usd > 0 && spent.cost_usd >= b.max_cost_usd)
    out = "cost " + format_cost(spent.cost_usd) + " reached maxCostUsd "
          + format_limit(b.max_cost_usd);
  if (b.max_tokens > 0 && spent.tokens() >= b.max_tokens) {
    if (!out.empty())
      out += ", ";
    out += std::to_string(spent.tokens()) + " tokens reached maxTokens "
           + std::to_string(b.max_tokens);
  }
  return out;
}

budget budget_of(const run_config& cfg, const std::string& recorded_json) {
  budget b;
  b.max_cost_usd = cfg.max_cost_usd > 0 ? cfg.max_cost_usd : 0;
  b.max_tokens = cfg.max_tokens > 0 ? static_cast<uint64_t>(cfg.max_tokens) : 0;
  auto rec = nlohmann::json::parse(recorded_json, nullptr, false);
  if (!rec.is_object())
    return b;
  if (b.max_cost_usd == 0)
    if (auto i = rec.find("maxCostUsd");
        i != rec.end() && i->is_number() && i->get<double>() > 0)
      b.max_cost_usd = i->get<double>();
  if (b.max_tokens == 0)
    if (auto i = rec.find("maxTokens");
        i != rec.end() && i->is_number_integer() && i->get<int64_t>() > 0)
      b.max_tokens = i->get<uint64_t>();
  return b;
}

std::string format_cost(double usd) {
  char buf[64];
  if (!std::isfinite(usd) || usd < 0)
    usd = 0;
  std::snprintf(buf, sizeof buf, usd < 1000 ? "$%.4f" : "$%.2f", usd);
  return buf;
}

} // namespace taskforce::run
