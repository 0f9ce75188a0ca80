#include "src/scope/lease.hpp"

#include <stdexcept>

#include "src/scope/glob.hpp"

namespace taskforce::scope {

namespace {

constexpr std::string_view run_prefix = "run/";

// Whether some path the glob `g` matches lies at or below root `r`.
bool glob_meets_root(std::string_view g, std::string_view r) {
  try {
    glob pattern{g};
    if (is_glob(r)) {
      // No escapes in the glob syntax: compare by the literal folders.
      std::string base{pattern.base()};
      return base.empty() || roots_conflict(base, r);
    }
    std::string root{r};
    return pattern.matches(root) || intersects(pattern, glob{root + "/**"});
  } catch (const std::invalid_argument&) {
    return true; // what cannot be compiled is taken to overlap
  }
}

bool globs_meet(std::string_view a, std::string_view b) {
  try {
    return intersects(a, b);
  } catch (const std::invalid_argument&) {
    return true;
  }
}

std::string word(lease_kind kind, const std::string& name) {
  return std::string{to_string(kind)} + " " + name;
}

} // namespace

const char* to_string(lease_kind x) {
  switch (x) {
    case lease_kind::root: return "root";
    case lease_kind::glob: return "glob";
    case lease_kind::lock: return "lock";
  }
  return "root";
}

bool from_string(std::string_view text, lease_kind& x) {
  for (auto k : {lease_kind::root, lease_kind::glob, lease_kind::lock})
    if (text == to_string(k)) {
      x = k;
      return true;
    }
  return false;
}

bool path_within(std::string_view path, std::string_view root) {
  if (path.size() < root.size() || path.compare(0, root.size(), root) != 0)
    return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

bool roots_conflict(std::string_view a, std::string_view b) {
  return path_within(a, b) || path_within(b, a);
}

bool overlaps(const claim& a, const claim& b) {
  if (a.kind == lease_kind::lock || b.kind == lease_kind::lock)
    return a.kind == b.kind && a.name == b.name;
  if (a.kind == lease_kind::root && b.kind == lease_kind::root)
    return roots_conflict(a.name, b.name);
  if (a.kind == lease_kind::glob && b.kind == lease_kind::glob)
    return globs_meet(a.name, b.name);
  auto& g = a.kind == lease_kind::glob ? a : b;
  auto& r = a.kind == lease_kind::glob ? b : a;
  return glob_meets_root(g.name, r.name);
}

std::vector<claim> task_claims(const std::vector<std::string>& files,
                               const std::vector<std::string>& locks) {
  std::vector<claim> result;
  if (files.empty())
    result.push_back({lease_kind::glob, "**"});
  for (auto& f : files) {
    if (!f.empty() && f.back() == '/' && !is_glob(f.substr(0, f.size() - 1)))
      result.push_back({lease_kind::root, f.substr(0, f.size() - 1)});
    else if (is_glob(f))
      result.push_back({lease_kind::glob, f});
    else
      result.push_back({lease_kind::root, f});
  }
  for (auto& l : locks)
    result.push_back({lease_kind::lock, l});
  return result;
}

std::vector<claim> root_claims(const std::vector<std::string>& roots,
                               const std::vector<std::string>& locks) {
  std::vector<claim> result;
  for (auto& r : roots)
    result.push_back({lease_kind::root, r});
  for (auto& l : locks)
    result.push_back({lease_kind::lock, l});
  return result;
}

std::string run_task_holder(const std::string& run_id,
                            const std::string& task_id) {
  return std::string{run_prefix} + run_id + "/" + task_id;
}

std::optional<std::pair<std::string, std::string>>
run_task_of(std::string_view holder) {
  if (holder.substr(0, run_prefix.size()) != run_prefix)
    return std::nullopt;
  auto rest = holder.substr(run_prefix.size());
  auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size())
    return std::nullopt;
  return std::make_pair(std::string{rest.substr(0, slash)},
                        std::string{rest.substr(slash + 1)});
}

std::string describe_holder(std::string_view holder) {
  if (auto run = run_task_of(holder))
    return "task " + run->second + " of run " + run->first;
  return "managed task " + std::string{holder};
}

std::string lease_conflict::describe() const {
  // A managed task is named by its id alone, as the bg protocol always did.
  auto who = run_task_of(holder) ? describe_holder(holder) : holder;
  if (kind == wanted_kind && held == wanted)
    return word(kind, wanted) + " is held by " + who;
  return word(wanted_kind, wanted) + " overlaps " + word(kind, held) + " of "
         + who;
}

std::string lease_conflict::waits_for() const {
  auto what = kind == lease_kind::root ? held : word(kind, held);
  return "waits for " + describe_holder(holder) + " (" + what + ")";
}

std::optional<lease_conflict> find_conflict(const std::string& self,
                                            const std::vector<claim>& wanted,
                                            const std::vector<lease>& held) {
  for (auto& l : held) {
    if (l.holder == self)
      continue;
    claim theirs{l.kind, l.name};
    for (auto& w : wanted)
      if (overlaps(w, theirs))
        return lease_conflict{l.holder, l.kind, l.name, w.name, w.kind};
  }
  return std::nullopt;
}

std::optional<lease_conflict>
find_conflict(const std::string& self, const std::vector<std::string>& roots,
              const std::vector<std::string>& locks,
              const std::vector<lease>& held) {
  return find_conflict(self, root_claims(roots, locks), held);
}

} // namespace taskforce::scope
