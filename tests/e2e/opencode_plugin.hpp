// Shared setup of the suites that run the OpenCode plugin
// (integrations/opencode/taskforce.ts) in the real OpenCode: a project (a
// git repository) with a real `taskforce serve --listen` in it, a watcher
// connection subscribed to every holder's events and to the control plane's,
// and `opencode run` with the plugin loaded, offline against the scripted
// model server.
#pragma once

#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/harness.hpp"
#include "e2e/pool_watch.hpp"
#include "e2e/protocol_client.hpp"
#include "scenarios/scenario.hpp"

namespace taskforce::test {

/// The plugin as users load it.
inline const std::string opencode_plugin
  = std::string{TASKFORCE_SOURCE_DIR} + "/integrations/opencode/taskforce.ts";

/// How `opencode run` runs.
struct opencode_options {
  /// The prompt of the run.
  std::string prompt = "PLUGIN-MAIN: run both subagents";
  /// OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS=1 (the `background`
  /// parameter of `task`).
  bool background = false;
  /// The plugin files, in load order; empty means just the plugin.
  std::vector<std::string> plugins;
};

struct plugin_case : pool_events {
  const harness_clis& clis;
  scenario s;
  std::unique_ptr<serve_process> server;
  std::unique_ptr<tcp_peer> watcher;

  explicit plugin_case(const harness_clis& c) : clis(c) {}

  /// Starts `taskforce serve --listen` in the project with `pool` as the
  /// pool config, and a connection that watches every holder's events.
  void serve(const std::string& pool) {
    using namespace std::chrono_literals;
    s.set_config(R"({"pool": )" + pool + "}");
    server = std::make_unique<serve_process>(
      TASKFORCE_BINARY,
      std::vector<std::string>{"--repo", s.root.string(), "--config",
                               s.config.string(), "serve", "--listen",
                               "127.0.0.1:0"},
      s.root.string());
    // Its log may come first; the line that names the port comes once.
    std::string line;
    auto at = std::string::npos;
    while (at == std::string::npos) {
      auto next = server->stderr_line(60000ms);
      CAF_REQUIRE(next.has_value());
      line = *next;
      at = line.find("listening on 127.0.0.1:");
    }
    auto port = static_cast<uint16_t>(std::stoi(
      line.substr(at + std::string{"listening on 127.0.0.1:"}.size())));
    auto endpoint = nlohmann::json::parse(
      read_file(s.root / ".taskforce" / "endpoint.json"));
    watcher
      = std::make_unique<tcp_peer>(port, endpoint["token"].get<std::string>());
    auto r = watcher->peer.call({{"id", "sub"}, {"op", "subscribe"}});
    CAF_REQUIRE(r["ok"] == true);
  }

  /// `opencode run` in the project with the plugin(s) loaded; afterwards
  /// `events` holds every event the run caused.
  proc::run_result run_opencode(const model_server& model,
                                const opencode_options& opt = {}) {
    using namespace std::chrono_literals;
    auto home = s.dir.path() / "opencode-home";
    auto env = own_home(home, clis);
    auto config = home / ".config" / "opencode";
    std::string list;
    for (auto& file : opt.plugins.empty()
                        ? std::vector<std::string>{opencode_plugin}
                        : opt.plugins)
      list
        += (list.empty() ? "" : ", ") + std::string{"\"file://"} + file + "\"";
    s.dir.write("opencode-home/.config/opencode/opencode.json",
                opencode_config(model, R"(, "plugin": [)" + list + "]"));
    // OpenCode installs @opencode-ai/plugin in each config folder unless it
    // is there already; offline that stalls, so the pinned one is linked.
    std::filesystem::create_symlink(clis.dir / "node_modules",
                                    config / "node_modules");
    std::filesystem::copy_file(clis.dir / "package.json",
                               config / "package.json");
    std::filesystem::copy_file(clis.dir / "package-lock.json",
                               config / "package-lock.json");
    env.emplace_back("OPENCODE_DISABLE_MODELS_FETCH", "1");
    // OpenCode takes its project folder from PWD, not from the folder it
    // runs in: as a shell that changed into the project would set it.
    env.emplace_back("PWD", s.root.string());
    if (opt.background)
      env.emplace_back("OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS", "1");
    env.emplace_back("TASKFORCE_ENDPOINT",
                     (s.root / ".taskforce" / "endpoint.json").string());
    proc::run_options o;
    o.argv = {(clis.bin() / "opencode").string(), "run", opt.prompt};
    o.cwd = s.root.string();
    o.env = env;
    o.log_file = (s.dir.path() / "opencode.log").string();
    o.timeout = std::chrono::minutes(12);
    auto r = proc::run(o);
    if (!r.success())
      CAF_MESSAGE("opencode said:\n" << read_file(o.log_file));
    // The events the run caused, all there by now.
    try {
      for (;;)
        events.push_back(watcher->peer.next(3000ms));
    } catch (const std::runtime_error&) {
    }
    return r;
  }

  /// Whether the server holds and queues nothing now.
  bool nothing_held() {
    return test::nothing_held(watcher->peer);
  }
};

} // namespace taskforce::test
