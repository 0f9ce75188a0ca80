#include "src/proc/registry.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace taskforce::proc {

// --- children ----------------------------------------------------------------

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::unordered_set<pid_t>& registered_children() {
  static std::unordered_set<pid_t> pids;
  return pids;
}

void forget_child(pid_t pid) {
  std::lock_guard<std::mutex> guard{registry_mutex()};
  registered_children().erase(pid);
}

// --- the table of running groups ---------------------------------------------

namespace {

/// A slot holds 0 (free), -1 (taken, no group yet or any more) or a group.
/// Chunks are appended and never freed, so a signal handler can walk them
/// at any time.
struct chunk {
  static constexpr size_t size = 64;
  std::atomic<pid_t> slots[size] = {};
  std::atomic<chunk*> next{nullptr};
};

chunk first_chunk;
std::mutex grow_mutex;
/// Set by kill_all_running(): no start from then on.
std::atomic<bool> closing{false};
/// Starts between their check of `closing` and the group in its slot.
std::atomic<int> starting{0};

/// The slot of every registered group by its mark. The lock also orders
/// kill_running() before forget_group(): a group read from its slot under
/// it is not reaped yet.
std::mutex marks_mutex;
std::map<std::string, std::atomic<pid_t>*> by_mark;

std::atomic<pid_t>* take_slot() {
  for (;;) {
    for (chunk* c = &first_chunk; c != nullptr; c = c->next.load()) {
      for (auto& slot : c->slots) {
        pid_t expected = 0;
        if (slot.load() == 0 && slot.compare_exchange_strong(expected, -1))
          return &slot;
      }
    }
    // Every slot is taken: one more chunk (unless another thread just
    // added one), then look again.
    std::lock_guard<std::mutex> guard{grow_mutex};
    chunk* last = &first_chunk;
    while (chunk* n = last->next.load())
      last = n;
    bool full = true;
    for (auto& slot : last->slots)
      full = full && slot.load() != 0;
    if (full)
      last->next.store(new chunk);
  }
}

/// Blocks the signals a driver handles on the calling thread, so that a
/// handler never runs on a thread in the middle of a start (it would wait
/// for itself).
struct signals_blocked {
  sigset_t old;
  signals_blocked() {
    sigset_t set;
    sigemptyset(&set);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT})
      sigaddset(&set, s);
    ::pthread_sigmask(SIG_BLOCK, &set, &old);
  }
  ~signals_blocked() {
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
};

std::string errno_text(int code) {
  return std::strerror(code);
}

/// Writes all of `text` to `fd`; false with errno on failure.
bool write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    auto n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

/// Writes the record: the mark on its first line, complete before the
/// command can start.
///
/// It is written, not fsync'd (nor its folder), and that is all the rule
/// needs. A record is there for the next taskforce process to find what a
/// crash of this one left running. A process outlives only the crash of
/// another process, never its kernel's: when this process dies (a kill, an
/// abort, the OOM killer) the kernel still holds the file write() created,
/// and every later process sees it. When the kernel itself goes down (a
/// panic, a power loss), everything the record could name dies with it: a
/// record lost then loses nothing, and one cut short (empty, or part of a
/// mark) is removed by recover_leftovers without killing anybody, since
/// no process is left from before the crash to carry its mark. An fsync
/// per start bought durability against that one failure and cost two
/// disk flushes per command.
void write_record(const std::string& folder, const std::string& file,
                  const std::string& mark) {
  auto fail = [&](int code) {
    throw spawn_error(
      "cannot record a process in '" + folder + "': " + errno_text(code), code);
  };
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec)
    fail(ec.value());
  int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0)
    fail(errno);
  bool written = write_all(fd, mark + "\n");
  int code = errno;
  if (::close(fd) != 0 && written) {
    written = false;
    code = errno;
  }
  if (!written) {
    ::unlink(file.c_str());
    fail(code);
  }
}

} // namespace

registered_group::registered_group(const std::string& record_folder,
                                   std::string mark)
  : slot_(take_slot()), mark_(std::move(mark)) {
  try {
    if (!record_folder.empty()) {
      // The file is named after the unique end of the mark.
      auto unique = mark_.substr(mark_.rfind('#') + 1);
      auto file = (fs::path{record_folder} / unique).string();
      write_record(record_folder, file, mark_);
      record_ = file;
    }
    std::lock_guard<std::mutex> guard{marks_mutex};
    by_mark[mark_] = slot_;
  } catch (...) {
    if (!record_.empty())
      ::unlink(record_.c_str());
    slot_->store(0);
    throw;
  }
}

registered_group::~registered_group() {
  {
    std::lock_guard<std::mutex> guard{marks_mutex};
    auto it = by_mark.find(mark_);
    if (it != by_mark.end() && it->second == slot_)
      by_mark.erase(it);
  }
  slot_->store(0);
  if (!record_.empty())
    ::unlink(record_.c_str());
}

child registered_group::start(spawn_options opts) {
  opts.env.emplace_back(mark_variable, mark_);
  child c;
  {
    signals_blocked blocked;
    // Announced before `closing` is checked: kill_all_running() sets
    // `closing` before it reads `starting`, so either this start sees
    // `closing`, or the handler sees the start and waits for it.
    starting.fetch_add(1);
    struct done_t {
      ~done_t() {
        starting.fetch_sub(1);
      }
    } done;
    if (closing.load())
      throw spawn_error("cannot run '"
                          + (opts.argv.empty() ? std::string{} : opts.argv[0])
                          + "': taskforce is stopping",
                        ECANCELED);
    c = spawn(opts);
    slot_->store(c.pid);
  }
  // The group, for a recovery that finds a marked process still in it;
  // not synced (only a crash of the kernel loses it, and no process
  // survives that).
  if (!record_.empty()) {
    int fd = ::open(record_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd >= 0) {
      write_all(fd, std::to_string(c.pid) + "\n");
      ::close(fd);
    }
  }
  return c;
}

void registered_group::forget_group() noexcept {
  std::lock_guard<std::mutex> guard{marks_mutex};
  slot_->store(-1);
}

bool kill_running(const std::string& mark) {
  std::lock_guard<std::mutex> guard{marks_mutex};
  auto it = by_mark.find(mark);
  if (it == by_mark.end())
    return false;
  pid_t pgid = it->second->load();
  if (pgid <= 0)
    return false;
  return ::kill(-pgid, SIGKILL) == 0;
}

// --- kill everything (signal handler) ----------------------------------------

namespace {

void sleep_briefly() noexcept {
  timespec ts{0, 1'000'000};
  ::nanosleep(&ts, nullptr);
}

void kill_found(pid_t pid, void* count) noexcept {
  ::kill(pid, SIGKILL);
  ++*static_cast<int*>(count);
}

} // namespace

void kill_all_running() noexcept {
  int saved_errno = errno;
  closing.store(true);
  // A start in progress on another thread finishes in microseconds; a
  // bounded wait (never for ourselves: the signals are blocked there).
  for (int i = 0; i < 1000 && starting.load() > 0; ++i)
    sleep_briefly();
  for (chunk* c = &first_chunk; c != nullptr; c = c->next.load())
    for (auto& slot : c->slots) {
      pid_t pgid = slot.load();
      if (pgid > 0)
        ::kill(-pgid, SIGKILL);
    }
  // What left its group: found by this process's mark, round after round
  // (a dying process shows its environment a little longer).
  const char* tag = instance_tag();
  if (*tag != '\0') {
    env_pattern pattern{mark_entry, tag, false};
    for (int round = 0; round < 50; ++round) {
      int found = 0;
      if (!scan_processes(pattern, kill_found, &found) || found == 0)
        break;
      sleep_briefly();
    }
  }
  errno = saved_errno;
}

// --- finding leftovers -------------------------------------------------------

bool is_zombie(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size()
         && line[close + 2] == 'Z';
}

namespace {

using clock_type = std::chrono::steady_clock;

void collect(pid_t pid, void* found) noexcept {
  try {
    static_cast<std::vector<pid_t>*>(found)->push_back(pid);
  } catch (...) {
    ::kill(pid, SIGKILL); // out of memory: killed all the same
  }
}

} // namespace

kill_report kill_marked(const env_pattern& pattern, pid_t group) {
  kill_report report;
  std::set<pid_t> killed;
  auto give_up = clock_type::now() + std::chrono::seconds(5);
  // A dying process stops showing its environment before it is a zombie,
  // so the scan ends first; then each one is waited for until it is gone or
  // a zombie (those we adopted are ours to reap; init reaps the others).
  std::vector<pid_t> found;
  for (;;) {
    found.clear();
    scan_processes(pattern, collect, &found);
    if (found.empty() || clock_type::now() > give_up)
      break;
    if (group > 0)
      for (pid_t pid : found)
        if (::getpgid(pid) == group) {
          ::kill(-group, SIGKILL);
          break;
        }
    for (pid_t pid : found)
      if (::kill(pid, SIGKILL) == 0)
        killed.insert(pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  report.all_gone = found.empty();
  for (pid_t pid : killed) {
    for (;;) {
      {
        std::lock_guard<std::mutex> guard{registry_mutex()};
        if (registered_children().count(pid) == 0)
          ::waitpid(pid, nullptr, WNOHANG);
      }
      if (::kill(pid, 0) != 0 || is_zombie(pid))
        break;
      if (clock_type::now() > give_up) {
        report.all_gone = false;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  report.killed = killed.size();
  return report;
}

size_t recover_leftovers(const std::string& record_folder) {
  std::error_code ec;
  if (record_folder.empty() || !fs::is_directory(record_folder, ec))
    return 0;
  size_t killed = 0;
  for (auto& e : fs::directory_iterator(record_folder, ec)) {
    if (!e.is_regular_file(ec))
      continue;
    std::ifstream in(e.path());
    std::string mark, group_line;
    std::getline(in, mark);
    std::getline(in, group_line);
    char* end = nullptr;
    long group = std::strtol(group_line.c_str(), &end, 10);
    if (end == group_line.c_str() || *end != '\0' || group <= 1)
      group = 0;
    // A record cut short was never followed by a start: nothing to kill.
    bool done = true;
    if (mark.find('#') != std::string::npos) {
      auto head = std::string{mark_entry} + mark;
      auto report
        = kill_marked({head.c_str(), "", true}, static_cast<pid_t>(group));
      killed += report.killed;
      done = report.all_gone; // a survivor's record stays for next time
    }
    if (done)
      fs::remove(e.path(), ec);
  }
  return killed;
}

size_t kill_leftovers(const std::string& label_prefix) {
  if (label_prefix.empty())
    return 0;
  auto head = std::string{mark_entry} + label_prefix;
  return kill_marked({head.c_str(), "", false}).killed;
}

} // namespace taskforce::proc
