// bench/pool: admission throughput, printed as figures and a ratio measured
// in the same run (run by hand; not a timed test).
//
// 1. actor: 8 client actors each run acquire+release pairs against the pool
//    actor (2 permits, one shared pool), so a queue forms on every pair.
// 2. mutex: the same workload on a FIFO semaphore built from a mutex and a
//    condition variable, 8 threads; each holder yields once while holding so
//    that a queue forms (without it, the hold time is ~0 and nobody waits).
// 3. protocol: a child `taskforce serve --stdio`, driven over its pipes with
//    pipelined acquire/release request lines.
//
// Usage: bench_pool [pairs_per_client] [protocol_pairs]
// [actor|bare|mutex|protocol]
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <caf/all.hpp>

#include "actors/pool.hpp"
#include "actors/runtime_config.hpp"
#include "src/proc/spawn.hpp"

using namespace taskforce;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int clients = 8;
constexpr uint64_t permits = 2;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

// -- 1. the pool actor
// ------------------------------------------------------------

/// One client: acquire, then release, `n` times, then report to `done`.
template<class Handle>
caf::behavior generic_client(caf::event_based_actor* self, Handle pool,
                             std::string holder, uint64_t n, caf::actor done) {
  auto left = std::make_shared<uint64_t>(n);
  auto step = std::make_shared<std::function<void()>>();
  *step = [=] {
    if (*left == 0) {
      self->send(done, caf::ok_atom::value);
      self->quit();
      return;
    }
    --*left;
    acquire_request req;
    req.session = "bench";
    req.holder = holder;
    self->request(pool, caf::infinite, acquire_atom::value, req)
      .then(
        [=](const grant&) {
          self
            ->request(pool, caf::infinite, release_atom::value, holder,
                      release_reason::completed)
            .then(
              [=](bool) {
                (*step)();
              },
              [=](caf::error& e) {
                std::cerr << "release failed: " << to_string(e) << '\n';
                self->quit();
              });
        },
        [=](caf::error& e) {
          std::cerr << "acquire failed: " << to_string(e) << '\n';
          self->quit();
        });
  };
  (*step)();
  return {[](caf::ok_atom) {}};
}

double bench_actor(uint64_t pairs_per_client) {
  size_t threads = 0; // runtime_config's default
  if (auto env = std::getenv("BENCH_THREADS"))
    threads = std::strtoull(env, nullptr, 10);
  runtime_config cfg{threads, false};
  if (auto env = std::getenv("BENCH_POLICY"))
    cfg.set("scheduler.policy", caf::atom_from_string(env));
  caf::actor_system sys{cfg};
  pool_config pcfg;
  pcfg.max_parallel = permits;
  pcfg.mode = pool_mode::global;
  auto pool = spawn_pool(sys, pcfg);
  caf::scoped_actor self{sys};
  auto t0 = clock_type::now();
  for (int i = 0; i < clients; ++i)
    sys.spawn(generic_client<pool_actor>, pool, "client-" + std::to_string(i),
              pairs_per_client, caf::actor{self});
  for (int i = 0; i < clients; ++i)
    self->receive([](caf::ok_atom) {});
  auto secs = seconds_since(t0);
  self->send_exit(pool, caf::exit_reason::user_shutdown);
  return clients * pairs_per_client / secs;
}

// -- 1b. a bare FIFO semaphore actor, to show what the pool's rules cost
// --------

using bare_semaphore = caf::typed_actor<
  caf::replies_to<acquire_atom, acquire_request>::with<grant>,
  caf::replies_to<release_atom, std::string, release_reason>::with<bool>>;

struct bare_state {
  uint64_t free = permits;
  std::deque<caf::typed_response_promise<grant>> waiting;
};

bare_semaphore::behavior_type
bare(bare_semaphore::stateful_pointer<bare_state> self) {
  return {
    [=](acquire_atom, const acquire_request&) -> caf::result<grant> {
      auto& st = self->state;
      if (st.free > 0) {
        --st.free;
        return grant{};
      }
      st.waiting.push_back(self->make_response_promise<grant>());
      return st.waiting.back();
    },
    [=](release_atom, const std::string&, release_reason) {
      auto& st = self->state;
      if (st.waiting.empty()) {
        ++st.free;
      } else {
        // Direct hand-off: the permit goes to the oldest waiter.
        st.waiting.front().deliver(grant{});
        st.waiting.pop_front();
      }
      return true;
    },
  };
}

double bench_bare_actor(uint64_t pairs_per_client) {
  runtime_config cfg{0, false};
  caf::actor_system sys{cfg};
  auto sem = sys.spawn(bare);
  caf::scoped_actor self{sys};
  auto t0 = clock_type::now();
  for (int i = 0; i < clients; ++i)
    sys.spawn(generic_client<bare_semaphore>, sem,
              "client-" + std::to_string(i), pairs_per_client,
              caf::actor{self});
  for (int i = 0; i < clients; ++i)
    self->receive([](caf::ok_atom) {});
  auto secs = seconds_since(t0);
  self->send_exit(sem, caf::exit_reason::user_shutdown);
  return clients * pairs_per_client / secs;
}

// -- 2. the mutex + condition variable baseline
// ----------------------------------

/// A FIFO semaphore: tickets in arrival order, each waiter its own turn.
class fifo_semaphore {
 public:
  explicit fifo_semaphore(uint64_t n) : free_(n) {}

  void acquire() {
    std::unique_lock<std::mutex> guard{mtx_};
    auto ticket = next_ticket_++;
    // No barging: a free permit goes to the oldest waiter first.
    cv_.wait(guard, [&] {
      return free_ > 0 && ticket == serving_;
    });
    --free_;
    ++serving_;
    if (free_ > 0)
      cv_.notify_all();
  }

  void release() {
    std::lock_guard<std::mutex> guard{mtx_};
    ++free_;
    cv_.notify_all();
  }

 private:
  std::mutex mtx_;
  std::condition_variable cv_;
  uint64_t free_;
  uint64_t next_ticket_ = 0;
  uint64_t serving_ = 0;
};

double bench_mutex(uint64_t pairs_per_client) {
  fifo_semaphore sem{permits};
  std::vector<std::thread> threads;
  auto t0 = clock_type::now();
  for (int i = 0; i < clients; ++i)
    threads.emplace_back([&] {
      for (uint64_t k = 0; k < pairs_per_client; ++k) {
        sem.acquire();
        // The holder gives up its CPU once while holding, so the others
        // queue up as they do on the actor (where every client's next
        // acquire is already waiting in the pool's mailbox).
        std::this_thread::yield();
        sem.release();
      }
    });
  for (auto& t : threads)
    t.join();
  return clients * pairs_per_client / seconds_since(t0);
}

// -- 3. the protocol over stdio
// -----------------------------------------------------

double bench_protocol(uint64_t pairs) {
  char cfg_path[] = "/tmp/taskforce-bench-XXXXXX";
  int cfg_fd = ::mkstemp(cfg_path);
  std::string cfg_text = "{\"pool\": {\"maxParallel\": 2}}";
  if (cfg_fd < 0
      || ::write(cfg_fd, cfg_text.data(), cfg_text.size())
           != static_cast<ssize_t>(cfg_text.size()))
    throw std::runtime_error("cannot write the bench config");
  ::close(cfg_fd);
  proc::spawn_options o;
  o.argv = {TASKFORCE_BINARY, "--config", cfg_path, "serve", "--stdio"};
  o.in = proc::stdio::pipe();
  o.out = proc::stdio::pipe();
  o.err = proc::stdio::inherit();
  auto child = proc::spawn(o);
  constexpr uint64_t window = 2000; // pairs in flight
  constexpr uint64_t batch = 250;
  std::atomic<uint64_t> answered{0};
  auto t0 = clock_type::now();
  std::thread writer([&] {
    std::string buf;
    uint64_t sent = 0;
    while (sent < pairs) {
      while (sent - answered.load() >= window)
        std::this_thread::yield();
      buf.clear();
      for (uint64_t k = 0; k < batch && sent < pairs; ++k, ++sent) {
        auto h = std::to_string(sent);
        buf += "{\"id\":" + std::to_string(2 * sent)
               + ",\"op\":\"acquire\",\"session\":\"bench\",\"holder\":\"h" + h
               + "\",\"kind\":\"foreground\"}\n{\"id\":"
               + std::to_string(2 * sent + 1)
               + ",\"op\":\"release\",\"holder\":\"h" + h
               + "\",\"reason\":\"completed\"}\n";
      }
      size_t done = 0;
      while (done < buf.size()) {
        auto n = ::write(child.stdin_fd, buf.data() + done, buf.size() - done);
        if (n <= 0)
          return;
        done += static_cast<size_t>(n);
      }
    }
  });
  // Count release answers ("released":true); events and acquire answers
  // pass by.
  std::string pending;
  char chunk[1 << 16];
  uint64_t releases = 0;
  while (releases < pairs) {
    auto n = ::read(child.stdout_fd, chunk, sizeof chunk);
    if (n <= 0)
      break;
    pending.append(chunk, static_cast<size_t>(n));
    size_t pos = 0;
    for (;;) {
      auto nl = pending.find('\n', pos);
      if (nl == std::string::npos)
        break;
      if (pending.compare(pos, 4, "{\"id") == 0
          && pending.find("\"released\":true", pos) < nl)
        ++releases;
      pos = nl + 1;
    }
    pending.erase(0, pos);
    answered.store(releases);
  }
  auto secs = seconds_since(t0);
  writer.join();
  ::close(child.stdin_fd);
  proc::wait_for(child.pid);
  ::close(child.stdout_fd);
  ::unlink(cfg_path);
  if (releases < pairs)
    throw std::runtime_error("the server stopped after "
                             + std::to_string(releases) + " pairs");
  return pairs / secs;
}

} // namespace

int main(int argc, char** argv) {
  uint64_t per_client = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 100000;
  uint64_t protocol_pairs
    = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 200000;
  ::signal(SIGPIPE, SIG_IGN);
  try {
    std::printf("bench pool: %d clients, %llu permits, %llu pairs each\n",
                clients, static_cast<unsigned long long>(permits),
                static_cast<unsigned long long>(per_client));
    // A third argument runs one part alone (for profiling): actor, mutex
    // or protocol.
    std::string only = argc > 3 ? argv[3] : "";
    double actor = 0;
    double mutex = 0;
    double protocol = 0;
    if (only.empty() || only == "actor")
      actor = bench_actor(per_client);
    std::printf("  pool actor:          %12.0f pairs/s\n", actor);
    if (only == "bare" || only.empty()) {
      auto bare_rate = bench_bare_actor(per_client);
      std::printf("  bare FIFO actor:     %12.0f pairs/s (no pool rules; "
                  "for comparison)\n",
                  bare_rate);
    }
    if (only.empty() || only == "mutex")
      mutex = bench_mutex(per_client);
    std::printf("  mutex + condvar:     %12.0f pairs/s\n", mutex);
    if (only.empty() || only == "protocol")
      protocol = bench_protocol(protocol_pairs);
    std::printf("  protocol over stdio: %12.0f pairs/s (%llu pairs)\n",
                protocol, static_cast<unsigned long long>(protocol_pairs));
    std::printf("bench pool: actor_pairs_per_s=%.0f mutex_pairs_per_s=%.0f "
                "ratio=%.2f protocol_pairs_per_s=%.0f\n",
                actor, mutex, mutex > 0 ? actor / mutex : 0.0, protocol);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench pool: %s\n", e.what());
    return 1;
  }
  return 0;
}
