#include "src/proc/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "src/proc/registry.hpp"

extern char** environ;

namespace taskforce::proc {

namespace {

/// Closes the fds it holds on scope exit unless released.
struct fd_guard {
  std::vector<int> fds;
  ~fd_guard() {
    for (int fd : fds)
      if (fd >= 0)
        ::close(fd);
  }
};

std::string errno_text(int code) {
  return std::strerror(code);
}

std::string program_of(const spawn_options& opts) {
  return opts.argv.empty() ? std::string{"(no program)"} : opts.argv[0];
}

/// Opens a redirection target in the parent so a bad path is reported as
/// such (a failure inside posix_spawn only yields an errno). Close-on-exec:
/// the child gets it through dup2, which clears the flag on the target.
int open_target(const stdio& s, int target, const spawn_options& opts) {
  int flags = O_CLOEXEC;
  const char* path = s.path.c_str();
  switch (s.how) {
    case stdio::kind::null:
      path = "/dev/null";
      flags |= target == 0 ? O_RDONLY : O_WRONLY;
      break;
    case stdio::kind::truncate:
      flags |= target == 0 ? O_RDONLY : (O_WRONLY | O_CREAT | O_TRUNC);
      break;
    case stdio::kind::append:
      flags |= target == 0 ? O_RDONLY : (O_WRONLY | O_CREAT | O_APPEND);
      break;
    default: return -1;
  }
  int fd = ::open(path, flags, 0644);
  if (fd < 0) {
    int code = errno;
    throw spawn_error("cannot run '" + program_of(opts) + "': cannot open '"
                        + path + "': " + errno_text(code),
                      code);
  }
  return fd;
}

} // namespace

child spawn(const spawn_options& opts) {
  if (opts.argv.empty() || opts.argv[0].empty())
    throw spawn_error("cannot run a process: the command is empty", EINVAL);
  if (opts.in.how == stdio::kind::to_stdout
      || opts.out.how == stdio::kind::to_stdout)
    throw spawn_error("cannot run '" + opts.argv[0]
                        + "': only stderr can go to stdout",
                      EINVAL);
  fd_guard parent_only; // the child's ends, closed after the spawn
  child result;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  struct cleanup_t {
    posix_spawn_file_actions_t* fa;
    posix_spawnattr_t* at;
    ~cleanup_t() {
      posix_spawn_file_actions_destroy(fa);
      posix_spawnattr_destroy(at);
    }
  } cleanup{&fa, &at};
  fd_guard on_error; // the caller's pipe ends, closed unless the spawn works
  const stdio* streams[3] = {&opts.in, &opts.out, &opts.err};
  for (int target = 0; target < 3; ++target) {
    const stdio& s = *streams[target];
    switch (s.how) {
      case stdio::kind::inherit: break;
      case stdio::kind::to_stdout:
        posix_spawn_file_actions_adddup2(&fa, 1, 2);
        break;
      case stdio::kind::pipe: {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0) {
          int code = errno;
          throw spawn_error("cannot run '" + opts.argv[0]
                              + "': pipe: " + errno_text(code),
                            code);
        }
        int child_end = target == 0 ? p[0] : p[1];
        int our_end = target == 0 ? p[1] : p[0];
        parent_only.fds.push_back(child_end);
        on_error.fds.push_back(our_end);
        posix_spawn_file_actions_adddup2(&fa, child_end, target);
        (target == 0   ? result.stdin_fd
         : target == 1 ? result.stdout_fd
                       : result.stderr_fd)
          = our_end;
        break;
      }
      default: {
        int fd = open_target(s, target, opts);
        parent_only.fds.push_back(fd);
        posix_spawn_file_actions_adddup2(&fa, fd, target);
      }
    }
  }
  if (!opts.cwd.empty())
    posix_spawn_file_actions_addchdir_np(&fa, opts.cwd.c_str());
  // Own group, every signal at its default, nothing blocked: a child must not
  // inherit our SIG_IGN for SIGPIPE/SIGINT nor a mask set by a runtime thread.
  posix_spawnattr_setpgroup(&at, 0);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&at, &all);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF
                                  | POSIX_SPAWN_SETSIGMASK);
  std::vector<char*> argv;
  for (auto& a : opts.argv)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The environment: ours with the overrides applied, in a stable order.
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  char** env_to_use = environ;
  if (!opts.env.empty()) {
    std::map<std::string, std::string> vars;
    std::vector<std::string> order;
    for (char** e = environ; e && *e; ++e) {
      std::string entry = *e;
      auto eq = entry.find('=');
      std::string key = entry.substr(0, eq);
      if (vars.emplace(key, entry).second)
        order.push_back(key);
    }
    for (auto& [key, value] : opts.env) {
      auto [it, added] = vars.insert_or_assign(key, key + "=" + value);
      if (added)
        order.push_back(key);
    }
    for (auto& key : order)
      env_strings.push_back(vars[key]);
    for (auto& s : env_strings)
      envp.push_back(s.data());
    envp.push_back(nullptr);
    env_to_use = envp.data();
  }
  pid_t pid = -1;
  int rc;
  {
    // Registered under the same lock as the spawn, so the orphan reaper
    // never mistakes a just-started child for an adopted orphan.
    std::lock_guard<std::mutex> guard{registry_mutex()};
    rc = ::posix_spawnp(&pid, argv[0], &fa, &at, argv.data(), env_to_use);
    if (rc == 0)
      registered_children().insert(pid);
  }
  if (rc != 0) {
    std::string where = opts.cwd.empty() ? "" : " in '" + opts.cwd + "'";
    throw spawn_error(
      "cannot run '" + opts.argv[0] + "'" + where + ": " + errno_text(rc), rc);
  }
  on_error.fds.clear();
  result.pid = pid;
  return result;
}

exit_status decode_wait_status(int status) {
  exit_status result;
  if (WIFEXITED(status)) {
    result.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

exit_status wait_for(pid_t pid) {
  int status = 0;
  pid_t rc;
  do {
    rc = ::waitpid(pid, &status, 0);
  } while (rc < 0 && errno == EINTR);
  forget_child(pid);
  if (rc < 0)
    return {};
  return decode_wait_status(status);
}

std::string to_string(const exit_status& status) {
  if (status.signal != 0) {
    const char* name = ::strsignal(status.signal);
    return "signal " + std::to_string(status.signal) + " ("
           + (name ? name : "?") + ")";
  }
  return "exit " + std::to_string(status.code);
}

} // namespace taskforce::proc
