// Shared setup of the run scenarios: a temporary git repository (made with
// the git CLI), a task file, a config outside the repository, and the real
// `taskforce` binary run as a user runs it.
#pragma once

#include <dirent.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "src/proc/run.hpp"
#include "src/store/ledger.hpp"
#include "test.hpp"
#include "unit/git_fixture.hpp"

namespace taskforce::test {

/// What one `taskforce` invocation did.
struct tf_result {
  int code = -1;
  std::string output;
};

/// A project repository with a first commit and a place for configs and
/// flags outside it.
struct scenario {
  temp_dir dir;
  std::filesystem::path root = dir.path() / "project";
  std::filesystem::path config = dir.path() / "config.json";
  std::string config_text = "{}";

  scenario() {
    std::filesystem::create_directories(root);
    git_ok(root, {"init", "-q", "-b", "main"});
    git_ok(root, {"config", "user.name", "Test"});
    git_ok(root, {"config", "user.email", "test@example.com"});
    write("README.md", "# project\n");
    write("shared.txt", "base\n");
    git_ok(root, {"add", "-A"});
    git_ok(root, {"commit", "-q", "-m", "first"});
  }

  /// Writes a file in the project.
  void write(const std::string& rel, const std::string& text) const {
    auto file = root / rel;
    std::filesystem::create_directories(file.parent_path());
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << text;
  }

  /// Writes the task file and commits it.
  void tasks(const std::string& text, const std::string& name = "TASKS.md") {
    write(name, text);
    git_ok(root, {"add", name});
    git_ok(root, {"commit", "-q", "-m", "tasks"});
  }

  /// The config (JSON text) every invocation uses.
  void set_config(const std::string& json) {
    config_text = json;
    std::ofstream out(config, std::ios::binary | std::ios::trunc);
    out << json;
  }

  /// Writes a scripted-worker script outside the repository; returns path.
  std::string script(const std::string& json) const {
    return dir.write("script.json", json).string();
  }

  /// Runs `taskforce --repo ROOT --config CONFIG args...`.
  tf_result tf(std::vector<std::string> args,
               std::chrono::milliseconds timeout
               = std::chrono::milliseconds(120000)) {
    if (!std::filesystem::exists(config))
      set_config(config_text);
    proc::run_options o;
    o.argv = {TASKFORCE_BINARY, "--repo", root.string(), "--config",
              config.string()};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    o.cwd = root.string();
    o.env = {{"NO_COLOR", "1"}};
    o.log_file = (dir.path() / "tf.log").string();
    o.timeout = timeout;
    auto r = proc::run(o);
    return {r.exit_code, read_file(dir.path() / "tf.log")};
  }

  /// Opens the ledger read-only.
  store::ledger ledger() const {
    store::ledger_options o;
    o.read_only = true;
    return store::ledger::open(root / ".taskforce" / "ledger.sqlite", o);
  }

  /// The latest run's tasks.
  std::vector<store::task_row> task_rows() const {
    auto db = ledger();
    auto run = db.latest_run();
    return run ? db.tasks(run->id) : std::vector<store::task_row>{};
  }

  /// A task's row of the latest run.
  store::task_row task(const std::string& id) const {
    for (auto& t : task_rows())
      if (t.id == id)
        return t;
    return {};
  }

  /// The latest run.
  store::run_row run() const {
    return ledger().latest_run().value_or(store::run_row{});
  }

  /// `git log --first-parent --format=%s main`.
  std::vector<std::string> first_parent_subjects() const {
    return lines_of(
      git_ok(root, {"log", "--first-parent", "--format=%s", "main"}));
  }

  /// Processes whose command line mentions `marker` (still alive).
  static std::vector<pid_t> processes_mentioning(const std::string& marker) {
    std::vector<pid_t> found;
    auto* d = ::opendir("/proc");
    if (d == nullptr)
      return found;
    while (auto* e = ::readdir(d)) {
      pid_t pid = std::atoi(e->d_name);
      if (pid <= 0 || pid == ::getpid())
        continue;
      auto cmd = read_file(std::string{"/proc/"} + e->d_name + "/cmdline");
      auto stat = read_file(std::string{"/proc/"} + e->d_name + "/stat");
      if (stat.find(") Z") != std::string::npos)
        continue; // a zombie holds nothing
      for (auto& c : cmd)
        if (c == '\0')
          c = ' ';
      if (cmd.find(marker) != std::string::npos)
        found.push_back(pid);
    }
    ::closedir(d);
    return found;
  }
};

/// The commit whose subject is `subject`, searched from every ref and from
/// every worktree's HEAD; "" when none has it.
inline std::string commit_with_subject(const scenario& s,
                                       const std::string& subject) {
  auto all = lines_of(git_ok(s.root, {"log", "--all", "--format=%H %s"}));
  for (auto& line : all)
    if (line.substr(41) == subject)
      return line.substr(0, 40);
  return "";
}

/// Whether some ref (branches, tags, taskforce's own) reaches `commit`.
inline bool reachable(const scenario& s, const std::string& commit) {
  auto refs = git_ok(
    s.root, {"for-each-ref", "--contains", commit, "--format=%(refname)"});
  return !lines_of(refs).empty();
}

/// Starts `taskforce ARGS...` in the scenario's repository without waiting
/// for it; its output is appended to `log` in the scenario's folder.
inline proc::child
start_taskforce(scenario& s, const std::vector<std::string>& args,
                const std::string& log = "background.log",
                std::vector<std::pair<std::string, std::string>> env = {}) {
  if (!std::filesystem::exists(s.config))
    s.set_config(s.config_text);
  proc::spawn_options o;
  o.argv = {TASKFORCE_BINARY, "--repo", s.root.string(), "--config",
            s.config.string()};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.cwd = s.root.string();
  o.env = std::move(env);
  o.env.emplace_back("NO_COLOR", "1");
  o.out = proc::stdio::file((s.dir.path() / log).string(), true);
  o.err = proc::stdio::to_stdout();
  o.in = proc::stdio::null();
  return proc::spawn(o);
}

} // namespace taskforce::test
