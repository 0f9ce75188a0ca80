#include "src/control/roots.hpp"

#include <algorithm>
#include <system_error>

#include "src/control/error.hpp"
#include "src/scope/path.hpp"
#include "src/text/join.hpp"
#include "src/text/strings.hpp"

namespace fs = std::filesystem;

namespace taskforce::control {

namespace {

scope::physical_path refused(std::string why) {
  return {"", std::move(why)};
}

// `p` relative to the folder `top`, when it lies inside it (lexically).
std::optional<fs::path> inside(const fs::path& p, const fs::path& top) {
  auto rel = p.lexically_relative(top);
  if (rel.empty() || *rel.begin() == "..")
    return std::nullopt;
  return rel;
}

} // namespace

std::vector<std::string> fold_roots(std::vector<std::string> roots) {
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  std::vector<std::string> result;
  for (auto& r : roots) {
    auto nested = std::any_of(roots.begin(), roots.end(), [&](auto& other) {
      return other != r && path_within(r, other);
    });
    if (!nested)
      result.push_back(r);
  }
  return result;
}

scope::physical_path locate(const scope::physical_root& repo,
                            std::string_view path) {
  if (path.empty())
    return refused("an empty path");
  if (path.find('\0') != std::string_view::npos)
    return refused(in_quotes(path) + " contains a NUL byte");
  fs::path spelled{std::string{path}};
  std::string rel;
  if (spelled.is_absolute()) {
    // Inside the repository as spelled, or once the symlinks of its
    // existing part are followed (a repository under /tmp -> /private/tmp).
    auto found = inside(spelled.lexically_normal(), repo.root());
    if (!found) {
      std::error_code ec;
      auto real = fs::weakly_canonical(spelled, ec);
      if (!ec)
        found = inside(real, repo.root());
    }
    if (!found)
      return refused(in_quotes(path) + " is outside the repository ("
                     + repo.root().string() + ")");
    rel = found->generic_string();
  } else {
    rel = std::string{path};
  }
  auto normal = fs::path{rel}.lexically_normal();
  if (normal.empty() || normal == "." || normal == "./")
    return refused(in_quotes(path) + " is the repository's top folder");
  auto first = normal.begin()->string();
  if (first == "..")
    return refused(in_quotes(path) + " escapes the repository");
  if (auto owned = scope::find_owned_folder(normal.generic_string());
      !owned.folder.empty())
    return refused(in_quotes(path) + " points " + owned.describe());
  auto located = repo.resolve(rel);
  if (located.error.empty() && (located.path.empty() || located.path == "."))
    return refused(in_quotes(path)
                   + " leads through a symlink to the repository's top "
                     "folder");
  if (!located.error.empty()) {
    std::error_code ec;
    if (fs::weakly_canonical(repo.root() / rel, ec) == repo.root() && !ec)
      return refused(in_quotes(path)
                     + " leads through a symlink to the repository's top "
                       "folder");
  }
  return located;
}

std::string nested_git_folder(const scope::physical_root& repo,
                              const std::string& root) {
  auto base = repo.root() / root;
  std::error_code ec;
  fs::recursive_directory_iterator it{
    base, fs::directory_options::skip_permission_denied, ec};
  for (; !ec && it != fs::recursive_directory_iterator{}; it.increment(ec)) {
    std::error_code type_ec;
    if (it->symlink_status(type_ec).type() != fs::file_type::directory)
      continue;
    auto rel
      = (fs::path{root} / it->path().lexically_relative(base)).generic_string();
    auto owned = scope::find_owned_folder(rel);
    if (!owned.folder.empty())
      return owned.folder;
  }
  return {};
}

std::string canonical_root(const scope::physical_root& repo,
                           std::string_view root) {
  auto located = locate(repo, root);
  if (!located.error.empty())
    throw control_error(control_errc::bad_request, "root " + located.error);
  if (auto nested = nested_git_folder(repo, located.path); !nested.empty())
    throw control_error(
      control_errc::bad_request,
      "root " + in_quotes(root) + " holds a nested git repository (" + nested
        + "/): writes into its git folder would go unseen; name the folders "
          "beside it as roots");
  return located.path;
}

std::vector<std::string>
canonical_roots(const scope::physical_root& repo,
                const std::vector<std::string>& roots) {
  std::vector<std::string> result;
  result.reserve(roots.size());
  for (auto& r : roots)
    result.push_back(canonical_root(repo, r));
  return fold_roots(std::move(result));
}

containment within_roots(const scope::physical_root& repo,
                         std::string_view path,
                         const std::vector<std::string>& roots) {
  containment result;
  auto located = locate(repo, path);
  if (!located.error.empty()) {
    result.reason = located.error;
    return result;
  }
  result.path = located.path;
  for (auto& r : roots)
    if (path_within(located.path, r)) {
      result.inside = true;
      result.root = r;
      return result;
    }
  auto where = in_quotes(path);
  if (located.path != path)
    where += " (" + located.path + ")";
  result.reason = roots.empty()
                    ? where + " is outside the task's roots: it has none"
                    : where + " is outside the task's roots " + join(roots);
  return result;
}

} // namespace taskforce::control
