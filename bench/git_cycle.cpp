// The git cycle of one task (worktree, commit, merge, cleanup) in a
// generated repository, three ways: libgit2 with a fresh worktree per task,
// libgit2 reusing one merged worktree, and the git CLI (`git worktree add`,
// commit, `git merge --no-ff`, `git worktree remove`). Ends with one line
// `bench git_cycle: key=value ...`.
//
// usage: bench_git_cycle [files=2000] [cycles=20] [file_bytes=10000]

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "src/git/git.hpp"

extern char** environ;

namespace fs = std::filesystem;
using namespace taskforce;

namespace {

using clock_type = std::chrono::steady_clock;

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start)
    .count();
}

// Runs git with posix_spawnp, output discarded; throws on failure.
void git_cli(const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-C", dir.string()});
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid;
  int rc = posix_spawnp(&pid, "git", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw std::runtime_error("cannot start git");
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string cmd;
    for (auto& a : args)
      cmd += a + " ";
    throw std::runtime_error("failed: " + cmd);
  }
}

void write_file(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << text;
}

// Deterministic text, different per file, so packs and hashes do real work.
std::string content(size_t index, size_t bytes) {
  std::string text;
  text.reserve(bytes + 64);
  uint64_t x = 0x9e3779b97f4a7c15ull * (index + 1);
  while (text.size() < bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    text += "line " + std::to_string(x % 1000003) + " of file "
            + std::to_string(index) + "\n";
  }
  return text;
}

std::string file_name(size_t i) {
  return "src/d" + std::to_string(i % 40) + "/f" + std::to_string(i) + ".txt";
}

git::repository generate(const fs::path& root, size_t files, size_t bytes) {
  auto repo = git::init(root, "main");
  for (size_t i = 0; i < files; ++i)
    write_file(root / file_name(i), content(i, bytes));
  git::ensure_excluded(repo, ".taskforce/");
  git::commit_all(repo, "generated", {"bench", "bench@localhost"});
  return repo;
}

struct timing {
  double total_ms = 0;
  double worktree_ms = 0;
  double commit_ms = 0;
  double merge_ms = 0;
  double cleanup_ms = 0;
};

const git::signature who{"bench", "bench@localhost"};

// The task's edit: append a line to the file the task owns.
void edit(const fs::path& worktree, size_t task) {
  std::ofstream out(worktree / file_name(task * 7 % 2000),
                    std::ios::binary | std::ios::app);
  out << "task " << task << " was here\n";
}

void fresh_cycle(git::repository& repo, const fs::path& root, size_t i,
                 timing& t) {
  {
    auto task = "t" + std::to_string(i);
    auto branch = "taskforce/fresh/" + task;
    auto path = root / ".taskforce/worktrees/fresh" / task;
    auto start = clock_type::now();
    auto step = start;
    auto info = git::create_worktree(repo, path, branch,
                                     *git::branch_tip(repo, "main"));
    t.worktree_ms += ms_since(step);
    step = clock_type::now();
    edit(path, i);
    auto wt = git::open(path);
    git::commit_all(wt, "task " + task, who);
    t.commit_ms += ms_since(step);
    step = clock_type::now();
    auto m = git::merge_into_base(repo, branch, "main", "Merge " + task, who);
    if (m.status != git::merge_result::outcome::merged)
      throw std::runtime_error("merge failed");
    t.merge_ms += ms_since(step);
    step = clock_type::now();
    git::remove_worktree(repo, info.name);
    git::delete_branch(repo, branch);
    t.cleanup_ms += ms_since(step);
    t.total_ms += ms_since(start);
  }
}

void reused_cycle(git::repository& repo, const fs::path& root, size_t i,
                  timing& t) {
  auto path = root / ".taskforce/worktrees/reused/slot0";
  {
    auto task = "t" + std::to_string(i);
    auto branch = "taskforce/reused/" + task;
    auto base = *git::branch_tip(repo, "main");
    auto start = clock_type::now();
    auto step = start;
    if (i == 0) {
      git::create_worktree(repo, path, branch, base);
    } else {
      auto r = git::reuse_worktree(repo, path, branch, base);
      if (r.status != git::reuse_result::outcome::reused)
        throw std::runtime_error("reuse refused");
      git::delete_branch(repo, r.previous_branch);
    }
    t.worktree_ms += ms_since(step);
    step = clock_type::now();
    edit(path, i);
    auto wt = git::open(path);
    git::commit_all(wt, "task " + task, who);
    t.commit_ms += ms_since(step);
    step = clock_type::now();
    auto m = git::merge_into_base(repo, branch, "main", "Merge " + task, who);
    if (m.status != git::merge_result::outcome::merged)
      throw std::runtime_error("merge failed");
    t.merge_ms += ms_since(step);
    t.total_ms += ms_since(start);
  }
}

// The last task's cleanup belongs to the run: the worktree leaves its path
// at once (deferred deletion) and the trash is emptied off the task path,
// timed apart in `trash_ms`.
double reused_finish(git::repository& repo, const fs::path& root, size_t last,
                     timing& t) {
  auto path = root / ".taskforce/worktrees/reused/slot0";
  auto start = clock_type::now();
  git::remove_worktree(repo, path.string(), false, true);
  git::delete_branch(repo, "taskforce/reused/t" + std::to_string(last));
  t.cleanup_ms += ms_since(start);
  t.total_ms += ms_since(start);
  start = clock_type::now();
  git::empty_trash(repo);
  return ms_since(start);
}

void cli_cycle(const fs::path& root, size_t i, timing& t) {
  {
    auto task = "t" + std::to_string(i);
    auto branch = "taskforce/cli/" + task;
    auto path = root / ".taskforce/worktrees/cli" / task;
    auto start = clock_type::now();
    auto step = start;
    git_cli(root,
            {"worktree", "add", "-q", "-b", branch, path.string(), "main"});
    t.worktree_ms += ms_since(step);
    step = clock_type::now();
    edit(path, i);
    git_cli(path, {"add", "-A"});
    git_cli(path, {"commit", "-q", "-m", "task " + task});
    t.commit_ms += ms_since(step);
    step = clock_type::now();
    git_cli(root, {"merge", "-q", "--no-ff", "-m", "Merge " + task, branch});
    t.merge_ms += ms_since(step);
    step = clock_type::now();
    git_cli(root, {"worktree", "remove", path.string()});
    git_cli(root, {"branch", "-q", "-d", branch});
    t.cleanup_ms += ms_since(step);
    t.total_ms += ms_since(start);
  }
}

void report(const char* name, const timing& t, size_t cycles) {
  auto n = static_cast<double>(cycles);
  std::printf("%-8s per cycle %8.1f ms  (worktree %7.1f, commit %6.1f, "
              "merge %6.1f, cleanup %6.1f)\n",
              name, t.total_ms / n, t.worktree_ms / n, t.commit_ms / n,
              t.merge_ms / n, t.cleanup_ms / n);
}

size_t arg(int argc, char** argv, const std::string& key, size_t fallback) {
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind(key + "=", 0) == 0)
      return std::stoul(a.substr(key.size() + 1));
  }
  return fallback;
}

} // namespace

int main(int argc, char** argv) {
  git::library lib;
  auto files = arg(argc, argv, "files", 2000);
  auto cycles = arg(argc, argv, "cycles", 20);
  auto bytes = arg(argc, argv, "file_bytes", 10000);
  ::setenv("GIT_AUTHOR_NAME", "bench", 1);
  ::setenv("GIT_AUTHOR_EMAIL", "bench@localhost", 1);
  ::setenv("GIT_COMMITTER_NAME", "bench", 1);
  ::setenv("GIT_COMMITTER_EMAIL", "bench@localhost", 1);
  std::string pattern = (fs::temp_directory_path() / "git-cycle-XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr)
    return 1;
  fs::path dir = pattern;
  try {
    std::printf("generating 3 repositories of %zu files of %zu bytes...\n",
                files, bytes);
    auto fresh_repo = generate(dir / "fresh", files, bytes);
    auto reused_repo = generate(dir / "reused", files, bytes);
    generate(dir / "cli", files, bytes);
    // Interleaved, so a change in the machine's load hits all three alike.
    timing fresh;
    timing reused;
    timing cli;
    for (size_t i = 0; i < cycles; ++i) {
      fresh_cycle(fresh_repo, dir / "fresh", i, fresh);
      reused_cycle(reused_repo, dir / "reused", i, reused);
      cli_cycle(dir / "cli", i, cli);
    }
    auto trash_ms
      = reused_finish(reused_repo, dir / "reused", cycles - 1, reused);
    report("fresh", fresh, cycles);
    report("reused", reused, cycles);
    report("git cli", cli, cycles);
    std::printf("reused: emptying the trash once at the end took %.1f ms\n",
                trash_ms);
    struct rusage usage;
    ::getrusage(RUSAGE_SELF, &usage);
    auto n = static_cast<double>(cycles);
    std::printf("bench git_cycle: files=%zu cycles=%zu fresh_ms=%.1f "
                "reused_ms=%.1f cli_ms=%.1f fresh_vs_cli=%.3f "
                "reused_vs_cli=%.3f trash_ms=%.1f "
                "reused_with_trash_vs_cli=%.3f peak_rss_mb=%.1f\n",
                files, cycles, fresh.total_ms / n, reused.total_ms / n,
                cli.total_ms / n, fresh.total_ms / cli.total_ms,
                reused.total_ms / cli.total_ms, trash_ms,
                (reused.total_ms + trash_ms) / cli.total_ms,
                static_cast<double>(usage.ru_maxrss) / 1024.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench git_cycle: error: %s\n", e.what());
    fs::remove_all(dir);
    return 1;
  }
  fs::remove_all(dir);
  return 0;
}
