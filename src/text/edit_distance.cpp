#include "src/text/edit_distance.hpp"

#include <algorithm>
#include <numeric>

namespace taskforce {

size_t edit_distance(std::string_view a, std::string_view b) {
  // One row of the dynamic-programming table is enough.
  std::vector<size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
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
