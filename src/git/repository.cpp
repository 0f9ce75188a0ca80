#include "src/git/repository.hpp"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <sstream>
#include <system_error>

#include "src/git/handle.hpp"
#include "src/git/internal.hpp"
#include "src/text/file.hpp"

namespace fs = std::filesystem;

namespace taskforce::git {

// -- object ids ---------------------------------------------------------------

std::string to_hex(const git_oid& id) {
  char text[GIT_OID_HEXSZ + 1];
  git_oid_tostr(text, sizeof(text), &id);
  return text;
}

git_oid from_hex(const std::string& hex, const std::string& attempted) {
  git_oid id;
  if (hex.size() != GIT_OID_HEXSZ)
    throw error(attempted, "not a full commit id: '" + hex + "'");
  check(git_oid_fromstr(&id, hex.c_str()), attempted);
  return id;
}

// -- library and repository ---------------------------------------------------

library::library() {
  check(git_libgit2_init(), "initialise libgit2");
  detail::relax_object_checks();
}

library::~library() {
  git_libgit2_shutdown();
}

repository::repository(repository&& other) noexcept : raw_(other.raw_) {
  other.raw_ = nullptr;
}

repository& repository::operator=(repository&& other) noexcept {
  if (this != &other) {
    if (raw_ != nullptr)
      git_repository_free(raw_);
    raw_ = other.raw_;
    other.raw_ = nullptr;
  }
  return *this;
}

repository::~repository() {
  if (raw_ != nullptr)
    git_repository_free(raw_);
}

namespace {

fs::path without_trailing_slash(const char* p) {
  std::string s = p;
  while (s.size() > 1 && s.back() == '/')
    s.pop_back();
  return s;
}

} // namespace

fs::path repository::workdir() const {
  const char* p = git_repository_workdir(raw_);
  if (p == nullptr)
    throw error("find the working folder", "the repository is bare");
  return without_trailing_slash(p);
}

fs::path repository::git_dir() const {
  return without_trailing_slash(git_repository_path(raw_));
}

fs::path repository::common_dir() const {
  return without_trailing_slash(git_repository_commondir(raw_));
}

bool repository::is_worktree() const {
  return git_repository_is_worktree(raw_) == 1;
}

repository open(const fs::path& path) {
  git_repository* raw = nullptr;
  check(git_repository_open_ext(&raw, path.c_str(),
                                GIT_REPOSITORY_OPEN_NO_SEARCH, nullptr),
        "open repository " + path.string());
  return repository{raw};
}

repository discover(const fs::path& path) {
  git_repository* raw = nullptr;
  check(git_repository_open_ext(&raw, path.c_str(), 0, nullptr),
        "find a repository containing " + path.string());
  return repository{raw};
}

repository init(const fs::path& path, const std::string& initial_branch) {
  git_repository_init_options opts = GIT_REPOSITORY_INIT_OPTIONS_INIT;
  opts.flags = GIT_REPOSITORY_INIT_MKPATH;
  opts.initial_head = initial_branch.c_str();
  git_repository* raw = nullptr;
  check(git_repository_init_ext(&raw, path.c_str(), &opts),
        "create repository " + path.string());
  return repository{raw};
}

// -- helpers shared by the layer ----------------------------------------------

namespace detail {

commit_ptr lookup_commit(repository& repo, const std::string& hex) {
  auto what = "look up commit " + hex;
  auto id = from_hex(hex, what);
  git_commit* raw = nullptr;
  check(git_commit_lookup(&raw, repo.get(), &id), what);
  return commit_ptr{raw};
}

commit_ptr lookup_commit(repository& repo, const git_oid& id) {
  git_commit* raw = nullptr;
  check(git_commit_lookup(&raw, repo.get(), &id),
        "look up commit " + to_hex(id));
  return commit_ptr{raw};
}

tree_ptr tree_of(const git_commit* commit) {
  git_tree* raw = nullptr;
  check(git_commit_tree(&raw, commit),
        "read the tree of commit " + to_hex(*git_commit_id(commit)));
  return tree_ptr{raw};
}

signature_ptr make_signature(repository& repo, const signature& who) {
  git_signature* raw = nullptr;
  if (!who.name.empty() && !who.email.empty()) {
    check(git_signature_now(&raw, who.name.c_str(), who.email.c_str()),
          "make a signature for " + who.name);
    return signature_ptr{raw};
  }
  if (git_signature_default(&raw, repo.get()) == 0) {
    signature_ptr configured{raw};
    if (who.name.empty() && who.email.empty())
      return configured;
    auto name = who.name.empty() ? std::string{configured->name} : who.name;
    auto email = who.email.empty() ? std::string{configured->email} : who.email;
    check(git_signature_now(&raw, name.c_str(), email.c_str()),
          "make a signature for " + name);
    return signature_ptr{raw};
  }
  git_error_clear();
  auto name = who.name.empty() ? std::string{"taskforce"} : who.name;
  auto email
    = who.email.empty() ? std::string{"taskforce@localhost"} : who.email;
  check(git_signature_now(&raw, name.c_str(), email.c_str()),
        "make a signature for " + name);
  return signature_ptr{raw};
}

git_oid branch_id(repository& repo, const std::string& branch) {
  git_oid id;
  check(
    git_reference_name_to_id(&id, repo.get(), ("refs/heads/" + branch).c_str()),
    "find branch " + branch);
  return id;
}

index_ptr repository_index(repository& repo) {
  git_index* raw = nullptr;
  check(git_repository_index(&raw, repo.get()), "open the index");
  return index_ptr{raw};
}

std::vector<std::string> status_paths(repository& repo, unsigned int flags,
                                      const std::vector<std::string>& only) {
  git_status_options opts = GIT_STATUS_OPTIONS_INIT;
  opts.show = GIT_STATUS_SHOW_INDEX_AND_WORKDIR;
  opts.flags = flags;
  std::vector<char*> specs;
  if (!only.empty()) {
    for (auto& path : only)
      specs.push_back(const_cast<char*>(path.c_str()));
    opts.pathspec.strings = specs.data();
    opts.pathspec.count = specs.size();
    opts.flags |= GIT_STATUS_OPT_DISABLE_PATHSPEC_MATCH;
  }
  git_status_list* raw = nullptr;
  check(git_status_list_new(&raw, repo.get(), &opts),
        "read the status of " + repo.git_dir().string());
  status_list_ptr list{raw};
  std::vector<std::string> result;
  auto n = git_status_list_entrycount(list.get());
  for (size_t i = 0; i < n; ++i) {
    auto* entry = git_status_byindex(list.get(), i);
    if (entry->status == GIT_STATUS_CURRENT
        || (entry->status & GIT_STATUS_IGNORED) != 0)
      continue;
    for (auto* delta : {entry->head_to_index, entry->index_to_workdir}) {
      if (delta == nullptr)
        continue;
      if (delta->old_file.path != nullptr)
        result.emplace_back(delta->old_file.path);
      if (delta->new_file.path != nullptr)
        result.emplace_back(delta->new_file.path);
    }
  }
  sort_unique(result);
  return result;
}

void relax_object_checks() {
  static std::once_flag once;
  std::call_once(once, [] {
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, 0);
  });
}

void sort_unique(std::vector<std::string>& xs) {
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
}

} // namespace detail

// -- questions ----------------------------------------------------------------

std::string head_branch(repository& repo) {
  git_reference* raw = nullptr;
  check(git_reference_lookup(&raw, repo.get(), "HEAD"), "read HEAD");
  reference_ptr head{raw};
  if (git_reference_type(head.get()) != GIT_REFERENCE_SYMBOLIC)
    throw error("find the branch of HEAD", "HEAD is detached");
  std::string target = git_reference_symbolic_target(head.get());
  const std::string prefix = "refs/heads/";
  if (target.compare(0, prefix.size(), prefix) != 0)
    throw error("find the branch of HEAD",
                "HEAD points to " + target + ", not a local branch");
  return target.substr(prefix.size());
}

std::optional<std::string> head_commit(repository& repo) {
  git_oid id;
  int rc = git_reference_name_to_id(&id, repo.get(), "HEAD");
  if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH) {
    git_error_clear();
    return std::nullopt;
  }
  check(rc, "read HEAD");
  return to_hex(id);
}

head_info head_of(repository& repo) {
  head_info info;
  git_reference* raw = nullptr;
  check(git_reference_lookup(&raw, repo.get(), "HEAD"), "read HEAD");
  reference_ptr head{raw};
  if (git_reference_type(head.get()) != GIT_REFERENCE_SYMBOLIC) {
    if (auto* id = git_reference_target(head.get()))
      info.commit = to_hex(*id);
    return info;
  }
  info.ref = git_reference_symbolic_target(head.get());
  // The branch HEAD names, from the reference read above (HEAD is read
  // once): no commit while it is unborn.
  git_reference* resolved = nullptr;
  int rc = git_reference_resolve(&resolved, head.get());
  if (rc == GIT_ENOTFOUND || rc == GIT_EUNBORNBRANCH) {
    git_error_clear();
    return info;
  }
  check(rc, "read HEAD");
  reference_ptr branch{resolved};
  if (auto* id = git_reference_target(branch.get()))
    info.commit = to_hex(*id);
  return info;
}

void point_head(repository& repo, const std::string& ref,
                const std::string& commit) {
  if (!ref.empty()) {
    check(git_repository_set_head(repo.get(), ref.c_str()),
          "point HEAD at " + ref);
    return;
  }
  auto what = "detach HEAD at " + commit;
  auto id = from_hex(commit, what);
  check(git_repository_set_head_detached(repo.get(), &id), what);
}

std::optional<std::string> branch_tip(repository& repo,
                                      const std::string& branch) {
  git_oid id;
  int rc = git_reference_name_to_id(&id, repo.get(),
                                    ("refs/heads/" + branch).c_str());
  if (rc == GIT_ENOTFOUND) {
    git_error_clear();
    return std::nullopt;
  }
  check(rc, "find branch " + branch);
  return to_hex(id);
}

std::string resolve(repository& repo, const std::string& revision) {
  auto what = "resolve revision '" + revision + "'";
  git_object* raw = nullptr;
  check(git_revparse_single(&raw, repo.get(), revision.c_str()), what);
  object_ptr obj{raw};
  git_object* peeled = nullptr;
  check(git_object_peel(&peeled, obj.get(), GIT_OBJECT_COMMIT), what);
  object_ptr commit{peeled};
  return to_hex(*git_object_id(commit.get()));
}

bool is_ancestor(repository& repo, const std::string& commit,
                 const std::string& of) {
  auto what = "check whether " + commit + " is merged into " + of;
  auto a = from_hex(commit, what);
  auto b = from_hex(of, what);
  if (git_oid_equal(&a, &b))
    return true;
  return check(git_graph_descendant_of(repo.get(), &b, &a), what) == 1;
}

std::optional<std::string> merge_base(repository& repo, const std::string& a,
                                      const std::string& b) {
  auto what = "find the merge base of " + a + " and " + b;
  auto x = from_hex(a, what);
  auto y = from_hex(b, what);
  git_oid out;
  int rc = git_merge_base(&out, repo.get(), &x, &y);
  if (rc == GIT_ENOTFOUND) {
    git_error_clear();
    return std::nullopt;
  }
  check(rc, what);
  return to_hex(out);
}

std::vector<std::string> paths_between(repository& repo,
                                       const std::string& from,
                                       const std::string& to) {
  if (from == to)
    return {};
  auto a = detail::lookup_commit(repo, from);
  auto b = detail::lookup_commit(repo, to);
  auto ta = detail::tree_of(a.get());
  auto tb = detail::tree_of(b.get());
  git_diff_options opts = GIT_DIFF_OPTIONS_INIT;
  git_diff* raw = nullptr;
  check(git_diff_tree_to_tree(&raw, repo.get(), ta.get(), tb.get(), &opts),
        "compare " + from + " with " + to);
  diff_ptr diff{raw};
  std::vector<std::string> paths;
  auto n = git_diff_num_deltas(diff.get());
  for (size_t i = 0; i < n; ++i) {
    auto* delta = git_diff_get_delta(diff.get(), i);
    paths.emplace_back(delta->old_file.path);
    paths.emplace_back(delta->new_file.path);
  }
  detail::sort_unique(paths);
  return paths;
}

std::string pin_commit(repository& repo, const std::string& name,
                       const std::string& commit) {
  auto what = "keep commit " + commit + " as " + name;
  auto id = from_hex(commit, what);
  for (int n = 1;; ++n) {
    auto ref = n == 1 ? name : name + "-" + std::to_string(n);
    git_oid existing;
    int rc = git_reference_name_to_id(&existing, repo.get(), ref.c_str());
    if (rc == 0 && git_oid_equal(&existing, &id))
      return ref;
    if (rc == 0)
      continue;
    git_error_clear();
    git_reference* raw = nullptr;
    check(git_reference_create(&raw, repo.get(), ref.c_str(), &id, 0,
                               "taskforce: kept"),
          what);
    reference_ptr guard{raw};
    return ref;
  }
}

std::vector<std::string> dirty_tracked_paths(repository& repo) {
  // No untracked or ignored entries: only tracked content counts here.
  return detail::status_paths(repo, 0);
}

// -- housekeeping -------------------------------------------------------------

bool ensure_excluded(repository& repo, const std::string& pattern) {
  auto file = repo.common_dir() / "info" / "exclude";
  auto text = read_file(file).value_or("");
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    if (line == pattern)
      return false;
  }
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::app);
  if (!text.empty() && text.back() != '\n')
    out << '\n';
  out << pattern << '\n';
  out.flush();
  if (!out)
    throw error("add '" + pattern + "' to " + file.string(),
                "cannot write the file");
  return true;
}

namespace {

bool is_lock_file(const fs::path& p) {
  return p.extension() == ".lock";
}

void remove_locks_in(const fs::path& dir, bool recursive,
                     std::vector<fs::path>& removed) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return;
  auto consider = [&](const fs::directory_entry& entry) {
    std::error_code ec2;
    if (entry.is_regular_file(ec2) && is_lock_file(entry.path())
        && fs::remove(entry.path(), ec2))
      removed.push_back(entry.path());
  };
  if (recursive) {
    for (auto& entry : fs::recursive_directory_iterator(dir, ec))
      consider(entry);
  } else {
    for (auto& entry : fs::directory_iterator(dir, ec))
      consider(entry);
  }
}

} // namespace

std::vector<fs::path> clear_stale_locks(repository& repo) {
  std::vector<fs::path> removed;
  auto common = repo.common_dir();
  // Top-level: index.lock, HEAD.lock, config.lock, packed-refs.lock, ...
  remove_locks_in(common, false, removed);
  remove_locks_in(common / "refs", true, removed);
  remove_locks_in(common / "logs", true, removed);
  std::error_code ec;
  for (auto& entry : fs::directory_iterator(common / "worktrees", ec))
    if (entry.is_directory(ec)) {
      remove_locks_in(entry.path(), false, removed);
      remove_locks_in(entry.path() / "logs", true, removed);
    }
  std::sort(removed.begin(), removed.end());
  return removed;
}

// -- branches -----------------------------------------------------------------

std::vector<branch_info> list_branches(repository& repo,
                                       const std::string& prefix) {
  git_branch_iterator* raw = nullptr;
  check(git_branch_iterator_new(&raw, repo.get(), GIT_BRANCH_LOCAL),
        "list branches");
  branch_iterator_ptr it{raw};
  std::vector<branch_info> result;
  for (;;) {
    git_reference* ref_raw = nullptr;
    git_branch_t type;
    int rc = git_branch_next(&ref_raw, &type, it.get());
    if (rc == GIT_ITEROVER) {
      git_error_clear();
      break;
    }
    check(rc, "list branches");
    reference_ptr ref{ref_raw};
    const char* name = nullptr;
    check(git_branch_name(&name, ref.get()), "list branches");
    std::string short_name = name;
    if (short_name.compare(0, prefix.size(), prefix) != 0)
      continue;
    const git_oid* target = git_reference_target(ref.get());
    result.push_back({short_name, target ? to_hex(*target) : std::string{}});
  }
  std::sort(result.begin(), result.end(), [](auto& x, auto& y) {
    return x.name < y.name;
  });
  return result;
}

void move_branch(repository& repo, const std::string& branch,
                 const std::string& from, const std::string& to) {
  auto what = "point branch " + branch + " back at " + to;
  auto id = from_hex(to, what);
  auto name = "refs/heads/" + branch;
  git_reference* raw = nullptr;
  if (from.empty()) {
    check(git_reference_create(&raw, repo.get(), name.c_str(), &id, 0,
                               "taskforce: restored"),
          what);
  } else {
    auto old = from_hex(from, what);
    check(git_reference_create_matching(&raw, repo.get(), name.c_str(), &id, 1,
                                        &old, "taskforce: restored"),
          what);
  }
  reference_ptr guard{raw};
}

bool delete_branch(repository& repo, const std::string& branch) {
  git_reference* raw = nullptr;
  int rc
    = git_branch_lookup(&raw, repo.get(), branch.c_str(), GIT_BRANCH_LOCAL);
  if (rc == GIT_ENOTFOUND) {
    git_error_clear();
    return false;
  }
  check(rc, "delete branch " + branch);
  reference_ptr ref{raw};
  check(git_branch_delete(ref.get()), "delete branch " + branch);
  return true;
}

} // namespace taskforce::git
