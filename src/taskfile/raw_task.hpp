// The parsers' shared middle: tasks as written, before validation.
//
// Each reader (checklist, headings, a custom parser's JSON) only finds
// where tasks and values are; `validate` then checks every value, resolves
// deps and finds cycles the same way for all of them.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "src/taskfile/parse.hpp"
#include "src/text/strings.hpp"

namespace taskforce::taskfile {

/// One metadata value as written.
struct raw_field {
  /// The line on which the value is written.
  size_t line = 0;
  /// The text after `key:` (markdown readers).
  std::string text;
  /// Items of a list given as a JSON array (then `text` is unused).
  std::vector<std::string> items;
  bool is_list = false;
};

/// One task as written.
struct raw_task {
  size_t line = 0;
  std::string title;
  bool done = false;
  std::string body;
  bool design = false;
  /// The id when no `id` field is given (`t3`, or the heading number).
  std::string default_id;
  /// Canonical key (id, files, locks, priority, verify, deps, agent, model,
  /// risk, timeout, run) -> value.
  std::map<std::string, raw_field> fields;
  /// A custom parser may hold a task itself.
  bool held = false;
  std::optional<std::string> hold_reason;
};

/// The metadata keys of the checklist format, in documentation order.
const std::vector<std::string>& checklist_keys();

/// The key `word` is a near miss of (one edit, two for keys longer than
/// five letters, `id` only exactly), or "" when it is none's.
std::string near_miss(std::string_view word,
                      const std::vector<std::string>& keys);

/// Splits text into lines (without `\n` or a trailing `\r`).
std::vector<std::string_view> split_lines(std::string_view text);

/// `s` without leading and trailing blanks.
std::string_view trim(std::string_view s);

/// `s` without one pair of backticks wrapping it whole.
std::string_view strip_backticks(std::string_view s);

/// Columns of leading whitespace (a tab counts as four).
size_t indentation(std::string_view line);

/// Lines without their common indentation, blank edges dropped.
std::string dedent(std::string_view text);

/// Whether a field's value opens a block (`run: |`): the value is on the
/// lines below, indented deeper than the field.
bool opens_block(std::string_view value);

/// The fields whose value may be a block: the commands (`run`, `verify`).
bool takes_block(std::string_view field);

/// The block under `lines[n]` (a field at `indent` columns whose value is
/// `|`): the following lines indented deeper than `indent` (blank lines
/// between them included), without their common indentation; "" when there
/// are none. `n` is left on the block's last line.
std::string read_block(const std::vector<std::string_view>& lines, size_t& n,
                       size_t indent);

/// The error for a block field with nothing under it.
std::string block_missing(std::string_view field);

/// The checklist reader. Checkboxes under a headings-format task
/// (`### 1. [ ] Title`) are that task's acceptance criteria, not tasks: they
/// are left out, with a warning naming `--format headings`.
std::vector<raw_task> read_checklist(std::string_view text,
                                     std::vector<parse_error>& errors,
                                     std::vector<parse_error>& warnings);

/// The markdown heading level (1-6) of `line` when it is a headings-format
/// task (`### 1. [ ] Title`, `## 2. [x] Title`), else 0.
size_t task_heading_level(std::string_view line);

/// The headings reader; `fields` maps extra labels to canonical names.
std::vector<raw_task>
read_headings(std::string_view text,
              const std::map<std::string, std::string>& fields,
              std::vector<parse_error>& errors);

/// Reads a custom parser's `{"tasks":[...],"errors":[...]}` output.
std::vector<raw_task> read_parser_output(std::string_view json_text,
                                         std::vector<parse_error>& errors);

/// Runs `opts.parser_command` with `text` on its standard input; returns
/// its standard output, or adds an error and returns nullopt.
std::optional<std::string> run_parser_command(std::string_view text,
                                              const parse_options& opts,
                                              std::vector<parse_error>& errors);

/// Checks every value, resolves deps, finds cycles and holds.
std::vector<task_spec> validate(std::vector<raw_task> raw,
                                const parse_options& opts,
                                std::vector<parse_error>& errors);

} // namespace taskforce::taskfile
