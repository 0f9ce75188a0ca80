#include "src/text/edit_distance.hpp"

#include <algorithm>
#include <numeric>

namespace taskforce {

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows of the dynamic-programming table: a transposition looks two
  // rows back.
  std::vector<size_t> before(b.size() + 1), last(b.size() + 1),
    row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    before.swap(last);
    last.swap(row);
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitute = last[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({last[j] + 1, row[j - 1] + 1, substitute});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        row[j] = std::min(row[j], before[j - 2] + 1);
    }
  }
  return row[b.size()];
}

std::string nearest(std::string_view word,
                    const std::vector<std::string>& candidates,
                    size_t max_distance) {
  std::string best;
  size_t best_distance = max_distance + 1;
  for (const auto& candidate : candidates) {
    auto distance = edit_distance(word, candidate);
    if (distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

} // namespace taskforce
