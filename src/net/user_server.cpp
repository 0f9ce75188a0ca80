#include "src/net/user_server.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <system_error>
#include <thread>

#include <nlohmann/json.hpp>

#include "src/net/endpoint.hpp"
#include "src/net/line_channel.hpp"
#include "src/proc/spawn.hpp"
#include "src/text/file.hpp"

namespace fs = std::filesystem;

namespace taskforce::net {

namespace {

using steady = std::chrono::steady_clock;

/// How much of the server's log a failed start quotes.
constexpr size_t log_quote_bytes = 2000;

/// How long a client waits before starting another server when the one it
/// started exited (it lost the lock to one that then went away).
constexpr auto restart_pause = std::chrono::milliseconds(500);

/// An absolute path from environment variable `name`, if it holds one.
std::optional<fs::path> absolute_env(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || v[0] != '/')
    return std::nullopt;
  return fs::path{v};
}

/// The last lines of the server's log, for an error message ("" if none).
std::string log_tail(const fs::path& dir) {
  auto text = read_file(user_log(dir));
  if (!text)
    return {};
  auto& t = *text;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' '))
    t.pop_back();
  if (t.size() > log_quote_bytes)
    t = "…" + t.substr(t.size() - log_quote_bytes);
  return t.empty() ? std::string{} : ": " + t;
}

/// This process's own executable.
std::string own_program() {
  std::error_code ec;
  auto self = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw endpoint_error(endpoint_errc::no_server,
                         "cannot start the per-user server: cannot find this "
                         "program (/proc/self/exe: "
                           + ec.message() + ")");
  return self.string();
}

/// Starts `PROGRAM serve --user` detached from the caller's output (the
/// caller may be a hook whose output another program reads to its end).
pid_t start_server(const user_server_options& opts, const fs::path& dir) {
  proc::spawn_options s;
  s.argv
    = {opts.program.empty() ? own_program() : opts.program, "serve", "--user"};
  s.cwd = "/";
  s.in = proc::stdio::null();
  s.out = proc::stdio::null();
  s.err = proc::stdio::file(user_log(dir).string(), true);
  try {
    return proc::spawn(s).pid;
  } catch (const proc::spawn_error& e) {
    throw endpoint_error(endpoint_errc::no_server,
                         std::string{"cannot start the per-user server: "}
                           + e.what());
  }
}

/// A connection to the per-user server, started when none answers.
int connect_or_start(const user_server_options& opts, const fs::path& dir,
                     steady::time_point deadline) {
  auto sock = user_socket(dir);
  int err = 0;
  std::string why;
  if (int fd = connect_unix(sock, err, why); fd >= 0)
    return fd;
  if (err != ENOENT && err != ECONNREFUSED)
    throw endpoint_error(endpoint_errc::broken, "cannot connect to the "
                                                "per-user server at "
                                                  + sock.string() + ": " + why);
  if (!opts.start)
    throw endpoint_error(endpoint_errc::no_server,
                         "no per-user server runs (nothing answers at "
                           + sock.string() + ")");
  pid_t child = start_server(opts, dir);
  auto started = steady::now();
  auto pause = std::chrono::milliseconds(2);
  for (;;) {
    if (int fd = connect_unix(sock, err, why); fd >= 0)
      return fd;
    int status = 0;
    if (child > 0 && ::waitpid(child, &status, WNOHANG) == child) {
      child = -1;
      auto ended = proc::decode_wait_status(status);
      // Exit 0: another server holds the lock (connect to it) or it went
      // idle at once; anything else is a failure its log explains.
      if (!ended.success())
        throw endpoint_error(endpoint_errc::no_server,
                             "the per-user server could not start ("
                               + proc::to_string(ended) + ")" + log_tail(dir));
    }
    auto now = steady::now();
    if (child < 0 && now - started >= restart_pause) {
      child = start_server(opts, dir);
      started = now;
    }
    if (now >= deadline)
      throw endpoint_error(endpoint_errc::timeout,
                           "the per-user server did not answer at "
                             + sock.string() + " in time");
    std::this_thread::sleep_for(
      std::min<steady::duration>(pause, deadline - now));
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

/// The "id" of request line `line` ("null" when it has none).
std::string id_of(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  return j.is_object() && j.contains("id") ? j["id"].dump() : "null";
}

/// Sends the give-up line on `channel` and reads up to its response (the
/// response it gave up on may come first); false when that failed.
bool give_up_on(line_channel& channel, const user_server_options& opts,
                steady::time_point until) {
  auto id = id_of(opts.give_up_line);
  try {
    channel.send_line(opts.give_up_line, until);
    for (;;)
      if (id_of(channel.read_response(until)) == id)
        return true;
  } catch (const endpoint_error&) {
    return false;
  }
}

/// The waiting request timed out: gives back what it may have been granted
/// (see user_server_options::give_up_line), on the same connection or, when
/// that broke, on a fresh one (a server that closed it cancelled the wait,
/// but a grant that came first outlives the connection).
void give_up(line_channel& channel, const user_server_options& opts,
             const fs::path& dir) {
  auto until = steady::now() + opts.give_up_patience;
  if (give_up_on(channel, opts, until))
    return;
  int err = 0;
  std::string why;
  int fd = connect_unix(user_socket(dir), err, why);
  if (fd < 0)
    return; // no server: nothing is held
  line_channel fresh{fd, user_socket(dir).string()};
  give_up_on(fresh, opts, until);
}

} // namespace

fs::path user_runtime_dir() {
  if (auto xdg = absolute_env("XDG_RUNTIME_DIR"))
    return *xdg / "taskforce";
  auto shared = fs::path{"/tmp"} / ("taskforce-" + std::to_string(::getuid()));
  // Anyone may create that name in /tmp first: a folder there that is not
  // this user's private one is passed over for one in the user's cache.
  ::mkdir(shared.c_str(), 0700);
  struct stat st;
  bool ours = ::lstat(shared.c_str(), &st) == 0 && S_ISDIR(st.st_mode)
              && st.st_uid == ::getuid() && (st.st_mode & 077) == 0;
  if (ours)
    return shared;
  if (auto cache = absolute_env("XDG_CACHE_HOME"))
    return *cache / "taskforce" / "run";
  if (auto home = absolute_env("HOME"))
    return *home / ".cache" / "taskforce" / "run";
  return shared; // nowhere else: prepare_private_dir says why it is refused
}

fs::path user_config_file() {
  if (auto xdg = absolute_env("XDG_CONFIG_HOME"))
    return *xdg / "taskforce" / "config.json";
  if (auto home = absolute_env("HOME"))
    return *home / ".config" / "taskforce" / "config.json";
  return {};
}

fs::path user_socket(const fs::path& dir) {
  return dir / "pool.sock";
}

fs::path user_lock(const fs::path& dir) {
  return dir / "server.lock";
}

fs::path user_log(const fs::path& dir) {
  return dir / "server.log";
}

void prepare_private_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    int err = errno;
    std::error_code ec;
    if (err != ENOENT || !fs::create_directories(dir.parent_path(), ec)
        || ::mkdir(dir.c_str(), 0700) != 0)
      if (errno != EEXIST)
        throw endpoint_error(endpoint_errc::bad_file, "cannot create "
                                                        + dir.string() + ": "
                                                        + std::strerror(err));
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0)
    throw endpoint_error(endpoint_errc::bad_file, "cannot use " + dir.string()
                                                    + ": "
                                                    + std::strerror(errno));
  auto refuse = [&](const std::string& why) {
    throw endpoint_error(endpoint_errc::bad_file,
                         "refusing to use " + dir.string() + " for the "
                           + "per-user server: " + why);
  };
  if (S_ISLNK(st.st_mode))
    refuse("it is a symbolic link");
  if (!S_ISDIR(st.st_mode))
    refuse("it is not a folder");
  if (st.st_uid != ::getuid())
    refuse("it belongs to user " + std::to_string(st.st_uid) + ", not to you ("
           + std::to_string(::getuid()) + ")");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    refuse(std::string{"it is open to others (mode "} + mode
           + "); make it 0700");
  }
}

int try_lock(const fs::path& lock_file) {
  int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0)
    throw std::system_error(errno, std::generic_category(),
                            "cannot open " + lock_file.string());
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string user_request(const user_server_options& opts,
                         const std::string& request_line,
                         steady::time_point deadline) {
  auto dir = user_runtime_dir();
  prepare_private_dir(dir);
  for (int attempt = 0;; ++attempt) {
    line_channel channel{connect_or_start(opts, dir, deadline),
                         user_socket(dir).string()};
    try {
      channel.send_line(request_line, deadline);
      return channel.read_response(deadline);
    } catch (const endpoint_error& e) {
      if (e.code() == endpoint_errc::timeout && !opts.give_up_line.empty())
        give_up(channel, opts, dir);
      // A server that was exiting as we came closes without a word: once,
      // ask again (a new server starts).
      if (e.code() != endpoint_errc::broken || attempt > 0)
        throw;
    }
  }
}

} // namespace taskforce::net
