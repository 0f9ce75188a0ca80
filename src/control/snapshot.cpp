#include "src/control/snapshot.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>

#include "src/store/ledger.hpp"
#include "src/text/file.hpp"

namespace fs = std::filesystem;

namespace taskforce::control {

namespace {

// A file's content hash could not be read: the fingerprint then compares
// by size and modification time alone.
constexpr const char* unreadable = "?";

std::string link_fingerprint(const fs::path& p) {
  std::error_code ec;
  auto target = fs::read_symlink(p, ec);
  return "link:" + (ec ? std::string{unreadable} : target.string());
}

std::string file_fingerprint(const fs::path& p, const struct stat& st) {
  auto mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000
                  + st.st_mtim.tv_nsec;
  auto bytes = read_file(p);
  return std::to_string(st.st_size) + ":" + std::to_string(mtime_ns) + ":"
         + (bytes ? store::content_hash(*bytes) : std::string{unreadable});
}

// Records `p` (repository-relative `rel`) when it is a file or a symlink;
// true when it is a folder to walk.
bool record(snapshot& out, const fs::path& p, const std::string& rel) {
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0)
    return false;
  if (S_ISLNK(st.st_mode))
    out[rel] = link_fingerprint(p);
  else if (S_ISREG(st.st_mode))
    out[rel] = file_fingerprint(p, st);
  return S_ISDIR(st.st_mode);
}

void walk(snapshot& out, const fs::path& top, const std::string& root) {
  auto base = top / root;
  std::error_code ec;
  fs::recursive_directory_iterator it{
    base, fs::directory_options::skip_permission_denied, ec};
  for (; !ec && it != fs::recursive_directory_iterator{}; it.increment(ec)) {
    auto& p = it->path();
    auto rel = root + "/" + p.lexically_relative(base).generic_string();
    // Nothing is skipped: a root never lies in taskforce's or git's own
    // folders, so a `.git` below one is a nested repository's, and a
    // write into it must be seen.
    record(out, p, rel);
  }
}

// "size:mtime:hash" → {size, hash}; a link's text stays whole.
std::pair<std::string, std::string> content_of(const std::string& f) {
  if (f.rfind("link:", 0) == 0)
    return {f, ""};
  auto first = f.find(':');
  auto last = f.rfind(':');
  if (first == std::string::npos || first == last)
    return {f, ""};
  return {f.substr(0, first), f.substr(last + 1)};
}

} // namespace

snapshot take_snapshot(const fs::path& repo_top,
                       const std::vector<std::string>& roots) {
  snapshot out;
  for (auto& root : roots) {
    auto p = repo_top / root;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) {
      out[root] = absent_fingerprint;
      continue;
    }
    if (record(out, p, root))
      walk(out, repo_top, root);
  }
  return out;
}

bool same_content(const std::string& a, const std::string& b) {
  if (a == b)
    return true;
  auto [size_a, hash_a] = content_of(a);
  auto [size_b, hash_b] = content_of(b);
  if (hash_a == unreadable || hash_b == unreadable || hash_a.empty()
      || hash_b.empty())
    return false;
  return size_a == size_b && hash_a == hash_b;
}

std::vector<std::string> tree_diff::all() const {
  std::vector<std::string> result;
  result.insert(result.end(), added.begin(), added.end());
  result.insert(result.end(), modified.begin(), modified.end());
  result.insert(result.end(), deleted.begin(), deleted.end());
  std::sort(result.begin(), result.end());
  return result;
}

tree_diff compare(const snapshot& before, const snapshot& after) {
  auto present = [](const snapshot& s, const std::string& path) {
    auto i = s.find(path);
    return i != s.end() && i->second != absent_fingerprint ? &i->second
                                                           : nullptr;
  };
  tree_diff diff;
  for (auto& [path, _] : before) {
    auto a = present(before, path);
    auto b = present(after, path);
    if (a && !b)
      diff.deleted.push_back(path);
    else if (a && b && !same_content(*a, *b))
      diff.modified.push_back(path);
  }
  for (auto& [path, _] : after)
    if (present(after, path) && !present(before, path))
      diff.added.push_back(path);
  return diff;
}

} // namespace taskforce::control
