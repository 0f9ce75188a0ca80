// `taskforce serve`: the JSON-lines protocol over stdio or TCP.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>

#include <pthread.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/bridge.hpp"
#include "actors/pool.hpp"
#include "actors/runtime_config.hpp"
#include "actors/stdio_transport.hpp"
#include "actors/tcp_transport.hpp"
#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/net/listen_address.hpp"

namespace taskforce::cli {

const char* serve_help
  = "usage: taskforce serve --stdio [--publish ADDR | --join ADDR] [--config "
    "FILE]\n"
    "       taskforce serve [--listen [HOST:]PORT] [--publish ADDR | --join "
    "ADDR]\n"
    "                       [--config FILE]\n\n"
    "Serves the pool over the JSON-lines protocol (see the README): one JSON\n"
    "object per line in each direction.\n\n"
    "  --stdio          requests on standard input, responses and events on\n"
    "                   standard output; logs go to standard error. Exits "
    "when\n"
    "                   standard input closes, after releasing every permit.\n"
    "  --listen ADDR    TCP, one connection per harness. ADDR is HOST:PORT,\n"
    "                   :PORT or PORT (loopback); port 0 picks a free port.\n"
    "                   Without ADDR (or without --stdio) binds server.listen\n"
    "                   from the config (default 127.0.0.1:7411). Prints\n"
    "                   \"listening on HOST:PORT\" on standard error.\n"
    "  --publish ADDR   also offer this server's pool to other taskforce\n"
    "                   processes through CAF's middleman (ADDR as for\n"
    "                   --listen, loopback by default); prints \"pool\n"
    "                   published on HOST:PORT\" on standard error.\n"
    "  --join ADDR      serve the pool another process published at ADDR\n"
    "                   instead of a pool of its own: in global mode every\n"
    "                   harness of every joined process shares one bound.\n"
    "  --config FILE    the config whose \"pool\" section sets the pool; a "
    "bad\n"
    "                   file exits 2 naming the key, the value and the "
    "rule.\n\n"
    "SIGINT or SIGTERM stops the server: every permit is released (each\n"
    "holder gets its released event, reason disconnected) and open requests\n"
    "fail with shutting_down.\n";

namespace {

using clock_type = std::chrono::steady_clock;

/// Signals the server stops on; blocked in every thread and polled by main.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

/// Whether SIGINT or SIGTERM arrived.
bool stop_requested(const sigset_t& set) {
  timespec zero{0, 0};
  return sigtimedwait(&set, nullptr, &zero) > 0;
}

/// Waits until `watched` is down or a stop signal arrives; true on signal.
bool wait_for(caf::scoped_actor& self, const caf::actor& watched,
              const sigset_t& signals) {
  bool down = !watched;
  if (watched)
    self->monitor(watched);
  while (!down) {
    if (stop_requested(signals))
      return true;
    self->receive(
      [&](caf::down_msg& msg) {
        if (msg.source == watched.address())
          down = true;
      },
      caf::after(std::chrono::milliseconds(50)) >> [] {});
  }
  return false;
}

/// Waits up to `limit` for `watched` to go down.
void wait_down(caf::scoped_actor& self, const caf::actor& watched,
               std::chrono::milliseconds limit) {
  if (!watched)
    return;
  self->monitor(watched);
  auto deadline = clock_type::now() + limit;
  bool down = false;
  while (!down && clock_type::now() < deadline)
    self->receive(
      [&](caf::down_msg& msg) {
        if (msg.source == watched.address())
          down = true;
      },
      caf::after(std::chrono::milliseconds(20)) >> [] {});
}

/// Splits `--listen` off the arguments: with a value, or alone (use the
/// config). Returns whether it was given.
bool take_listen(std::vector<std::string>& argv, std::string& address) {
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].rfind("--listen=", 0) == 0) {
      address = argv[i].substr(9);
      argv.erase(argv.begin() + i);
      return true;
    }
    if (argv[i] == "--listen") {
      if (i + 1 < argv.size() && argv[i + 1].rfind("--", 0) != 0) {
        address = argv[i + 1];
        argv.erase(argv.begin() + i, argv.begin() + i + 2);
      } else {
        argv.erase(argv.begin() + i);
      }
      return true;
    }
  }
  return false;
}

/// Stops `pool` when this process owns it; a joined pool belongs to the
/// process that published it and lives on.
void stop_pool(caf::scoped_actor& self, const pool_actor& pool, bool owned) {
  if (!owned)
    return;
  self->send_exit(pool, caf::exit_reason::user_shutdown);
  wait_down(self, caf::actor_cast<caf::actor>(pool),
            std::chrono::milliseconds(2000));
}

int serve_stdio(caf::actor_system& sys, pool_actor pool, bool owned,
                const config& cfg, const sigset_t& signals) {
  int wake[2];
  if (::pipe(wake) != 0)
    throw std::runtime_error("cannot create a pipe");
  auto writer = spawn_fd_writer(sys, STDOUT_FILENO, wake[0]);
  auto bridge = spawn_bridge(sys, pool, cfg.pool, writer);
  auto reader = spawn_fd_reader(sys, STDIN_FILENO, wake[0], bridge);
  caf::scoped_actor self{sys};
  bool signalled = wait_for(self, bridge, signals);
  if (signalled) {
    spdlog::info("stopping on signal");
    // Stop reading. An owned pool stops: it sends every holder its
    // `released` (disconnected) and fails every wait with shutting_down,
    // then goes down, which ends the bridge. A joined pool lives on in its
    // own process: the bridge closes as at end of input, so the pool
    // releases what it holds there (the same events) and cancels its waits.
    [[maybe_unused]] auto n = ::write(wake[1], "x", 1);
    if (owned)
      self->send_exit(pool, caf::exit_reason::user_shutdown);
    else
      self->send(bridge, caf::close_atom_v);
    wait_down(self, bridge, std::chrono::milliseconds(2000));
  }
  wait_down(self, writer, std::chrono::milliseconds(2000));
  [[maybe_unused]] auto n = ::write(wake[1], "x", 1);
  wait_down(self, reader, std::chrono::milliseconds(2000));
  stop_pool(self, pool, owned);
  for (auto& who : {bridge, writer})
    self->send_exit(who, caf::exit_reason::kill);
  ::close(wake[0]);
  ::close(wake[1]);
  return exit_ok;
}

int serve_tcp(caf::actor_system& sys, pool_actor pool, bool owned,
              const config& cfg, const listen_address& where,
              const sigset_t& signals) {
  auto server = start_tcp_server(sys, where.host, where.port, pool, cfg.pool);
  auto shown = where.host.find(':') != std::string::npos
                 ? "[" + where.host + "]"
                 : where.host;
  std::cerr << "taskforce: listening on " << shown << ":" << server.port
            << std::endl;
  caf::scoped_actor self{sys};
  wait_for(self, server.acceptor, signals);
  spdlog::info("stopping");
  self->send_exit(server.acceptor, caf::exit_reason::user_shutdown);
  stop_pool(self, pool, owned);
  wait_down(self, server.acceptor, std::chrono::milliseconds(2000));
  return exit_ok;
}

} // namespace

int run_serve_command(const std::vector<std::string>& argv_in,
                      const global_options& opts) {
  auto argv = argv_in;
  std::string address;
  bool listen = take_listen(argv, address);
  args parsed(argv, {"--publish", "--join"}, {"--stdio"});
  if (!parsed.positionals().empty())
    throw usage_error("serve takes no positional arguments (got \""
                      + parsed.positionals().front() + "\")");
  bool stdio = parsed.flag("--stdio");
  if (stdio && listen)
    throw usage_error("choose one of --stdio and --listen");
  if (parsed.has("--publish") && parsed.has("--join"))
    throw usage_error("choose one of --publish and --join");
  auto cfg = effective_config(opts);
  listen_address where;
  if (!stdio)
    where = parse_listen_address(address.empty() ? cfg.server.listen : address);
  // Signals are taken synchronously by main; every thread started from here
  // on (CAF's workers included) inherits the blocked mask.
  auto signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  // A harness that closes its end must not kill the server on write.
  std::signal(SIGPIPE, SIG_IGN);
  int result = exit_ok;
  {
    runtime_config rcfg;
    caf::actor_system sys{rcfg};
    pool_actor pool;
    bool owned = !parsed.has("--join");
    if (!owned) {
      auto from = parse_listen_address(parsed.value("--join"));
      auto remote
        = sys.middleman().remote_actor<pool_actor>(from.host, from.port);
      if (!remote)
        throw std::runtime_error("cannot join the pool at "
                                 + parsed.value("--join") + ": "
                                 + sys.render(remote.error()));
      pool = *remote;
      spdlog::info("joined the pool at {}", parsed.value("--join"));
    } else {
      pool = spawn_pool(sys, cfg.pool);
    }
    if (parsed.has("--publish")) {
      auto at = parse_listen_address(parsed.value("--publish"));
      auto port = sys.middleman().publish(pool, at.port, at.host.c_str(), true);
      if (!port)
        throw std::runtime_error("cannot publish the pool on "
                                 + parsed.value("--publish") + ": "
                                 + sys.render(port.error()));
      std::cerr << "taskforce: pool published on " << at.host << ":" << *port
                << std::endl;
    }
    if (stdio)
      result = serve_stdio(sys, pool, owned, cfg, signals);
    else
      result = serve_tcp(sys, pool, owned, cfg, where, signals);
  }
  return result;
}

} // namespace taskforce::cli
