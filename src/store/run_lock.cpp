#include "src/store/run_lock.hpp"

#include <cerrno>
#include <string>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

namespace taskforce::store {

namespace {

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// The whole file, as one lock range.
struct flock whole_file(short type) {
  struct flock fl {};
  fl.l_type = type;
  fl.l_whence = SEEK_SET;
  fl.l_start = 0;
  fl.l_len = 0;
  fl.l_pid = 0; // OFD locks require 0
  return fl;
}

int open_lock_file(const std::filesystem::path& file, bool create) {
  if (create && file.has_parent_path()) {
    std::error_code ec;
    std::filesystem::create_directories(file.parent_path(), ec);
  }
  // Close-on-exec: a worker spawned by the driver must not keep the lock
  // alive after the driver dies.
  int flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0);
  int fd;
  do {
    fd = ::open(file.c_str(), flags, 0644);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// The holder's record: "<pid>\n<run id>\n".
run_lock_holder read_holder(int fd) {
  run_lock_holder h;
  char buf[512];
  auto n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0)
    return h;
  std::string text(buf, static_cast<size_t>(n));
  auto nl = text.find('\n');
  try {
    h.pid = std::stoi(text.substr(0, nl));
  } catch (...) {
    h.pid = 0;
  }
  if (nl != std::string::npos) {
    auto rest = text.substr(nl + 1);
    auto end = rest.find('\n');
    h.run_id = rest.substr(0, end);
  }
  return h;
}

void write_holder(int fd, const std::string& run_id) {
  auto text = std::to_string(::getpid()) + "\n" + run_id + "\n";
  if (::ftruncate(fd, 0) != 0)
    throw_errno("cannot truncate the run lock file");
  size_t done = 0;
  while (done < text.size()) {
    auto n = ::pwrite(fd, text.data() + done, text.size() - done,
                      static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw_errno("cannot write the run lock file");
    }
    done += static_cast<size_t>(n);
  }
}

} // namespace

std::string describe(const run_lock_holder& x) {
  std::string who
    = x.pid > 0 ? "process " + std::to_string(x.pid) : "another process";
  if (x.run_id.empty())
    return "a run is being driven by " + who;
  return "run " + x.run_id + " is being driven by " + who;
}

std::variant<run_lock, run_lock_holder>
run_lock::try_acquire(const std::filesystem::path& file,
                      const std::string& run_id) {
  int fd = open_lock_file(file, true);
  if (fd < 0)
    throw_errno("cannot open the run lock " + file.string());
  auto fl = whole_file(F_WRLCK);
  if (::fcntl(fd, F_OFD_SETLK, &fl) != 0) {
    auto err = errno;
    if (err != EAGAIN && err != EACCES) {
      ::close(fd);
      errno = err;
      throw_errno("cannot lock " + file.string());
    }
    // Held by someone else. The holder writes its record right after
    // taking the lock; give it a moment when we raced that write.
    run_lock_holder h = read_holder(fd);
    for (int i = 0; i < 20 && h.pid == 0; ++i) {
      ::usleep(5000);
      h = read_holder(fd);
    }
    ::close(fd);
    return h;
  }
  run_lock lock{fd};
  write_holder(fd, run_id);
  return lock;
}

std::optional<run_lock_holder>
run_lock::holder(const std::filesystem::path& file) {
  int fd = open_lock_file(file, false);
  if (fd < 0) {
    if (errno == ENOENT)
      return std::nullopt;
    throw_errno("cannot open the run lock " + file.string());
  }
  // F_OFD_GETLK only asks; it never takes the lock, so it cannot make a
  // process that is acquiring it fail.
  auto fl = whole_file(F_WRLCK);
  if (::fcntl(fd, F_OFD_GETLK, &fl) != 0) {
    auto err = errno;
    ::close(fd);
    errno = err;
    throw_errno("cannot query the run lock " + file.string());
  }
  std::optional<run_lock_holder> result;
  if (fl.l_type != F_UNLCK)
    result = read_holder(fd);
  ::close(fd);
  return result;
}

run_lock::run_lock(run_lock&& other) noexcept
  : fd_(std::exchange(other.fd_, -1)) {}

run_lock& run_lock::operator=(run_lock&& other) noexcept {
  if (this != &other) {
    release();
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

run_lock::~run_lock() {
  release();
}

void run_lock::set_run(const std::string& run_id) {
  if (fd_ >= 0)
    write_holder(fd_, run_id);
}

void run_lock::release() {
  if (fd_ < 0)
    return;
  // Emptying the record first keeps a stale pid from being reported; the
  // lock itself goes with the last descriptor of the open file description.
  if (::ftruncate(fd_, 0) != 0) {
    // Nothing to do: the next holder rewrites the record anyway.
  }
  ::close(fd_);
  fd_ = -1;
}

} // namespace taskforce::store
