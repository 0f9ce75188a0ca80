// Globs over repository paths, and the exact test whether two of them can
// name a common path.
//
// Syntax: `*` any run of characters within a segment, `?` one character
// within a segment, `**` any run of characters across segments (a whole
// `**/` segment may also match nothing, so `a/**/b` matches `a/b`),
// `[abc]`, `[a-z]`, `[!x]` one character of a class (never `/`), and
// `{a,b}` alternatives. A trailing `/` means the whole directory (`dir/**`).
// All of this is a regular language, so matching and intersection are
// exact: two globs intersect exactly when some path matches both. (Only
// pathological pairs, whose product automaton would exceed four million
// states, are assumed to intersect without the search.)
#pragma once

#include <bitset>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace taskforce::scope {

/// Whether `pattern` uses glob syntax (`*`, `?`, `[`, `{`) or ends in `/`.
bool is_glob(std::string_view pattern);

/// The folders and files a scope (normalised entries) can write: each
/// entry's literal base ("src/auth" for "src/auth/*.ts", "docs" for
/// "docs/", the path for a literal), de-duplicated; an entry with no
/// literal base ("**/x") adds nothing.
std::vector<std::string> write_roots(const std::vector<std::string>& scope);

/// A compiled scope entry: a literal path or a glob.
class glob {
 public:
  /// Compiles a normalised entry. Throws std::invalid_argument on bad
  /// syntax (an unclosed `[` or `{`, more than 64 alternatives, more than
  /// 1024 characters).
  explicit glob(std::string_view pattern);

  /// The entry as written.
  const std::string& pattern() const {
    return pattern_;
  }

  /// Whether the entry names exactly one path.
  bool is_literal() const {
    return literal_;
  }

  /// The leading whole segments free of glob syntax: "src/auth" for
  /// "src/auth/*.ts", "" for "**/x", the path itself for a literal. Every
  /// path the entry matches lies at or below it.
  std::string_view base() const {
    return std::string_view{pattern_}.substr(0, base_size_);
  }

  /// Whether `path` (a normalised repository path) matches.
  bool matches(std::string_view path) const;

  /// Whether some path matches both `a` and `b`.
  friend bool intersects(const glob& a, const glob& b);

  /// One step of the automaton: a set of characters, once or repeated.
  struct token {
    /// literal: `ch`; any_but_slash: `?`/`*`; any: `**`; cls: classes_[ch].
    enum kind_t : uint8_t { literal, any_but_slash, any, cls } kind;
    /// Whether the token repeats (zero or more times).
    bool repeat;
    /// The literal character or the class index.
    uint8_t ch;
  };

 private:
  bool token_accepts(const token& t, unsigned char c) const;
  friend bool tokens_meet(const glob& a, const token& x, const glob& b,
                          const token& y);

  std::string pattern_;
  /// The base is the pattern's first `base_size_` characters.
  size_t base_size_ = 0;
  bool literal_ = true;
  /// One token sequence per brace alternative; empty for a literal.
  std::vector<std::vector<token>> alternatives_;
  /// The character classes tokens of kind `cls` refer to.
  std::vector<std::bitset<256>> classes_;
};

/// Whether the entries `a` and `b` (normalised, as in `files`) intersect.
bool intersects(std::string_view a, std::string_view b);

} // namespace taskforce::scope
