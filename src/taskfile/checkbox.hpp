// A task's checkbox in the text of its task file: finding it and checking it
// (run.flipCheckboxes, run.detectCompletion "checkboxes"). Pure text work,
// on the file as it is now: a person may have edited it since it was
// parsed, so the box is found again by the task's line and title, and only
// that box changes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "src/taskfile/task.hpp"

namespace taskforce::taskfile {

/// Where a task's box is in a task file's text.
struct checkbox_place {
  /// The byte offset of the character between the brackets.
  size_t offset = 0;
  /// The 1-based line.
  size_t line = 0;
  /// The box is checked (`x` or `X`).
  bool checked = false;
};

/// The box of the task with `title` whose checkbox or heading was on line
/// `line` when it was parsed: that line when it still holds a box followed
/// by the title (the list item `- [ ] title` or the heading
/// `### 1. [ ] title`); otherwise the one line anywhere that does (the
/// file grew or shrank above it). Nothing when no line, or more than one,
/// fits: then nobody can tell which box is the task's.
std::optional<checkbox_place> find_checkbox(std::string_view text, size_t line,
                                            const std::string& title);

/// `text` with the task's box checked (`[x]`), everything else byte for
/// byte as it was; `text` itself when the box is checked already; nothing
/// when the box cannot be found (see find_checkbox).
std::optional<std::string> check_box(const std::string& text,
                                     const task_spec& task);

} // namespace taskforce::taskfile
