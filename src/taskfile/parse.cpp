#include "src/taskfile/parse.hpp"

#include <algorithm>

#include "src/taskfile/raw_task.hpp"

namespace taskforce::taskfile {

parse_options options_from(const run_config& cfg) {
  parse_options opts;
  opts.format = cfg.task_format;
  opts.sequential_deps = cfg.sequential_deps;
  opts.fields = cfg.fields;
  opts.hold_pattern = cfg.hold_pattern;
  opts.approval_risks = cfg.approval_risks;
  opts.parser_command = cfg.parser_command;
  return opts;
}

parse_result parse(std::string_view text, const std::string& file,
                   const parse_options& opts) {
  parse_result result;
  auto& errors = result.errors;
  // Editors on some systems start a UTF-8 file with a byte-order mark.
  if (text.substr(0, 3) == "\xEF\xBB\xBF")
    text.remove_prefix(3);
  std::vector<raw_task> raw;
  if (!opts.parser_command.empty()) {
    auto output = run_parser_command(text, opts, errors);
    if (output)
      raw = read_parser_output(*output, errors);
  } else if (opts.format == "checklist") {
    raw = read_checklist(text, errors, result.warnings);
  } else if (opts.format == "headings") {
    raw = read_headings(text, opts.fields, errors);
  } else {
    errors.push_back({0, "unknown task format \"" + opts.format
                           + "\" (checklist or headings)"});
  }
  if (raw.empty() && errors.empty()) {
    errors.push_back(
      {0, opts.format == "headings" && opts.parser_command.empty()
            ? "no tasks found in " + file
                + " (a headings task is a line like \"### 1. [ ] Title\")"
          : opts.parser_command.empty()
            ? "no tasks found in " + file
                + " (a checklist task is a line like \"- [ ] Title\"; "
                  "use --format headings for \"### 1. [ ] Title\")"
            : "the parser command found no tasks in " + file});
  }
  auto tasks = validate(std::move(raw), opts, errors);
  if (errors.empty()) {
    result.tasks = std::move(tasks);
  } else {
    std::stable_sort(errors.begin(), errors.end(),
                     [](const parse_error& a, const parse_error& b) {
                       return a.line < b.line;
                     });
  }
  return result;
}

std::string format_error(const std::string& file, const parse_error& e) {
  if (e.line == 0)
    return file + ": " + e.message;
  return file + ":" + std::to_string(e.line) + ": " + e.message;
}

} // namespace taskforce::taskfile
