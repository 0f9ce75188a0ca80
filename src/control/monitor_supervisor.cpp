#include "src/control/monitor_supervisor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "src/control/error.hpp"
#include "src/proc/mark.hpp"
#include "src/proc/run.hpp"
#include "src/store/ledger.hpp"

extern char** environ;

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace taskforce::control {

namespace {

/// How often the commands without a server look again.
constexpr auto poll_every = 50ms;

store::ledger open_ledger(const monitor_place& place) {
  std::error_code ec;
  fs::create_directories(place.ledger.parent_path(), ec);
  return store::ledger::open(place.ledger);
}

/// Starts `program monitor supervise ID …` in a session of its own, its
/// standard streams on /dev/null, inheriting `lock_fd`.
pid_t spawn_supervisor(const std::string& program, const monitor_place& place,
                       const std::string& id, const std::string& owner,
                       int lock_fd) {
  std::vector<std::string> args{program,     "monitor",
                                "supervise", id,
                                "--owner",   owner,
                                "--lock-fd", std::to_string(lock_fd),
                                "--repo",    place.repository.string()};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  for (int fd = 0; fd < 3; ++fd)
    posix_spawn_file_actions_addopen(&fa, fd, "/dev/null",
                                     fd == 0 ? O_RDONLY : O_WRONLY, 0);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&at, &none);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGHUP})
    sigaddset(&defaults, s);
  posix_spawnattr_setsigdefault(&at, &defaults);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK
                                  | POSIX_SPAWN_SETSIGDEF);
  // Without the mark of a run this command may be part of: the supervisor
  // is meant to outlive it, and is not that run's leftover.
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, proc::mark_entry, std::strlen(proc::mark_entry)) != 0)
      env.push_back(*e);
  env.push_back(nullptr);
  pid_t pid = -1;
  int rc
    = posix_spawn(&pid, program.c_str(), &fa, &at, argv.data(), env.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (rc != 0)
    throw control_error(control_errc::unavailable,
                        "cannot start the supervisor " + program + ": "
                          + std::strerror(rc));
  return pid;
}

monitor_view view_of(monitor_store& store, const std::string& id) {
  return store.view(store.require(id), {});
}

} // namespace

monitor_view start_supervised(const monitor_place& place, const new_monitor& m,
                              uint64_t max_monitors, const std::string& program,
                              std::chrono::milliseconds settle) {
  auto db = open_ledger(place);
  monitor_store store{db, place.repository};
  auto owner = new_owner_id("supervisor");
  // Taken before the row exists and handed on to the supervisor: the row
  // is never without a live owner.
  owner_lock lock{place.repository, owner, ::getpid()};
  store.reconcile({}, store::wall_clock_ms());
  auto row = store.create(m, owner, max_monitors, store::wall_clock_ms());
  pid_t pid = -1;
  try {
    pid
      = spawn_supervisor(program, place, row.id, owner, lock.inheritable_fd());
  } catch (const control_error& e) {
    store.finish(row.id, monitor_state::failed, std::nullopt,
                 store::wall_clock_ms(), e.what());
    throw;
  }
  // The supervisor is not our child to wait for: it is in a session of
  // its own and outlives this command. Reaping it would need a wait; a
  // zombie of it lasts only until this command exits.
  (void)pid;
  auto give_up = std::chrono::steady_clock::now() + settle;
  for (;;) {
    auto now = store.require(row.id);
    if (now.pid || ended(now.state)
        || std::chrono::steady_clock::now() > give_up)
      return store.view(now, {});
    std::this_thread::sleep_for(poll_every);
  }
}

namespace {

/// Set by the signal thread: a kill was asked for.
std::atomic<bool> kill_asked{false};

} // namespace

int supervise(const monitor_place& place, const std::string& id,
              const std::string& owner, int lock_fd,
              std::chrono::milliseconds kill_grace) {
  // SIGTERM, SIGINT and SIGHUP are a kill, taken by one thread with
  // sigwait (a handler could not use the cancel handle's mutex).
  sigset_t stops;
  sigemptyset(&stops);
  for (int s : {SIGTERM, SIGINT, SIGHUP})
    sigaddset(&stops, s);
  pthread_sigmask(SIG_BLOCK, &stops, nullptr);
  proc::cancel_handle cancel;
  std::thread([stops, cancel] {
    int sig = 0;
    while (sigwait(&stops, &sig) != 0)
      ;
    kill_asked = true;
    cancel.kill();
  }).detach();
  // The lock is this process's alone: what it runs must not keep it (nor
  // the monitor looking live) after this process is gone.
  ::fcntl(lock_fd, F_SETFD, ::fcntl(lock_fd, F_GETFD) | FD_CLOEXEC);
  owner_lock::write_pid(lock_fd, ::getpid());
  auto db = open_ledger(place);
  monitor_store store{db, place.repository};
  auto row = store.require(id);
  if (row.owner != owner || row.state != monitor_state::running)
    return 2;
  auto log = monitor_log_file(place.repository, id);
  std::error_code ec;
  fs::create_directories(log.parent_path(), ec);
  proc::run_options ro;
  ro.argv = {"/bin/sh", "-c", row.command};
  auto top = fs::canonical(place.repository);
  ro.cwd = (row.cwd == "." ? top : top / row.cwd).string();
  ro.log_file = log.string();
  ro.tail_bytes = 4096;
  ro.timeout = std::chrono::milliseconds(row.timeout_ms);
  ro.kill_grace = kill_grace;
  ro.cancel = cancel;
  ro.label = "monitor/" + id + "/";
  ro.on_start = [&](pid_t pid) {
    store.set_pid(id, pid, store::wall_clock_ms());
  };
  std::optional<wake_matcher> matcher;
  if (row.wake_pattern)
    matcher.emplace(*row.wake_pattern);
  if (matcher)
    ro.on_data = [&](std::string_view piece) {
      if (!matcher->matched() && matcher->feed(piece))
        store.mark_ready(id, store::wall_clock_ms());
    };
  monitor_state end = monitor_state::done;
  std::optional<int64_t> code;
  std::string reason;
  try {
    auto r = proc::run(ro);
    if (kill_asked || r.cancelled) {
      end = monitor_state::killed;
      reason = "killed: " + r.describe();
    } else if (r.timed_out) {
      end = monitor_state::timeout;
      reason = r.describe();
    } else if (r.signal == 0) {
      code = r.exit_code;
    } else {
      reason = r.describe();
    }
  } catch (const std::exception& e) {
    end = monitor_state::failed;
    reason = std::string{"it could not start: "} + e.what();
  }
  store.finish(id, end, code, store::wall_clock_ms(), reason);
  return 0;
}

std::vector<monitor_view> monitor_list(const monitor_place& place) {
  auto db = open_ledger(place);
  monitor_store store{db, place.repository};
  store.reconcile({}, store::wall_clock_ms());
  std::vector<monitor_view> all;
  for (auto& row : store.list())
    all.push_back(store.view(row, {}));
  return all;
}

monitor_view monitor_status(const monitor_place& place, const std::string& id) {
  auto db = open_ledger(place);
  monitor_store store{db, place.repository};
  store.reconcile({}, store::wall_clock_ms());
  return view_of(store, id);
}

std::pair<std::string, monitor_view>
monitor_wait(const monitor_place& place, const std::string& id,
             std::chrono::milliseconds timeout) {
  auto db = open_ledger(place);
  monitor_store store{db, place.repository};
  auto give_up = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    store.reconcile({}, store::wall_clock_ms());
    auto v = view_of(store, id);
    if (v.row.state == monitor_state::unavailable)
      return {"unavailable", v};
    if (ended(v.row.state))
      return {"exit", v};
    if (v.ready)
      return {"ready", v};
    if (std::chrono::steady_clock::now() >= give_up)
      return {"timeout", v};
    std::this_thread::sleep_for(poll_every);
  }
}

monitor_view monitor_kill(const monitor_place& place, const std::string& id,
                          std::chrono::milliseconds settle) {
  auto db = open_ledger(place);
  monitor_store store{db, place.repository};
  store.reconcile({}, store::wall_clock_ms());
  auto v = view_of(store, id);
  if (v.row.state == monitor_state::unavailable)
    throw control_error(control_errc::unavailable,
                        "monitor " + id
                          + " cannot be killed: it was running when its "
                            "owner went away, and its process is not "
                            "controllable from here ("
                          + v.reason + ")");
  if (ended(v.row.state))
    return v;
  if (v.row.owner.rfind("supervisor:", 0) != 0)
    throw control_error(control_errc::unavailable,
                        "monitor " + id + " is run by a server (" + v.row.owner
                          + "); ask the server to kill it");
  auto pid = owner_lock::pid_of(place.repository, v.row.owner);
  if (pid <= 0 || !lock_held(owner_lock_file(place.repository, v.row.owner)))
    throw control_error(control_errc::unavailable,
                        "monitor " + id + ": its supervisor is gone");
  ::kill(static_cast<pid_t>(pid), SIGTERM);
  auto give_up = std::chrono::steady_clock::now() + settle;
  for (;;) {
    store.reconcile({}, store::wall_clock_ms());
    auto now = view_of(store, id);
    if (ended(now.row.state) || std::chrono::steady_clock::now() > give_up)
      return now;
    std::this_thread::sleep_for(poll_every);
  }
}

} // namespace taskforce::control
