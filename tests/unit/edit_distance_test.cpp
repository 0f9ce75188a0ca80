#define CAF_SUITE unit.edit_distance
#include <caf/test/unit_test.hpp>

#include "src/text/edit_distance.hpp"

using namespace taskforce;

CAF_TEST(distance counts insertions deletions and substitutions) {
  CAF_CHECK_EQUAL(edit_distance("", ""), 0u);
  CAF_CHECK_EQUAL(edit_distance("files", "fles"), 1u);
  CAF_CHECK_EQUAL(edit_distance("kitten", "sitting"), 3u);
  CAF_CHECK_EQUAL(edit_distance("abc", ""), 3u);
}

CAF_TEST(a swap of neighbours costs one step) {
  CAF_CHECK_EQUAL(edit_distance("stauts", "status"), 1u);
  CAF_CHECK_EQUAL(edit_distance("ab", "ba"), 1u);
  CAF_CHECK_EQUAL(edit_distance("abc", "ca"), 3u);
  // A swapped typo is nearer its word than a word one letter off twice.
  std::vector<std::string> verbs{"start", "status"};
  CAF_CHECK_EQUAL(nearest("stauts", verbs, 2), "status");
}

CAF_TEST(nearest picks the closest candidate within the bound) {
  std::vector<std::string> keys{"files", "locks", "priority"};
  CAF_CHECK_EQUAL(nearest("fles", keys, 1), "files");
  CAF_CHECK_EQUAL(nearest("prority", keys, 2), "priority");
  CAF_CHECK_EQUAL(nearest("zzz", keys, 2), "");
}
