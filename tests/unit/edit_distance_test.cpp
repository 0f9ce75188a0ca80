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

CAF_TEST(nearest picks the closest candidate within the bound) {
  std::vector<std::string> keys{"files", "locks", "priority"};
  CAF_CHECK_EQUAL(nearest("fles", keys, 1), "files");
  CAF_CHECK_EQUAL(nearest("prority", keys, 2), "priority");
  CAF_CHECK_EQUAL(nearest("zzz", keys, 2), "");
}
