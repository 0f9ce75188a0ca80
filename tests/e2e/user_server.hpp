// The per-user server as a user meets it: the real `taskforce` binary run
// as client commands and hooks with their own XDG_RUNTIME_DIR and
// XDG_CONFIG_HOME, starting (and reaching) a real `serve --user` on a Unix
// socket there.
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/proc/spawn.hpp"
#include "test.hpp"

namespace taskforce::test {

/// A `taskforce …` process: its input given whole, its output read once it
/// ended.
class client_process {
 public:
  client_process(std::vector<std::pair<std::string, std::string>> env,
                 std::vector<std::string> args, const std::string& input) {
    proc::spawn_options o;
    o.argv.push_back(TASKFORCE_BINARY);
    for (auto& a : args)
      o.argv.push_back(a);
    o.env = std::move(env);
    o.cwd = std::filesystem::temp_directory_path().string();
    o.in = proc::stdio::pipe();
    o.out = proc::stdio::pipe();
    o.err = proc::stdio::pipe();
    child_ = proc::spawn(o);
    size_t done = 0;
    while (done < input.size()) {
      auto n
        = ::write(child_.stdin_fd, input.data() + done, input.size() - done);
      if (n <= 0)
        break;
      done += static_cast<size_t>(n);
    }
    ::close(child_.stdin_fd);
  }

  ~client_process() {
    if (code_ == unset) {
      ::kill(child_.pid, SIGKILL);
      ::waitpid(child_.pid, nullptr, 0);
    }
    ::close(child_.stdout_fd);
    ::close(child_.stderr_fd);
  }

  client_process(const client_process&) = delete;
  client_process& operator=(const client_process&) = delete;

  /// Whether the process ended (its status is then kept).
  bool ended() {
    if (code_ != unset)
      return true;
    int status = 0;
    if (::waitpid(child_.pid, &status, WNOHANG) != child_.pid)
      return false;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    out = drain(child_.stdout_fd);
    err = drain(child_.stderr_fd);
    return true;
  }

  /// Waits for the end (at most `limit`); the exit status, -1 if it runs on.
  int finish(std::chrono::milliseconds limit = std::chrono::seconds(30)) {
    if (!eventually(
          [this] {
            return ended();
          },
          limit))
      return -1;
    return code_;
  }

  /// Standard output and error, once ended.
  std::string out;
  std::string err;

 private:
  static constexpr int unset = -1000;

  static std::string drain(int fd) {
    std::string text;
    char chunk[65536];
    ssize_t n;
    while ((n = ::read(fd, chunk, sizeof chunk)) > 0)
      text.append(chunk, static_cast<size_t>(n));
    return text;
  }

  proc::child child_;
  int code_ = unset;
};

/// One user's world: a runtime folder, a config folder, and the server they
/// lead to.
struct user_world {
  temp_dir dir;
  std::filesystem::path runtime = dir.path() / "run";
  std::filesystem::path config_home = dir.path() / "config";

  user_world() {
    std::filesystem::create_directories(runtime);
    ::chmod(runtime.c_str(), 0700);
  }

  ~user_world() {
    stop_server();
  }

  /// The folder of the server, its socket and its log.
  std::filesystem::path folder() const {
    return runtime / "taskforce";
  }
  std::filesystem::path socket() const {
    return folder() / "pool.sock";
  }
  std::string log() const {
    return read_file(folder() / "server.log");
  }

  /// Writes the user's config file.
  void set_config(const std::string& text) {
    dir.write("config/taskforce/config.json", text);
  }

  std::vector<std::pair<std::string, std::string>> env() const {
    return {{"XDG_RUNTIME_DIR", runtime.string()},
            {"XDG_CONFIG_HOME", config_home.string()}};
  }

  /// Starts `taskforce ARGS…` with `input` on its standard input.
  std::unique_ptr<client_process> start(std::vector<std::string> args,
                                        const std::string& input = {}) {
    return std::make_unique<client_process>(env(), std::move(args), input);
  }

  /// Runs `taskforce ARGS…` to its end.
  struct result {
    int code = -1;
    std::string out;
    std::string err;
    nlohmann::json answer;
  };
  result run(std::vector<std::string> args, const std::string& input = {}) {
    auto p = start(std::move(args), input);
    result r;
    r.code = p->finish();
    r.out = p->out;
    r.err = p->err;
    r.answer = nlohmann::json::parse(r.out, nullptr, false);
    return r;
  }

  /// Runs the Claude Code hook on one event.
  result hook(const nlohmann::json& event) {
    return run({"hook", "claude-code"}, event.dump());
  }

  /// `pool status` parsed.
  nlohmann::json status() {
    auto r = run({"pool", "status"});
    if (r.code != 0)
      throw std::runtime_error("pool status failed: " + r.err);
    return r.answer;
  }

  /// The holders running / queued in every pool.
  std::vector<std::string> running() {
    return holders("running");
  }
  std::vector<std::string> queued() {
    return holders("queued");
  }

  std::vector<std::string> holders(const char* which) {
    std::vector<std::string> names;
    auto st = status();
    for (auto& p : st["pools"])
      for (auto& h : p[which])
        names.push_back(h["holder"]);
    return names;
  }

  /// The pid of the server answering on the socket; 0 when none answers.
  pid_t server_pid() const {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    auto path = socket().string();
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    pid_t pid = 0;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      ucred cred{};
      socklen_t len = sizeof cred;
      if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
        pid = cred.pid;
    }
    ::close(fd);
    return pid;
  }

  /// Whether a server process `pid` still runs (a zombie waiting for a
  /// reaper does not).
  static bool alive(pid_t pid) {
    if (pid <= 0 || ::kill(pid, 0) != 0)
      return false;
    auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    auto close = stat.rfind(')');
    return close == std::string::npos || close + 2 >= stat.size()
           || stat[close + 2] != 'Z';
  }

  /// Stops the server (SIGTERM) and waits until it is gone.
  void stop_server() {
    auto pid = server_pid();
    if (pid <= 0)
      return;
    ::kill(pid, SIGTERM);
    eventually(
      [pid] {
        return !alive(pid);
      },
      std::chrono::seconds(10));
  }
};

} // namespace taskforce::test
