// The judgement of what an attempt brings: the task's scope resolved where
// it physically lies in the checkout, and every changed path (as the git
// service lists them) judged against it. Reads the checkout's folders and
// symlinks (a few lstat/readlink calls), nothing else.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace taskforce {

/// The task's scope where it lies in a checkout.
struct resolved_scope {
  /// The entries, resolved (see scope::physical_root::resolve_entry).
  std::vector<std::string> entries;
  /// Why the scope cannot be used ("files: ..."); empty when it can.
  std::string error;
};

/// Resolves `files` in the checkout at `checkout`: a symlink that merged
/// work added since the plan may lead an entry elsewhere, or out.
resolved_scope resolve_scope(const std::filesystem::path& checkout,
                             const std::vector<std::string>& files);

/// Who changed the checkout last.
enum class changed_by { worker, gate };

/// Why what an attempt brings is refused; empty when it is accepted. No
/// changed path may lead out of the repository or into `.git` or
/// `.taskforce`; with `enforce` (enforceDiffScope) and a scope, every one
/// must be covered by the scope where it physically lies.
std::string judge_changes(const std::filesystem::path& checkout,
                          const resolved_scope& scope, bool enforce,
                          const std::vector<std::string>& changed,
                          changed_by who);

} // namespace taskforce
