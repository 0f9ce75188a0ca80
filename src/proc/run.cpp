#include "src/proc/run.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "src/proc/mark.hpp"
#include "src/proc/registry.hpp"
#include "src/text/file.hpp"
#include "src/time/duration.hpp"

namespace taskforce::proc {

namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

} // namespace

// --- cancel handle -----------------------------------------------------------

struct cancel_handle::state {
  std::mutex mutex;
  bool cancelled = false;
  bool killed = false;
  /// One eventfd per run in progress, written to wake it.
  std::vector<int> waiters;

  void wake_all() {
    uint64_t one = 1;
    for (int fd : waiters)
      [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
  }
};

cancel_handle::cancel_handle() : state_(std::make_shared<state>()) {}

void cancel_handle::cancel() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->cancelled = true;
  state_->wake_all();
}

void cancel_handle::kill() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  state_->cancelled = true;
  state_->killed = true;
  state_->wake_all();
}

bool cancel_handle::cancelled() const {
  std::lock_guard<std::mutex> guard{state_->mutex};
  return state_->cancelled;
}

// --- helpers -----------------------------------------------------------------

namespace {

/// Becomes a child subreaper once, so orphaned descendants are re-parented
/// to us (and can be found and reaped) instead of to PID 1.
void become_subreaper() {
  static std::once_flag once;
  std::call_once(once, [] {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  });
}

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

/// The exit status of `pid` without reaping it (the zombie keeps the
/// process-group id reserved until the group is cleaned up); nullopt while
/// it still runs.
std::optional<exit_status> peek_exit(pid_t pid) {
  siginfo_t info;
  std::memset(&info, 0, sizeof info);
  int rc;
  do {
    rc = ::waitid(P_PID, static_cast<id_t>(pid), &info,
                  WEXITED | WNOHANG | WNOWAIT);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) // ECHILD: reaped behind our back (SIGCHLD ignored); it is over
    return exit_status{};
  if (info.si_pid == 0)
    return std::nullopt;
  exit_status st;
  if (info.si_code == CLD_EXITED)
    st.code = info.si_status;
  else
    st.signal = info.si_status;
  return st;
}

bool group_alive(pid_t pgid) {
  return ::kill(-pgid, 0) == 0 || errno == EPERM;
}

/// Kills what is left of the group and reaps every member that is our
/// child (the leader, and members adopted as subreaper) until none is left.
void clean_group(pid_t pgid) {
  auto give_up = clock_type::now() + std::chrono::seconds(10);
  for (;;) {
    ::kill(-pgid, SIGKILL);
    int status;
    pid_t rc;
    while ((rc = ::waitpid(-pgid, &status, 0)) > 0
           || (rc < 0 && errno == EINTR))
      ;
    if (!group_alive(pgid) || clock_type::now() > give_up)
      return;
    // A member still exiting, not yet re-parented to us: try again shortly.
    std::this_thread::sleep_for(milliseconds(1));
  }
}

/// Appends the pids listed in `file` (numbers separated by spaces).
void read_pids(const std::string& file, std::vector<pid_t>& out) {
  auto text = read_file(file);
  if (!text)
    return;
  std::istringstream in{*text};
  pid_t pid;
  while (in >> pid)
    out.push_back(pid);
}

/// Our direct children that a sweep looks at, as the kernel lists them.
/// An orphan adopted by a subreaper goes to its first live thread: the
/// main thread while it runs, so only its list is read then (one file
/// instead of one per thread, after every command). The children each
/// thread started itself are registered, or nobody's orphans.
std::vector<pid_t> direct_children() {
  std::vector<pid_t> result;
  // A main thread that ended (a host that ended it while others run on)
  // stays a zombie until the process ends.
  if (!is_zombie(::getpid())) {
    read_pids("/proc/self/task/" + std::to_string(::getpid()) + "/children",
              result);
    return result;
  }
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr)
    return result;
  while (auto* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.')
      continue;
    read_pids(std::string{"/proc/self/task/"} + entry->d_name + "/children",
              result);
  }
  ::closedir(dir);
  return result;
}

/// Kills and reaps the children we adopted that carry the run's mark, round
/// after round, since killing one orphans its own children to us. Adopted
/// zombies are reaped too: nobody else will wait for them.
///
/// Returns whether a live child we did not start was left alone because it
/// does not carry the mark. Every live descendant that left its group has
/// an ancestor among our children (as a subreaper we adopt whatever is
/// orphaned below us), so when there is none, no marked process can hide
/// behind one that cleared its environment, and no scan of every process
/// is needed.
bool sweep_orphans(const env_pattern& marked) {
  bool strangers = false;
  for (int round = 0; round < 100; ++round) {
    std::vector<pid_t> mine;
    {
      std::lock_guard<std::mutex> guard{registry_mutex()};
      auto& registered = registered_children();
      for (pid_t pid : direct_children()) {
        if (registered.count(pid) != 0)
          continue;
        if (is_zombie(pid)) {
          ::waitpid(pid, nullptr, WNOHANG);
        } else if (environment_matches(pid, marked)) {
          ::kill(pid, SIGKILL);
          mine.push_back(pid);
        } else {
          strangers = true;
        }
      }
    }
    if (mine.empty())
      return strangers;
    for (pid_t pid : mine)
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR)
        ;
  }
  return true; // still finding more: assume the worst
}

/// The output side: the log file and the tail.
class output_sink {
 public:
  /// Keeps at least `keep_bytes` (for last()); the result gets the last
  /// `tail_bytes`.
  output_sink(int log_fd, size_t head_bytes, size_t tail_bytes,
              size_t keep_bytes,
              const std::function<void(std::string_view)>& on_data)
    : log_fd_(log_fd), head_bytes_(head_bytes), tail_bytes_(tail_bytes),
      keep_bytes_(std::max(tail_bytes, keep_bytes)), on_data_(on_data) {}

  void add(const char* data, size_t size) {
    total_ += size;
    if (head_.size() < head_bytes_)
      head_.append(data, std::min(size, head_bytes_ - head_.size()));
    if (log_fd_ >= 0) {
      size_t done = 0;
      while (done < size) {
        auto n = ::write(log_fd_, data + done, size - done);
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0)
          break; // a full disk loses log lines, never the run
        done += static_cast<size_t>(n);
      }
    }
    // After the log: what the hook reacts to is already readable there. A
    // hook that throws misses that piece, the run goes on.
    if (on_data_) {
      try {
        on_data_(std::string_view{data, size});
      } catch (...) {
      }
    }
    if (keep_bytes_ == 0)
      return;
    tail_.append(data, size);
    if (tail_.size() > 2 * keep_bytes_ + 65536)
      tail_.erase(0, tail_.size() - keep_bytes_);
  }

  /// The last `n` bytes of the output so far.
  std::string last(size_t n) const {
    return tail_.size() <= n ? tail_ : tail_.substr(tail_.size() - n);
  }

  void finish(run_result& result) {
    if (tail_.size() > tail_bytes_)
      tail_.erase(0, tail_.size() - tail_bytes_);
    result.tail = std::move(tail_);
    result.tail_truncated = total_ > tail_bytes_;
    result.head = std::move(head_);
  }

 private:
  int log_fd_;
  size_t head_bytes_;
  size_t tail_bytes_;
  size_t keep_bytes_;
  const std::function<void(std::string_view)>& on_data_;
  size_t total_ = 0;
  std::string head_;
  std::string tail_;
};

/// Reads what is available; false at end of file.
bool pump(int fd, output_sink& sink) {
  char buf[65536];
  for (;;) {
    auto n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      sink.add(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof buf)
        return true;
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && errno == EAGAIN)
      return true;
    return false;
  }
}

int poll_timeout(
  clock_type::time_point now,
  std::initializer_list<std::optional<clock_type::time_point>> deadlines) {
  int result = -1;
  for (auto& d : deadlines) {
    if (!d)
      continue;
    int v = poll_timeout_ms(*d - now);
    result = result < 0 ? v : std::min(result, v);
  }
  return result;
}

/// `from` + `span` milliseconds, at most the clock's last instant.
clock_type::time_point deadline_after(clock_type::time_point from,
                                      milliseconds span) {
  return saturating_deadline<clock_type>(from, saturating_ms(span.count()));
}

/// Closes fds on scope exit.
struct fds_closer {
  std::vector<int*> fds;
  ~fds_closer() {
    for (int* fd : fds)
      if (*fd >= 0)
        ::close(*fd);
  }
};

} // namespace

// --- run ---------------------------------------------------------------------

std::string run_result::describe() const {
  if (timed_out)
    return "timed out after " + std::to_string(duration.count()) + " ms";
  if (cancelled)
    return "cancelled";
  return to_string(exit_status{exit_code, signal});
}

run_result run(const run_options& opts) {
  become_subreaper();
  run_result result;
  auto started = clock_type::now();
  auto& cancel_state = *opts.cancel.shared();
  int wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  int log_fd = -1;
  int out_fd = -1;
  int pid_fd = -1;
  fds_closer closer{{&wake_fd, &log_fd, &out_fd, &pid_fd}};
  struct unregister_t {
    cancel_handle::state& st;
    int fd;
    ~unregister_t() {
      std::lock_guard<std::mutex> guard{st.mutex};
      auto& w = st.waiters;
      w.erase(std::remove(w.begin(), w.end(), fd), w.end());
    }
  } unregister{cancel_state, wake_fd};
  {
    std::lock_guard<std::mutex> guard{cancel_state.mutex};
    if (cancel_state.cancelled) {
      result.cancelled = true;
      return result;
    }
    cancel_state.waiters.push_back(wake_fd);
  }
  if (!opts.log_file.empty()) {
    int flags
      = O_WRONLY | O_CREAT | O_CLOEXEC | (opts.append_log ? O_APPEND : O_TRUNC);
    log_fd = ::open(opts.log_file.c_str(), flags, 0644);
    if (log_fd < 0) {
      int code = errno;
      throw spawn_error("cannot run '"
                          + (opts.argv.empty() ? std::string{} : opts.argv[0])
                          + "': cannot write the log '" + opts.log_file
                          + "': " + std::strerror(code),
                        code);
    }
  }
  // In the registry (and its record on disk) before anything starts.
  registered_group group{opts.record_folder,
                         opts.mark.empty() ? new_mark(opts.label) : opts.mark};
  auto own_entry = std::string{mark_entry} + group.mark();
  env_pattern marked{own_entry.c_str(), "", true};
  spawn_options so;
  so.argv = opts.argv;
  so.cwd = opts.cwd;
  so.env = opts.env;
  so.in
    = opts.stdin_file.empty() ? stdio::null() : stdio::file(opts.stdin_file);
  so.out = stdio::pipe();
  so.err = stdio::to_stdout();
  child c = group.start(so);
  out_fd = c.stdout_fd;
  ::fcntl(out_fd, F_SETFL, ::fcntl(out_fd, F_GETFL) | O_NONBLOCK);
  result.pid = c.pid;
  pid_t pgid = c.pid;
  // Whatever is left of the group goes, then the group leaves the table,
  // then what left the group: nothing carrying the mark outlives the run
  // (nor its record, removed when `group` goes).
  auto clean_up = [&] {
    ::kill(-pgid, SIGKILL);
    group.forget_group();
    forget_child(pgid);
    clean_group(pgid);
    bool strangers = sweep_orphans(marked);
    // A marked process whose parent escaped the mark is nobody's orphan:
    // found by a scan of every process before the record goes. Such a
    // parent is one of our children (see sweep_orphans).
    if (strangers && !opts.record_folder.empty())
      kill_marked(marked);
  };
  if (opts.on_start) {
    try {
      opts.on_start(c.pid);
    } catch (...) {
      // Nobody will watch the command: stop it before reporting the error.
      clean_up();
      throw;
    }
  }
  pid_fd = open_pidfd(c.pid);
  output_sink sink{log_fd, opts.head_bytes, opts.tail_bytes,
                   opts.on_output ? opts.output_bytes : 0, opts.on_data};
  std::optional<clock_type::time_point> next_output;
  std::optional<clock_type::time_point> timeout_at;
  if (opts.timeout.count() > 0)
    timeout_at = deadline_after(started, opts.timeout);
  std::optional<clock_type::time_point> kill_at; // SIGKILL after SIGTERM
  bool term_sent = false;
  bool kill_sent = false;
  auto terminate = [&](clock_type::time_point now) {
    if (term_sent)
      return;
    term_sent = true;
    ::kill(-pgid, SIGTERM);
    kill_at = deadline_after(now, opts.kill_grace);
  };
  auto kill_now = [&] {
    if (kill_sent)
      return;
    kill_sent = true;
    kill_at.reset();
    ::kill(-pgid, SIGKILL);
  };
  // Watch the output, the leader, the clock and the cancel handle until the
  // leader exits.
  exit_status status;
  for (;;) {
    auto now = clock_type::now();
    if (auto st = peek_exit(pgid)) {
      status = *st;
      break;
    }
    if (timeout_at && now >= *timeout_at && !term_sent) {
      result.timed_out = true;
      terminate(now);
    }
    if (kill_at && now >= *kill_at)
      kill_now();
    pollfd fds[3];
    nfds_t n = 0;
    fds[n++] = {wake_fd, POLLIN, 0};
    int out_index = -1;
    int pid_index = -1;
    if (out_fd >= 0) {
      out_index = static_cast<int>(n);
      fds[n++] = {out_fd, POLLIN, 0};
    }
    if (pid_fd >= 0) {
      pid_index = static_cast<int>(n);
      fds[n++] = {pid_fd, POLLIN, 0};
    }
    int wait_ms
      = poll_timeout(now, {term_sent ? std::nullopt : timeout_at, kill_at});
    // Without a pidfd (old kernels) the leader is polled every 10 ms.
    if (pid_fd < 0)
      wait_ms = wait_ms < 0 ? 10 : std::min(wait_ms, 10);
    int rc = ::poll(fds, n, wait_ms);
    if (rc < 0 && errno != EINTR)
      break; // cannot happen with valid fds; the group is cleaned below
    if (rc <= 0)
      continue;
    if (fds[0].revents != 0) {
      uint64_t count;
      [[maybe_unused]] auto r = ::read(wake_fd, &count, sizeof count);
      std::lock_guard<std::mutex> guard{cancel_state.mutex};
      if (cancel_state.cancelled && !result.timed_out)
        result.cancelled = true;
      if (cancel_state.killed)
        kill_now();
      else if (cancel_state.cancelled)
        terminate(clock_type::now());
    }
    if (out_index >= 0 && fds[out_index].revents != 0) {
      if (!pump(out_fd, sink)) {
        ::close(out_fd);
        out_fd = -1;
      }
      auto at = clock_type::now();
      if (opts.on_output && (!next_output || at >= *next_output)) {
        next_output = deadline_after(at, opts.output_interval);
        opts.on_output(sink.last(opts.output_bytes));
      }
    }
    (void)pid_index; // the leader is checked at the top of the loop
  }
  // The leader is a zombie: whatever is left of its group is killed now (a
  // finished command leaves nothing running), then everything reaped.
  // Forgotten before it is reaped: a pid number cannot be reused while the
  // zombie holds it, so the registry never names somebody else's child.
  result.exit_code = status.code;
  result.signal = status.signal;
  clean_up();
  // Drain the output. Every writer is gone unless a descendant cleared its
  // environment and escaped; wait for such a one only briefly.
  if (out_fd >= 0) {
    auto give_up = clock_type::now() + milliseconds(500);
    for (;;) {
      pollfd p{out_fd, POLLIN, 0};
      int wait_ms = poll_timeout(clock_type::now(), {give_up});
      if (::poll(&p, 1, wait_ms) <= 0)
        break;
      if (!pump(out_fd, sink))
        break;
    }
  }
  sink.finish(result);
  result.duration
    = std::chrono::duration_cast<milliseconds>(clock_type::now() - started);
  return result;
}

} // namespace taskforce::proc
