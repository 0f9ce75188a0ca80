// Shared setup of the tests that run the real agent CLIs (Claude Code,
// OpenCode, Codex) offline: the pinned npm installation that
// tests/harness/install.sh makes, the scripted model server
// (tests/harness/model_server.mjs) they talk to instead of a model, and a
// home of their own for each CLI.
#pragma once

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "src/proc/run.hpp"
#include "src/proc/spawn.hpp"
#include "test.hpp"

namespace taskforce::test {

/// Where the pinned CLIs are, or why they are not.
struct harness_clis {
  /// The installation folder; empty when unavailable.
  std::filesystem::path dir;
  /// Why they are unavailable.
  std::string why_not;

  /// The folder holding claude, opencode and codex.
  std::filesystem::path bin() const {
    return dir / "node_modules" / ".bin";
  }
};

/// The last non-empty line of `text`.
inline std::string last_line(const std::string& text) {
  auto end = text.find_last_not_of("\n ");
  if (end == std::string::npos)
    return {};
  auto start = text.rfind('\n', end);
  start = start == std::string::npos ? 0 : start + 1;
  return text.substr(start, end - start + 1);
}

/// Runs tests/harness/install.sh (installing on first use, at most once at
/// a time) and says where the CLIs are. TASKFORCE_HARNESS=off skips them.
inline harness_clis find_harness_clis() {
  harness_clis out;
  if (const char* off = std::getenv("TASKFORCE_HARNESS");
      off != nullptr && std::string{off} == "off") {
    out.why_not = "TASKFORCE_HARNESS=off";
    return out;
  }
  temp_dir tmp;
  proc::run_options o;
  o.argv
    = {"bash", std::string{TASKFORCE_SOURCE_DIR} + "/tests/harness/install.sh"};
  o.log_file = (tmp.path() / "install.log").string();
  o.timeout = std::chrono::minutes(15);
  auto r = proc::run(o);
  auto last = last_line(read_file(o.log_file));
  if (!r.success()) {
    out.why_not = last.empty() ? "install.sh: " + r.describe() : last;
    return out;
  }
  out.dir = last;
  return out;
}

/// Says on standard output that a suite skips and why; ctest reports the
/// suite as skipped when it sees the word.
inline void say_skipped(const std::string& why) {
  std::cout << "SKIPPED: the real agent CLIs are not available (" << why
            << "); run tests/harness/install.sh" << std::endl;
}

/// The scripted model server, started on a free loopback port for one test
/// and stopped with it. `script` is the JSON the server follows (see the
/// head of tests/harness/model_server.mjs); every request it answered is a
/// line of events().
class model_server {
 public:
  model_server(const temp_dir& dir, const std::string& script,
               const std::string& name = "model")
    : log_((dir.path() / (name + "-events.jsonl")).string()) {
    auto script_file = dir.write(name + "-script.json", script).string();
    auto port_file = (dir.path() / (name + ".port")).string();
    proc::spawn_options o;
    o.argv
      = {"node",
         std::string{TASKFORCE_SOURCE_DIR} + "/tests/harness/model_server.mjs",
         "--script",
         script_file,
         "--log",
         log_,
         "--port-file",
         port_file};
    o.in = proc::stdio::null();
    o.out = proc::stdio::file((dir.path() / (name + "-server.out")).string());
    o.err = proc::stdio::to_stdout();
    pid_ = proc::spawn(o).pid;
    if (!eventually(
          [&] {
            return std::filesystem::exists(port_file);
          },
          std::chrono::seconds(30)))
      throw std::runtime_error(
        "the model server did not start: "
        + read_file(dir.path() / (name + "-server.out")));
    port_ = read_file(port_file);
  }
  ~model_server() {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  model_server(const model_server&) = delete;
  model_server& operator=(const model_server&) = delete;

  /// "http://127.0.0.1:PORT".
  std::string url() const {
    return "http://127.0.0.1:" + port_;
  }

  /// The events so far, one JSON text each.
  std::vector<std::string> events() const {
    std::vector<std::string> out;
    std::istringstream in(read_file(log_));
    std::string line;
    while (std::getline(in, line))
      if (!line.empty())
        out.push_back(line);
    return out;
  }

  /// The event log's path.
  const std::string& log() const {
    return log_;
  }

 private:
  std::string log_;
  std::string port_;
  pid_t pid_ = -1;
};

/// Variables that give a CLI a home of its own under `home` (HOME, the XDG
/// folders, TMPDIR) and put the pinned CLIs first on PATH.
inline std::vector<std::pair<std::string, std::string>>
own_home(const std::filesystem::path& home, const harness_clis& clis) {
  for (auto sub :
       {"", "/.config", "/.local/share", "/.cache", "/.local/state", "/tmp"})
    std::filesystem::create_directories(home.string() + sub);
  const char* path = std::getenv("PATH");
  return {
    {"HOME", home.string()},
    {"XDG_CONFIG_HOME", home.string() + "/.config"},
    {"XDG_DATA_HOME", home.string() + "/.local/share"},
    {"XDG_CACHE_HOME", home.string() + "/.cache"},
    {"XDG_STATE_HOME", home.string() + "/.local/state"},
    {"TMPDIR", home.string() + "/tmp"},
    {"PATH", clis.bin().string() + ":" + (path ? path : "/usr/bin:/bin")},
  };
}

/// The environment of a real `claude`: a home of its own under `home`, the
/// model server in place of Anthropic's, and no traffic beyond it.
inline std::vector<std::pair<std::string, std::string>>
claude_env(const std::filesystem::path& home, const harness_clis& clis,
           const model_server& model) {
  auto env = own_home(home, clis);
  env.emplace_back("ANTHROPIC_BASE_URL", model.url());
  env.emplace_back("ANTHROPIC_API_KEY", "scripted-key");
  env.emplace_back("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
  env.emplace_back("DISABLE_AUTOUPDATER", "1");
  return env;
}

/// OpenCode's config for the model server: a provider through the bundled
/// OpenAI-compatible SDK, its one model the default, no update checks, no
/// sharing.
inline std::string opencode_config(const model_server& model,
                                   const std::string& extra = "") {
  return R"({"$schema": "https://opencode.ai/config.json",
  "provider": {"scripted": {"npm": "@ai-sdk/openai-compatible",
    "name": "Scripted", "options": {"baseURL": ")"
         + model.url() + R"(/v1", "apiKey": "scripted-key"},
    "models": {"m1": {"name": "Scripted model"}}}},
  "model": "scripted/m1", "small_model": "scripted/m1",
  "autoupdate": false, "share": "disabled")"
         + extra + "}\n";
}

} // namespace taskforce::test
