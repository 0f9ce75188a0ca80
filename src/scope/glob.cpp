#include "src/scope/glob.hpp"

#include <algorithm>

namespace taskforce::scope {

namespace {

/// Brace expansion and `**/` segments may multiply a pattern; past this
/// the pattern is refused rather than compiled into a huge automaton.
constexpr size_t max_alternatives = 64;

/// Longer patterns are refused: intersection costs the product of lengths.
constexpr size_t max_pattern = 1024;

/// The most product-automaton states one intersection test may explore.
constexpr size_t max_product_states = size_t{1} << 22;

bool is_meta(char c) {
  return c == '*' || c == '?' || c == '[' || c == '{';
}

/// The index of the `}` closing the `{` at `open`, or npos.
size_t closing_brace(std::string_view s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    if (s[i] == '{')
      ++depth;
    else if (s[i] == '}' && --depth == 0)
      return i;
  }
  return std::string_view::npos;
}

/// Expands `{a,b}` (nested allowed) into every alternative.
void expand_braces(std::string_view s, std::vector<std::string>& out) {
  auto open = s.find('{');
  if (open == std::string_view::npos) {
    if (out.size() >= max_alternatives)
      throw std::invalid_argument("too many alternatives");
    out.emplace_back(s);
    return;
  }
  auto close = closing_brace(s, open);
  if (close == std::string_view::npos)
    throw std::invalid_argument("unclosed {");
  auto prefix = s.substr(0, open);
  auto suffix = s.substr(close + 1);
  auto inner = s.substr(open + 1, close - open - 1);
  int depth = 0;
  size_t item_start = 0;
  for (size_t i = 0; i <= inner.size(); ++i) {
    if (i < inner.size() && inner[i] == '{')
      ++depth;
    else if (i < inner.size() && inner[i] == '}')
      --depth;
    else if (i == inner.size() || (inner[i] == ',' && depth == 0)) {
      std::string joined{prefix};
      joined += inner.substr(item_start, i - item_start);
      joined += suffix;
      expand_braces(joined, out);
      item_start = i + 1;
    }
  }
}

/// A whole `**/` segment matches zero or more directories: expand each
/// into "nothing" and "`**` then `/`" (the latter needs one or more).
void expand_globstar_dirs(const std::string& s, size_t from,
                          std::vector<std::string>& out) {
  for (size_t i = from; i + 2 < s.size(); ++i) {
    bool at_segment_start = i == 0 || s[i - 1] == '/';
    if (at_segment_start && s.compare(i, 3, "**/") == 0) {
      expand_globstar_dirs(s.substr(0, i) + s.substr(i + 3), i, out);
      expand_globstar_dirs(s, i + 3, out);
      return;
    }
  }
  if (out.size() >= max_alternatives)
    throw std::invalid_argument("too many alternatives");
  out.push_back(s);
}

} // namespace

bool is_glob(std::string_view pattern) {
  return (!pattern.empty() && pattern.back() == '/')
         || std::any_of(pattern.begin(), pattern.end(), is_meta);
}

glob::glob(std::string_view pattern) : pattern_(pattern) {
  if (pattern.size() > max_pattern)
    throw std::invalid_argument("longer than 1024 characters");
  literal_ = !is_glob(pattern);
  if (literal_) {
    base_size_ = pattern_.size();
    return;
  }
  // The base: whole leading segments without glob syntax.
  size_t cut = 0;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (is_meta(pattern[i]))
      break;
    if (pattern[i] == '/')
      cut = i;
  }
  base_size_ = cut;
  std::string full = pattern_;
  if (full.back() == '/')
    full += "**";
  // The usual glob has one alternative: skip the expansion's temporaries.
  std::vector<std::string> expanded;
  if (full.find('{') == std::string::npos
      && full.find("**/") == std::string::npos) {
    expanded.push_back(std::move(full));
  } else {
    std::vector<std::string> braced;
    expand_braces(full, braced);
    for (const auto& alternative : braced)
      expand_globstar_dirs(alternative, 0, expanded);
  }
  alternatives_.reserve(expanded.size());
  for (const auto& alternative : expanded) {
    std::vector<token> tokens;
    tokens.reserve(alternative.size());
    for (size_t i = 0; i < alternative.size(); ++i) {
      char c = alternative[i];
      if (c == '*') {
        if (i + 1 < alternative.size() && alternative[i + 1] == '*') {
          while (i + 1 < alternative.size() && alternative[i + 1] == '*')
            ++i;
          tokens.push_back({token::any, true, 0});
        } else {
          tokens.push_back({token::any_but_slash, true, 0});
        }
      } else if (c == '?') {
        tokens.push_back({token::any_but_slash, false, 0});
      } else if (c == '[') {
        size_t j = i + 1;
        bool negate = j < alternative.size()
                      && (alternative[j] == '!' || alternative[j] == '^');
        if (negate)
          ++j;
        std::bitset<256> set;
        bool first = true;
        for (; j < alternative.size() && (first || alternative[j] != ']');
             ++j) {
          first = false;
          auto lo = static_cast<unsigned char>(alternative[j]);
          auto hi = lo;
          if (j + 2 < alternative.size() && alternative[j + 1] == '-'
              && alternative[j + 2] != ']') {
            hi = static_cast<unsigned char>(alternative[j + 2]);
            j += 2;
          }
          for (unsigned k = lo; k <= hi; ++k)
            set.set(k);
        }
        if (j >= alternative.size())
          throw std::invalid_argument("unclosed [");
        if (negate)
          set.flip();
        set.reset('/');
        if (classes_.size() >= 256)
          throw std::invalid_argument("too many character classes");
        classes_.push_back(set);
        tokens.push_back(
          {token::cls, false, static_cast<uint8_t>(classes_.size() - 1)});
        i = j;
      } else {
        tokens.push_back({token::literal, false, static_cast<uint8_t>(c)});
      }
    }
    alternatives_.push_back(std::move(tokens));
  }
}

bool glob::token_accepts(const token& t, unsigned char c) const {
  switch (t.kind) {
    case token::literal: return t.ch == c;
    case token::any_but_slash: return c != '/';
    case token::any: return true;
    case token::cls: return classes_[t.ch].test(c);
  }
  return false;
}

bool glob::matches(std::string_view path) const {
  if (literal_)
    return path == pattern_;
  // Simulates the automaton of each alternative with a set of states.
  std::vector<char> current;
  std::vector<char> next;
  for (const auto& tokens : alternatives_) {
    size_t n = tokens.size();
    current.assign(n + 1, 0);
    auto close = [&](std::vector<char>& states) {
      for (size_t i = 0; i < n; ++i)
        if (states[i] && tokens[i].repeat)
          states[i + 1] = 1;
    };
    current[0] = 1;
    close(current);
    bool alive = true;
    for (size_t p = 0; p < path.size() && alive; ++p) {
      next.assign(n + 1, 0);
      alive = false;
      auto c = static_cast<unsigned char>(path[p]);
      for (size_t i = 0; i < n; ++i) {
        if (current[i] && token_accepts(tokens[i], c)) {
          next[tokens[i].repeat ? i : i + 1] = 1;
          alive = true;
        }
      }
      close(next);
      current.swap(next);
    }
    if (alive && current[n])
      return true;
  }
  return false;
}

bool tokens_meet(const glob& a, const glob::token& x, const glob& b,
                 const glob::token& y) {
  using token = glob::token;
  if (x.kind == token::literal)
    return b.token_accepts(y, x.ch);
  if (y.kind == token::literal)
    return a.token_accepts(x, y.ch);
  if (x.kind == token::cls && y.kind == token::cls)
    return (a.classes_[x.ch] & b.classes_[y.ch]).any();
  if (x.kind == token::cls)
    return a.classes_[x.ch].any(); // classes never hold '/'
  if (y.kind == token::cls)
    return b.classes_[y.ch].any();
  return true; // any/any_but_slash pairs share every character but '/'
}

namespace {

/// Whether `prefix` is `path` or one of its ancestor directories.
bool is_segment_prefix(std::string_view prefix, std::string_view path) {
  if (prefix.empty())
    return true;
  if (path.size() < prefix.size() || path.compare(0, prefix.size(), prefix))
    return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

} // namespace

bool intersects(const glob& a, const glob& b) {
  if (a.literal_ && b.literal_)
    return a.pattern_ == b.pattern_;
  if (a.literal_)
    return b.matches(a.pattern_);
  if (b.literal_)
    return a.matches(b.pattern_);
  // Every path of a glob lies under its base: disjoint bases never meet.
  if (!is_segment_prefix(a.base(), b.base())
      && !is_segment_prefix(b.base(), a.base()))
    return false;
  // Pathological patterns (hundreds of tokens times dozens of alternatives)
  // would cost billions of steps; past this budget they are assumed to
  // intersect, the conservative answer. Real scopes stay far below it.
  size_t work = 0;
  for (const auto& xs : a.alternatives_)
    for (const auto& ys : b.alternatives_)
      work += (xs.size() + 1) * (ys.size() + 1);
  if (work > max_product_states)
    return true;
  // Searches the product automaton for a path both accept.
  std::vector<char> seen;
  std::vector<std::pair<size_t, size_t>> stack;
  for (const auto& xs : a.alternatives_) {
    for (const auto& ys : b.alternatives_) {
      size_t n = xs.size();
      size_t m = ys.size();
      seen.assign((n + 1) * (m + 1), 0);
      stack.clear();
      auto push = [&](size_t i, size_t j) {
        if (!seen[i * (m + 1) + j]) {
          seen[i * (m + 1) + j] = 1;
          stack.emplace_back(i, j);
        }
      };
      push(0, 0);
      while (!stack.empty()) {
        auto [i, j] = stack.back();
        stack.pop_back();
        if (i == n && j == m)
          return true;
        if (i < n && xs[i].repeat)
          push(i + 1, j);
        if (j < m && ys[j].repeat)
          push(i, j + 1);
        if (i < n && j < m && tokens_meet(a, xs[i], b, ys[j]))
          push(xs[i].repeat ? i : i + 1, ys[j].repeat ? j : j + 1);
      }
    }
  }
  return false;
}

bool intersects(std::string_view a, std::string_view b) {
  return intersects(glob{a}, glob{b});
}

std::vector<std::string> write_roots(const std::vector<std::string>& scope) {
  std::vector<std::string> roots;
  for (const auto& entry : scope) {
    std::string base{glob{entry}.base()};
    while (!base.empty() && base.back() == '/')
      base.pop_back();
    if (!base.empty()
        && std::find(roots.begin(), roots.end(), base) == roots.end())
      roots.push_back(base);
  }
  return roots;
}

} // namespace taskforce::scope
