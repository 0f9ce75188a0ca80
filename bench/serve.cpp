// bench/serve: how fairly `taskforce serve --listen` shares itself between
// connections (run by hand; not a timed test). One client pipelines
// acquire/release pairs as fast as the server takes them, a second one sends
// a `status` every 20 ms and measures how long each answer takes.
//
//   reading flood: the busy client reads its answers (a busy harness);
//   mute flood:    the busy client never reads (a stuck harness); the server
//                  should stop reading it and stay small.
//
// Prints the busy client's pairs/s, the probe's median, 99th percentile and
// worst latency, and the server's peak VmRSS.
//
// Usage: bench_serve [seconds per part] [path to taskforce]
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/proc/spawn.hpp"

using namespace taskforce;
using clock_type = std::chrono::steady_clock;

namespace {

/// Pairs in flight for the reading flood.
constexpr uint64_t window = 2000;

/// Pairs per write.
constexpr uint64_t batch = 250;

/// Time between two probes.
constexpr auto probe_interval = std::chrono::milliseconds(20);

/// A probe that waits longer than this is recorded as this (and the part
/// goes on).
constexpr auto probe_patience = std::chrono::seconds(30);

uint64_t vm_rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stoull(line.substr(6));
  return 0;
}

int connect_to(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    throw std::runtime_error("cannot connect");
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    auto n = ::write(fd, data.data() + done, data.size() - done);
    if (n <= 0)
      return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string pairs_text(uint64_t first, uint64_t n) {
  std::string buf;
  for (uint64_t k = first; k < first + n; ++k) {
    auto h = std::to_string(k % 1000);
    buf += "{\"id\":" + std::to_string(2 * k)
           + ",\"op\":\"acquire\",\"session\":\"flood\",\"holder\":\"f" + h
           + "\",\"kind\":\"foreground\"}\n{\"id\":" + std::to_string(2 * k + 1)
           + ",\"op\":\"release\",\"holder\":\"f" + h
           + "\",\"reason\":\"completed\"}\n";
  }
  return buf;
}

/// A running server on a free port.
struct server {
  proc::child child;
  uint16_t port = 0;

  explicit server(const std::string& binary) {
    proc::spawn_options o;
    o.argv = {binary, "serve", "--listen", "127.0.0.1:0"};
    o.in = proc::stdio::null();
    o.out = proc::stdio::null();
    o.err = proc::stdio::pipe();
    child = proc::spawn(o);
    std::string text;
    char c;
    while (::read(child.stderr_fd, &c, 1) == 1 && c != '\n')
      text += c;
    auto colon = text.rfind(':');
    if (colon == std::string::npos)
      throw std::runtime_error("the server did not start: " + text);
    port = static_cast<uint16_t>(std::stoi(text.substr(colon + 1)));
    // Keep its standard error drained.
    std::thread([fd = child.stderr_fd] {
      char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    }).detach();
  }

  ~server() {
    ::kill(child.pid, SIGKILL);
    ::waitpid(child.pid, nullptr, 0);
  }
};

struct part_result {
  double pairs_per_s = 0;
  std::vector<double> latencies_ms;
  uint64_t peak_rss_kib = 0;
};

part_result run_part(const std::string& binary, double seconds, bool reading) {
  server srv{binary};
  part_result result;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> answered{0};
  int flood_fd = connect_to(srv.port);
  if (!reading) {
    int small = 4096;
    ::setsockopt(flood_fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  }
  // The busy client's writer.
  std::thread writer([&] {
    uint64_t sent = 0;
    while (!stop) {
      if (reading && sent - answered.load() >= window) {
        std::this_thread::yield();
        continue;
      }
      auto buf = pairs_text(sent, batch);
      sent += batch;
      if (reading) {
        if (!write_all(flood_fd, buf))
          return;
        continue;
      }
      // A mute client: write without blocking forever.
      size_t done = 0;
      while (!stop && done < buf.size()) {
        pollfd p{flood_fd, POLLOUT, 0};
        if (::poll(&p, 1, 100) <= 0)
          continue;
        auto n = ::send(flood_fd, buf.data() + done, buf.size() - done,
                        MSG_DONTWAIT);
        if (n > 0)
          done += static_cast<size_t>(n);
      }
    }
  });
  // The busy client's reader (reading flood only): counts release answers.
  std::thread reader([&] {
    if (!reading)
      return;
    std::string pending;
    char chunk[1 << 16];
    uint64_t releases = 0;
    while (!stop) {
      pollfd p{flood_fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0)
        continue;
      auto n = ::read(flood_fd, chunk, sizeof chunk);
      if (n <= 0)
        return;
      pending.append(chunk, static_cast<size_t>(n));
      size_t pos = 0;
      for (;;) {
        auto nl = pending.find('\n', pos);
        if (nl == std::string::npos)
          break;
        if (pending.compare(pos, 4, "{\"id") == 0
            && pending.find("\"released\"", pos) < nl)
          ++releases;
        pos = nl + 1;
      }
      pending.erase(0, pos);
      answered.store(releases);
    }
  });
  // The probe.
  int probe_fd = connect_to(srv.port);
  auto t0 = clock_type::now();
  auto end = t0 + std::chrono::duration<double>(seconds);
  std::string pending;
  uint64_t n = 0;
  while (clock_type::now() < end) {
    auto id = "p" + std::to_string(n++);
    auto sent_at = clock_type::now();
    write_all(probe_fd, "{\"id\":\"" + id + "\",\"op\":\"status\"}\n");
    bool got = false;
    while (!got && clock_type::now() - sent_at < probe_patience) {
      if (auto nl = pending.find('\n'); nl != std::string::npos) {
        got = pending.rfind("{\"id\":\"" + id + "\"", 0) == 0;
        pending.erase(0, nl + 1);
        continue;
      }
      pollfd p{probe_fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0)
        continue;
      char chunk[65536];
      auto r = ::read(probe_fd, chunk, sizeof chunk);
      if (r <= 0)
        break;
      pending.append(chunk, static_cast<size_t>(r));
    }
    result.latencies_ms.push_back(
      std::chrono::duration<double, std::milli>(clock_type::now() - sent_at)
        .count());
    result.peak_rss_kib
      = std::max(result.peak_rss_kib, vm_rss_kib(srv.child.pid));
    std::this_thread::sleep_for(probe_interval);
  }
  auto secs = std::chrono::duration<double>(clock_type::now() - t0).count();
  result.pairs_per_s = static_cast<double>(answered.load()) / secs;
  stop = true;
  ::shutdown(flood_fd, SHUT_RDWR);
  writer.join();
  reader.join();
  ::close(flood_fd);
  ::close(probe_fd);
  return result;
}

void print(const char* name, part_result& r) {
  auto& xs = r.latencies_ms;
  std::sort(xs.begin(), xs.end());
  auto at = [&](double q) {
    return xs.empty()
             ? 0.0
             : xs[std::min(xs.size() - 1, static_cast<size_t>(q * xs.size()))];
  };
  std::printf("  %-14s busy client %9.0f pairs/s; probe status: median %8.2f "
              "ms, p99 %8.2f ms, worst %8.2f ms (%zu probes); peak VmRSS %6llu "
              "KiB\n",
              name, r.pairs_per_s, at(0.5), at(0.99),
              xs.empty() ? 0 : xs.back(), xs.size(),
              static_cast<unsigned long long>(r.peak_rss_kib));
}

} // namespace

int main(int argc, char** argv) {
  double seconds = argc > 1 ? std::strtod(argv[1], nullptr) : 5.0;
  std::string binary = argc > 2 ? argv[2] : TASKFORCE_BINARY;
  ::signal(SIGPIPE, SIG_IGN);
  try {
    std::printf("bench serve: %s, %.1f s per part\n", binary.c_str(), seconds);
    auto reading = run_part(binary, seconds, true);
    print("reading flood", reading);
    auto mute = run_part(binary, seconds, false);
    print("mute flood", mute);
    auto median = [](std::vector<double>& xs) {
      return xs.empty() ? 0.0 : xs[xs.size() / 2];
    };
    std::printf("bench serve: reading_pairs_per_s=%.0f reading_probe_median_ms="
                "%.2f reading_probe_worst_ms=%.2f mute_probe_median_ms=%.2f "
                "mute_probe_worst_ms=%.2f mute_peak_rss_kib=%llu\n",
                reading.pairs_per_s, median(reading.latencies_ms),
                reading.latencies_ms.empty() ? 0 : reading.latencies_ms.back(),
                median(mute.latencies_ms),
                mute.latencies_ms.empty() ? 0 : mute.latencies_ms.back(),
                static_cast<unsigned long long>(mute.peak_rss_kib));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench serve: %s\n", e.what());
    return 1;
  }
  return 0;
}
