#include "src/scope/physical.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <deque>
#include <stdexcept>
#include <vector>

#include "src/scope/glob.hpp"
#include "src/scope/path.hpp"
#include "src/text/strings.hpp"

namespace fs = std::filesystem;

namespace taskforce::scope {

namespace {

// Linux gives up after 40 symlinks on one path; so do we.
constexpr int max_hops = 40;

std::vector<std::string> parts_of(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string_view::npos)
      end = path.size();
    if (end > start)
      parts.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// The text of the symlink at `link`; nothing when it cannot be read.
bool read_link(const fs::path& link, std::string& target) {
  std::vector<char> buffer(256);
  for (;;) {
    auto n = ::readlink(link.c_str(), buffer.data(), buffer.size());
    if (n < 0)
      return false;
    if (static_cast<size_t>(n) < buffer.size()) {
      target.assign(buffer.data(), static_cast<size_t>(n));
      return true;
    }
    buffer.resize(buffer.size() * 2);
  }
}

} // namespace

physical_root::physical_root(const fs::path& root)
  : root_(fs::canonical(root)) {}

fs::path physical_root::follow(std::string_view rel, bool last_too,
                               std::string& error) const {
  auto first = parts_of(rel);
  std::deque<std::string> todo(first.begin(), first.end());
  fs::path cur = root_;
  int hops = 0;
  bool missing = false;
  while (!todo.empty()) {
    auto part = std::move(todo.front());
    todo.pop_front();
    if (part == ".")
      continue;
    if (part == "..") {
      // Physical: `..` leaves the folder a symlink led to.
      cur = cur.parent_path();
      continue;
    }
    auto next = cur / part;
    if (missing || (todo.empty() && !last_too)) {
      cur = std::move(next);
      continue;
    }
    struct stat st {};
    if (::lstat(next.c_str(), &st) != 0) {
      missing = true; // what follows is taken as written
      cur = std::move(next);
      continue;
    }
    if (!S_ISLNK(st.st_mode)) {
      cur = std::move(next);
      continue;
    }
    std::string target;
    if (++hops > max_hops || !read_link(next, target)) {
      error = hops > max_hops ? "leads through a symlink loop"
                              : "leads through a symlink that cannot be read";
      return {};
    }
    auto inner = parts_of(target);
    todo.insert(todo.begin(), inner.begin(), inner.end());
    if (!target.empty() && target.front() == '/')
      cur = "/";
  }
  return cur;
}

physical_path physical_root::judge(std::string_view spelled,
                                   const fs::path& abs) const {
  auto rel = abs.lexically_relative(root_);
  if (rel.empty() || *rel.begin() == "..")
    return {"", in_quotes(spelled) + " leads through a symlink to "
                  + abs.string() + ", outside the repository"};
  if (rel == ".")
    return {"", in_quotes(spelled)
                  + " leads through a symlink to the repository's top "
                    "folder; write ** to claim everything"};
  auto where = rel.generic_string();
  if (auto owned = find_owned_folder(where); !owned.folder.empty()) {
    auto as_written
      = fs::path{std::string{spelled}}.lexically_normal().generic_string();
    if (as_written == where)
      return {"", in_quotes(spelled) + " points " + owned.describe()};
    return {"", in_quotes(spelled) + " leads through a symlink "
                  + owned.describe() + " (" + where + ")"};
  }
  return {where, ""};
}

physical_path physical_root::resolve(std::string_view path) const {
  std::string error;
  auto abs = follow(path, true, error);
  if (!error.empty())
    return {"", in_quotes(path) + " " + error};
  return judge(path, abs);
}

physical_path physical_root::resolve_entry(std::string_view entry) const {
  std::string_view base = entry;
  bool literal = true;
  try {
    glob g{entry};
    literal = g.is_literal();
    base = entry.substr(0, g.base().size());
  } catch (const std::invalid_argument&) {
    return {std::string{entry}, ""}; // not ours to judge: validation says
  }
  if (literal)
    return resolve(entry);
  if (base.empty())
    return {std::string{entry}, ""};
  auto rest = entry.substr(base.size()); // "/..." after the literal folders
  std::string error;
  auto abs = follow(base, true, error);
  if (!error.empty())
    return {"", in_quotes(entry) + " " + error};
  if (abs == root_) {
    if (rest.size() <= 1)
      return {"", in_quotes(entry)
                    + " leads through a symlink to the repository's top "
                      "folder; write ** to claim everything"};
    return {std::string{rest.substr(1)}, ""};
  }
  auto judged = judge(entry, abs);
  if (!judged.error.empty())
    return judged;
  return {judged.path + std::string{rest}, ""};
}

physical_path physical_root::locate_changed(std::string_view path) const {
  auto spelled = root_ / fs::path{std::string{path}};
  struct stat st {};
  if (::lstat(spelled.c_str(), &st) != 0)
    return {std::string{path}, ""}; // deleted: judged as spelled
  std::string error;
  auto abs = follow(path, false, error);
  if (!error.empty())
    return {"", in_quotes(path) + " " + error};
  auto where = judge(path, abs);
  if (!where.error.empty() || !S_ISLNK(st.st_mode))
    return where;
  auto target = follow(path, true, error);
  if (!error.empty())
    return where; // a loop writes nowhere
  auto rel = target.lexically_relative(root_);
  std::string text;
  read_link(spelled, text);
  if (rel.empty() || *rel.begin() == "..")
    return {"", in_quotes(path) + " is a symlink to " + text
                  + ", outside the repository"};
  auto owned
    = rel == "." ? owned_folder{} : find_owned_folder(rel.generic_string());
  if (!owned.folder.empty())
    return {"", in_quotes(path) + " is a symlink to " + text + ", "
                  + owned.describe()};
  return where;
}

} // namespace taskforce::scope
