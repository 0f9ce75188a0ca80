// Shared setup of the libgit2 layer's suites: a temporary main repository
// with a first commit, and the git CLI (through posix_spawn) to set up
// situations and to check results the way a user would.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/git/git.hpp"
#include "test.hpp"

extern char** environ;

namespace taskforce::test {

/// The exit status and the combined output of a finished command.
struct command_result {
  int status = -1;
  std::string output;
};

/// Runs `git -C dir args...` with posix_spawnp, capturing stdout and stderr,
/// with a fixed identity and no user configuration.
inline command_result run_git(const std::filesystem::path& dir,
                              const std::vector<std::string>& args) {
  std::vector<std::string> argv_s{"git", "-C", dir.string()};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s{"GIT_AUTHOR_NAME=Test",
                                 "GIT_AUTHOR_EMAIL=test@example.com",
                                 "GIT_COMMITTER_NAME=Test",
                                 "GIT_COMMITTER_EMAIL=test@example.com",
                                 "GIT_CONFIG_NOSYSTEM=1",
                                 "GIT_CONFIG_GLOBAL=/dev/null",
                                 "LC_ALL=C"};
  for (char** e = environ; *e != nullptr; ++e) {
    std::string x = *e;
    if (x.rfind("GIT_", 0) != 0 && x.rfind("LC_ALL=", 0) != 0)
      env_s.push_back(x);
  }
  std::vector<char*> envp;
  for (auto& e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int rc
    = posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::runtime_error("cannot start git");
  }
  command_result result;
  char chunk[4096];
  for (;;) {
    auto n = ::read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    result.output.append(chunk, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

/// Like run_git, but throws with the output when git fails.
inline std::string git_ok(const std::filesystem::path& dir,
                          const std::vector<std::string>& args) {
  auto r = run_git(dir, args);
  if (r.status != 0) {
    std::string cmd = "git";
    for (auto& a : args)
      cmd += " " + a;
    throw std::runtime_error(cmd + " failed: " + r.output);
  }
  return r.output;
}

/// The tip of `branch` by value (never a reference into a temporary, which
/// the check macros would keep past its life); "" when missing.
inline std::string tip_of(git::repository& repo, const std::string& branch) {
  return git::branch_tip(repo, branch).value_or("");
}

/// The output's lines without the trailing newline.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> result;
  std::string line;
  for (char c : text) {
    if (c == '\n') {
      result.push_back(line);
      line.clear();
    } else {
      line += c;
    }
  }
  if (!line.empty())
    result.push_back(line);
  return result;
}

/// A main repository on branch `main` with a first commit of three files,
/// `.taskforce/` excluded, and worktrees going to `.taskforce/worktrees/`.
struct git_fixture {
  temp_dir dir;
  std::filesystem::path root = dir.path() / "project";
  git::repository repo = make();
  git::signature who{"Test", "test@example.com"};

  git::repository make() {
    auto r = git::init(root, "main");
    dir.write("project/README.md", "# project\n");
    dir.write("project/src/a.txt", "a1\na2\na3\n");
    dir.write("project/src/b.txt", "b1\nb2\nb3\n");
    git::ensure_excluded(r, ".taskforce/");
    git::commit_all(r, "first", {"Test", "test@example.com"});
    return r;
  }

  /// The folder a task's worktree lives in.
  std::filesystem::path wt_path(const std::string& task) const {
    return root / ".taskforce" / "worktrees" / "r1" / task;
  }

  /// Writes a file inside the main checkout or a worktree.
  static void write(const std::filesystem::path& base,
                    const std::string& relative, const std::string& text) {
    auto file = base / relative;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
  }

  /// Creates task `task`'s worktree at main's tip, writes `files` there and
  /// commits; returns the branch name.
  std::string
  task_commit(const std::string& task,
              const std::vector<std::pair<std::string, std::string>>& files) {
    auto branch = "taskforce/r1/" + task;
    auto base = *git::branch_tip(repo, "main");
    auto info = git::create_worktree(repo, wt_path(task), branch, base);
    for (auto& [path, text] : files)
      write(info.path, path, text);
    auto wt = git::open(info.path);
    git::commit_all(wt, "task " + task, who);
    return branch;
  }

  /// `git fsck --strict` passes with no error line.
  bool fsck_clean() {
    auto r = run_git(root, {"fsck", "--strict", "--no-progress"});
    if (r.status != 0 || r.output.find("error") != std::string::npos
        || r.output.find("missing") != std::string::npos) {
      fsck_output = r.output;
      return false;
    }
    return true;
  }

  /// `git status --porcelain` of the main checkout.
  std::string porcelain() {
    return git_ok(root, {"status", "--porcelain"});
  }

  /// The last fsck's output when it failed.
  std::string fsck_output;
};

} // namespace taskforce::test
