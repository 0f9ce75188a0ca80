#define CAF_SUITE unit.checkbox
#include <caf/test/unit_test.hpp>

#include "src/taskfile/checkbox.hpp"

using namespace taskforce;
using namespace taskforce::taskfile;

namespace {

task_spec task(size_t line, std::string title) {
  task_spec t;
  t.line = line;
  t.title = std::move(title);
  return t;
}

} // namespace

CAF_TEST(the box on the line of the task is checked and nothing else changes) {
  std::string text = "# Plan\r\n- [ ] One\r\n  - files: a\r\n- [ ] Two\r\n";
  auto out = check_box(text, task(4, "Two"));
  CAF_REQUIRE(out);
  CAF_CHECK_EQUAL(*out, "# Plan\r\n- [ ] One\r\n  - files: a\r\n- [x] Two\r\n");
  // Checked already: the text as it is.
  auto again = check_box(*out, task(4, "Two"));
  CAF_REQUIRE(again);
  CAF_CHECK_EQUAL(*again, *out);
}

CAF_TEST(a headings task has its heading box checked) {
  std::string text = "### 1. [ ] Add the cache layer\n"
                     "- **Acceptance criteria:**\n"
                     "  - [ ] a hit avoids the slow path\n";
  auto out = check_box(text, task(1, "Add the cache layer"));
  CAF_REQUIRE(out);
  CAF_CHECK_EQUAL(*out, "### 1. [x] Add the cache layer\n"
                        "- **Acceptance criteria:**\n"
                        "  - [ ] a hit avoids the slow path\n");
}

CAF_TEST(lines added above the task do not lose its box) {
  // Parsed on line 1; a person added two lines above it since.
  std::string text = "Note\n\n- [ ] One\n- [ ] Two\n";
  auto out = check_box(text, task(1, "One"));
  CAF_REQUIRE(out);
  CAF_CHECK_EQUAL(*out, "Note\n\n- [x] One\n- [ ] Two\n");
}

CAF_TEST(a box that cannot be told apart is left alone) {
  // The title is on two lines, neither at the recorded line.
  std::string text = "- [ ] Same\n- [ ] Same\n";
  CAF_CHECK(!check_box(text, task(7, "Same")));
  // The task is gone from the file.
  CAF_CHECK(!check_box("- [ ] Other\n", task(1, "Mine")));
  // A line that merely mentions the title without a box.
  CAF_CHECK(!check_box("Mine is described here\n", task(1, "Mine")));
  // At the recorded line the right one is taken.
  auto second = check_box(text, task(2, "Same"));
  CAF_REQUIRE(second);
  CAF_CHECK_EQUAL(*second, "- [ ] Same\n- [x] Same\n");
}

CAF_TEST(find_checkbox says whether the box is checked) {
  auto box = find_checkbox("- [X] Done already\n", 1, "Done already");
  CAF_REQUIRE(box);
  CAF_CHECK(box->checked);
  CAF_CHECK_EQUAL(box->line, 1u);
  auto open = find_checkbox("* [ ] Open\n", 1, "Open");
  CAF_REQUIRE(open);
  CAF_CHECK(!open->checked);
}
