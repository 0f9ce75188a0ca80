#include "src/proc/mark.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>

namespace taskforce::proc {

// --- the mark ----------------------------------------------------------------

namespace {

std::mutex instance_mutex;
/// "#" + 32 hex digits + "-", written before `tag_owner` names this process.
char tag[40];
/// The process that drew `tag` (a forked child draws its own).
std::atomic<pid_t> tag_owner{0};
uint64_t counter = 0;

void draw_tag() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    auto n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n < 0 && errno != EINTR) {
      // No getrandom (an old kernel): the library's source instead.
      std::random_device rd;
      for (auto& b : bytes)
        b = static_cast<unsigned char>(rd());
      break;
    }
  }
  static const char hex[] = "0123456789abcdef";
  size_t at = 0;
  tag[at++] = '#';
  for (auto b : bytes) {
    tag[at++] = hex[b >> 4];
    tag[at++] = hex[b & 15];
  }
  tag[at++] = '-';
  tag[at] = '\0';
}

} // namespace

std::string new_mark(const std::string& label) {
  pid_t self = ::getpid();
  uint64_t n;
  {
    std::lock_guard<std::mutex> guard{instance_mutex};
    if (tag_owner.load() != self) {
      draw_tag();
      counter = 0;
      tag_owner.store(self);
    }
    n = ++counter;
  }
  return label + tag + std::to_string(n);
}

const char* instance_tag() noexcept {
  return tag_owner.load() == ::getpid() ? tag : "";
}

// --- matching ----------------------------------------------------------------

env_matcher::env_matcher(const env_pattern& pattern) noexcept
  : head_(pattern.head), head_size_(std::strlen(pattern.head)),
    tail_(pattern.tail), tail_size_(std::strlen(pattern.tail)),
    whole_(pattern.whole) {}

void env_matcher::next_entry() noexcept {
  phase_ = phase::head;
  at_ = 0;
}

bool env_matcher::feed(const char* data, size_t size) noexcept {
  for (size_t i = 0; i < size && phase_ != phase::matched; ++i) {
    char c = data[i];
    switch (phase_) {
      case phase::head:
        if (c == '\0') {
          next_entry();
        } else if (at_ < head_size_ && c == head_[at_]) {
          if (++at_ == head_size_) {
            at_ = 0;
            phase_ = whole_           ? phase::end
                     : tail_size_ > 0 ? phase::tail
                                      : phase::matched;
          }
        } else {
          phase_ = phase::skip;
        }
        break;
      case phase::end:
        if (c == '\0')
          phase_ = phase::matched;
        else
          phase_ = phase::skip;
        break;
      case phase::tail:
        // The tail's first character occurs only there, so a mismatch can
        // only restart the match at that character.
        if (c == '\0')
          next_entry();
        else if (c == tail_[at_])
          phase_ = ++at_ == tail_size_ ? phase::matched : phase::tail;
        else
          at_ = c == tail_[0] ? 1 : 0;
        break;
      case phase::skip:
        if (c == '\0')
          next_entry();
        break;
      case phase::matched: break;
    }
  }
  return phase_ == phase::matched;
}

bool env_matcher::finish() noexcept {
  if (phase_ == phase::end)
    phase_ = phase::matched;
  return phase_ == phase::matched;
}

// --- scanning ----------------------------------------------------------------

namespace {

/// An entry as getdents64 returns it.
struct dirent64_record {
  uint64_t ino;
  int64_t off;
  unsigned short reclen;
  unsigned char type;
  char name[1];
};

/// A positive pid from a /proc entry name; 0 for anything else.
pid_t pid_of(const char* name) noexcept {
  if (*name == '\0')
    return 0;
  long value = 0;
  for (const char* p = name; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9' || value > 100'000'000)
      return 0;
    value = value * 10 + (*p - '0');
  }
  return static_cast<pid_t>(value);
}

/// "/proc/<name>/environ" into `out` (at least 64 bytes).
void environ_path(const char* name, char* out) noexcept {
  const char prefix[] = "/proc/";
  const char suffix[] = "/environ";
  size_t at = 0;
  for (const char* p = prefix; *p != '\0'; ++p)
    out[at++] = *p;
  for (const char* p = name; *p != '\0' && at < 40; ++p)
    out[at++] = *p;
  for (const char* p = suffix; *p != '\0'; ++p)
    out[at++] = *p;
  out[at] = '\0';
}

bool path_matches(const char* path, const env_pattern& pattern) noexcept {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false; // gone, or another user's
  env_matcher matcher{pattern};
  char chunk[4096];
  bool hit = false;
  for (;;) {
    auto n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    if (matcher.feed(chunk, static_cast<size_t>(n))) {
      hit = true;
      break;
    }
  }
  ::close(fd);
  return hit || matcher.finish();
}

} // namespace

bool environment_matches(pid_t pid, const env_pattern& pattern) noexcept {
  char name[24];
  char digits[24];
  size_t n = 0;
  auto value = static_cast<unsigned long>(pid);
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value != 0);
  for (size_t i = 0; i < n; ++i)
    name[i] = digits[n - 1 - i];
  name[n] = '\0';
  char path[64];
  environ_path(name, path);
  return path_matches(path, pattern);
}

bool scan_processes(const env_pattern& pattern, found_process found,
                    void* context) noexcept {
  int dir = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0)
    return false;
  pid_t self = ::getpid();
  alignas(8) char entries[8192];
  for (;;) {
    auto n = ::syscall(SYS_getdents64, dir, entries, sizeof entries);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    for (long at = 0; at < n;) {
      auto* e = reinterpret_cast<dirent64_record*>(entries + at);
      at += e->reclen;
      pid_t pid = pid_of(e->name);
      if (pid <= 0 || pid == self)
        continue;
      char path[64];
      environ_path(e->name, path);
      if (path_matches(path, pattern))
        found(pid, context);
    }
  }
  ::close(dir);
  return true;
}

} // namespace taskforce::proc
