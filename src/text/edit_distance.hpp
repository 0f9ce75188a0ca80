// Edit distance, for "did you mean" suggestions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace taskforce {

/// The edit distance between `a` and `b`: insertions, deletions,
/// substitutions and swaps of two neighbouring characters each cost 1 (a
/// swap is the commonest typo: `stauts` is one step from `status`).
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate nearest to `word`, or "" when none is within `max_distance`.
/// Ties go to the earlier candidate.
std::string nearest(std::string_view word,
                    const std::vector<std::string>& candidates,
                    size_t max_distance);

} // namespace taskforce
