// Parsing a task file: the checklist and headings formats, or a custom
// parser program, then one shared validation pass.
//
// Every error is collected (never just the first), each with the line on
// which the offending value is written. A result with errors carries no
// tasks: nothing may run from a file with a mistake in it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "src/config/config.hpp"
#include "src/taskfile/task.hpp"

namespace taskforce::taskfile {

/// How to read a task file (the `run` section's parsing keys).
struct parse_options {
  /// `checklist` or `headings`.
  std::string format = "checklist";
  /// File order becomes the dependency chain.
  bool sequential_deps = false;
  /// Headings format: extra labels as written -> canonical field name
  /// (files, locks, priority, verify, deps, agent, model, risk, timeout,
  /// run, stories, tdd, out_of_scope, spec, what_to_build, acceptance,
  /// how_verified).
  std::map<std::string, std::string> fields;
  /// Regexes (ECMAScript); a task whose title or body matches is held.
  std::vector<std::string> hold_pattern{"\\[NEEDS DECISION"};
  /// `risk` values (case-insensitive) that need approval.
  std::vector<std::string> approval_risks;
  /// A program (run by /bin/sh -c) that reads the file on stdin and prints
  /// `{"tasks":[...],"errors":[...]}`; empty = the built-in parsers.
  std::string parser_command;
  /// The parser command's working directory; empty = the current one.
  std::string working_directory;
  /// The repository's top folder: scopes are resolved there through
  /// symlinks (an escape or an alias of .git/.taskforce is an error, and
  /// `files` holds where each entry physically lies). Empty = as written.
  std::string repository;
  /// The parser command is killed (its whole process group) after this.
  int64_t parser_timeout_ms = 30000;
};

/// The parsing options of a run config.
parse_options options_from(const run_config& cfg);

/// One mistake in a task file. Line 0 means the file as a whole (or the
/// config that shaped its reading).
struct parse_error {
  size_t line = 0;
  std::string message;
};

/// Tasks in file order, or the errors (then `tasks` is empty).
struct parse_result {
  std::vector<task_spec> tasks;
  std::vector<parse_error> errors;
  /// What is probably not meant the way it reads (checkboxes under a
  /// headings-format task read as a checklist); nothing is refused for it.
  std::vector<parse_error> warnings;

  bool ok() const {
    return errors.empty();
  }
};

/// Parses `text` with the built-in parser chosen by `opts.format`, or with
/// `opts.parser_command` when set. `file` names the input in messages.
parse_result parse(std::string_view text, const std::string& file,
                   const parse_options& opts);

/// Renders an error as `FILE:LINE: message` (`FILE: message` for line 0).
std::string format_error(const std::string& file, const parse_error& e);

/// Parses a duration: `30s`, `5m`, `1h`, `250ms` or bare milliseconds.
/// Returns false on anything else, zero or overflow.
bool parse_duration(std::string_view text, int64_t& ms);

/// Whether a `verify:` value disables the gate (`false`, `no`, `none`,
/// `-`, any case, or empty).
bool disables_gate(std::string_view value);

} // namespace taskforce::taskfile
