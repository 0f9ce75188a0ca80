// `taskforce serve`: the JSON-lines protocol over stdio, TCP or the
// per-user Unix socket.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <spdlog/spdlog.h>

#include "actors/bridge.hpp"
#include "actors/control_plane.hpp"
#include "actors/gate.hpp"
#include "actors/monitor.hpp"
#include "actors/pool.hpp"
#include "actors/runtime_config.hpp"
#include "actors/stdio_transport.hpp"
#include "actors/tcp_transport.hpp"
#include "actors/unix_transport.hpp"
#include "src/cli/args.hpp"
#include "src/cli/cli.hpp"
#include "src/control/monitor_store.hpp"
#include "src/net/endpoint.hpp"
#include "src/net/listen_address.hpp"
#include "src/net/secret.hpp"
#include "src/net/user_server.hpp"
#include "src/run/run_setup.hpp"
#include "src/store/ledger.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

const char* serve_help
  = "usage: taskforce serve --stdio [--publish ADDR | --join ADDR]\n"
    "                       [--token-file FILE] [--config FILE]\n"
    "       taskforce serve [--listen [HOST:]PORT] [--publish ADDR | --join "
    "ADDR]\n"
    "                       [--token-file FILE] [--config FILE]\n"
    "       taskforce serve --user [--config FILE]\n\n"
    "Serves the pool over the JSON-lines protocol (docs/protocol.md): one "
    "JSON\n"
    "object per line in each direction.\n\n"
    "  --stdio          requests on standard input, responses and events on\n"
    "                   standard output; logs go to standard error. Exits "
    "when\n"
    "                   standard input closes, after releasing every permit.\n"
    "                   Needs no token: the parent process is trusted.\n"
    "  --listen ADDR    TCP, one connection per harness. ADDR is HOST:PORT,\n"
    "                   :PORT or PORT (loopback); port 0 picks a free port.\n"
    "                   Without ADDR (or without --stdio) binds server.listen\n"
    "                   from the config (default 127.0.0.1:7411). Prints\n"
    "                   \"listening on HOST:PORT\" on standard error. Every\n"
    "                   connection must first send\n"
    "                   {\"id\":1,\"op\":\"hello\",\"token\":\"...\"} with "
    "the\n"
    "                   token from the endpoint file; anything else is "
    "answered\n"
    "                   unauthorized and the connection closed (also after\n"
    "                   10 s without a first line).\n"
    "  --publish ADDR   also offer this server's pool to other taskforce\n"
    "                   processes through CAF's middleman (ADDR as for\n"
    "                   --listen, loopback by default), to those that present\n"
    "                   the token; prints \"pool published on HOST:PORT\" on\n"
    "                   standard error.\n"
    "  --join ADDR      serve the pool another process published at ADDR\n"
    "                   instead of a pool of its own: in global mode every\n"
    "                   harness of every joined process shares one bound. The\n"
    "                   token is read from the endpoint file (the publishing\n"
    "                   server's; give its path with --token-file); a joined\n"
    "                   server that listens uses the same token.\n"
    "  --token-file FILE\n"
    "                   the endpoint file: where a listening or publishing\n"
    "                   server writes {\"address\", \"publish\", \"token\", "
    "\"pid\"}\n"
    "                   (created with mode 0600, removed when it stops), and\n"
    "                   where --join reads the token. Default: the\n"
    "                   repository's .taskforce/endpoint.json; outside a git\n"
    "                   repository --listen, --publish and --join need it.\n"
    "  --user           the per-user server that `acquire`, `release`, `pool`\n"
    "                   and `hook` start on demand: a Unix socket, pool.sock,\n"
    "                   in $XDG_RUNTIME_DIR/taskforce/ (else\n"
    "                   /tmp/taskforce-UID/, or ~/.cache/taskforce/run/ when\n"
    "                   another user took that name), a folder of mode 0700\n"
    "                   that only its user may enter (no token). The\n"
    "                   config is $XDG_CONFIG_HOME/taskforce/config.json "
    "(else\n"
    "                   ~/.config/taskforce/config.json, else the defaults).\n"
    "                   One per user: a second exits at once (status 0). It\n"
    "                   exits after server.idleExitMs (default 10 minutes)\n"
    "                   with no connection open and no permit held or\n"
    "                   awaited; its log is server.log beside the socket.\n"
    "  --config FILE    the config whose \"pool\" section sets the pool; a "
    "bad\n"
    "                   file exits 2 naming the key, the value and the "
    "rule.\n\n"
    "An address already in use exits 2 (\"cannot listen on HOST:PORT: address\n"
    "in use\"); so does a second server for the same endpoint file while the\n"
    "first runs. SIGINT or SIGTERM stops the server: every permit is released\n"
    "(each holder gets its released event, reason disconnected) and open\n"
    "requests fail with shutting_down.\n";

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

int serve_stdio(caf::actor_system& sys, pool_actor pool,
                control_plane_actor control, bool owned, const config& cfg,
                const sigset_t& signals) {
  int wake[2];
  if (::pipe(wake) != 0)
    throw std::runtime_error("cannot create a pipe");
  auto writer = spawn_fd_writer(sys, STDOUT_FILENO, wake[0]);
  auto bridge = spawn_bridge(sys, pool, cfg.pool, writer, std::move(control));
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

int serve_tcp(caf::actor_system& sys, const pool_actor& pool, bool owned,
              const tcp_server& server, const sigset_t& signals) {
  caf::scoped_actor self{sys};
  wait_for(self, server.acceptor, signals);
  spdlog::info("stopping");
  self->send_exit(server.acceptor, caf::exit_reason::user_shutdown);
  stop_pool(self, pool, owned);
  wait_down(self, server.acceptor, std::chrono::milliseconds(2000));
  return exit_ok;
}

/// The endpoint file of this server: --token-file, else the repository's.
/// Throws usage_error outside a repository without --token-file.
fs::path endpoint_path(const args& parsed, const global_options& opts) {
  if (parsed.has("--token-file")) {
    auto given = parsed.value("--token-file");
    if (given.empty())
      throw usage_error("--token-file needs a file name");
    return fs::absolute(given);
  }
  auto top = opts.repo.empty() ? find_repository("")
                               : std::optional{repository_of(opts)};
  if (!top)
    throw usage_error("not inside a git repository: give --token-file FILE "
                      "(where the server's address and token go, or where "
                      "--join reads the token)");
  return net::endpoint_file(*top);
}

/// The token a joining process presents: the one in `file`.
std::string joined_token(const fs::path& file, const std::string& where) {
  try {
    return net::read_endpoint_file(file).token;
  } catch (const net::endpoint_error& e) {
    if (e.code() == net::endpoint_errc::no_server)
      throw usage_error("cannot join the pool at " + where + ": no token ("
                        + file.string()
                        + " does not exist; give the publishing server's "
                          "endpoint file with --token-file)");
    throw usage_error("cannot join the pool at " + where + ": " + e.what());
  }
}

/// Refuses to take over the endpoint file of a server that still runs.
void refuse_running_server(const fs::path& file) {
  net::endpoint_info other;
  try {
    other = net::read_endpoint_file(file);
  } catch (const net::endpoint_error&) {
    return; // none, or not one: replaced below
  }
  if (other.pid == ::getpid()
      || !net::server_running(other, std::chrono::milliseconds(1000)))
    return;
  throw usage_error("a server already runs for " + file.string() + " (pid "
                    + std::to_string(other.pid)
                    + (other.address.empty() ? "" : ", " + other.address)
                    + "); stop it, or give this one another --token-file");
}

/// Removes the endpoint file at exit, if it is still this server's.
struct endpoint_guard {
  fs::path file;
  std::string token;
  endpoint_guard() = default;
  endpoint_guard(const endpoint_guard&) = delete;
  endpoint_guard& operator=(const endpoint_guard&) = delete;
  ~endpoint_guard() {
    if (file.empty())
      return;
    try {
      if (net::same_token(net::read_endpoint_file(file).token, token)) {
        std::error_code ec;
        fs::remove(file, ec);
      }
    } catch (const std::exception&) {
      // Gone or replaced: not ours to remove.
    }
  }
};

/// The per-user server's config: --config FILE, else the user's config
/// file when it exists, else the defaults. Throws config_error.
config user_config(const global_options& opts) {
  if (!opts.config_file.empty())
    return load_config(opts.config_file);
  auto file = net::user_config_file();
  std::error_code ec;
  if (!file.empty() && fs::exists(file, ec))
    return load_config(file.string());
  return config{};
}

/// Whether this process's standard error is `file` (the server log the
/// starting client opened).
bool stderr_is(const fs::path& file) {
  struct stat mine;
  struct stat other;
  return ::fstat(STDERR_FILENO, &mine) == 0 && ::stat(file.c_str(), &other) == 0
         && mine.st_dev == other.st_dev && mine.st_ino == other.st_ino;
}

/// How long a second server waits for the first to either answer on the
/// socket or let go of the lock (it was exiting).
constexpr auto lock_patience = std::chrono::seconds(5);

/// Takes the per-user lock; -1 when another server holds it and answers.
int take_user_lock(const fs::path& dir) {
  auto deadline = clock_type::now() + lock_patience;
  for (;;) {
    int fd = net::try_lock(net::user_lock(dir));
    if (fd >= 0)
      return fd;
    try {
      net::user_server_options probe;
      probe.start = false;
      net::user_request(probe, R"({"id":0,"op":"hello"})",
                        clock_type::now() + std::chrono::seconds(1));
      return -1; // the other server answers
    } catch (const net::endpoint_error&) {
      // Starting or exiting: wait for its lock.
    }
    if (clock_type::now() >= deadline)
      return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int serve_user(const global_options& opts) {
  auto dir = net::user_runtime_dir();
  try {
    net::prepare_private_dir(dir);
  } catch (const net::endpoint_error& e) {
    throw usage_error(e.what());
  }
  int lock = take_user_lock(dir);
  if (lock < 0) {
    spdlog::info("another per-user server runs at {}",
                 net::user_socket(dir).string());
    return exit_ok;
  }
  // The log beside the socket is this server's alone.
  if (stderr_is(net::user_log(dir))) {
    [[maybe_unused]] auto rc = ::ftruncate(STDERR_FILENO, 0);
  }
  auto cfg = user_config(opts);
  auto socket = net::user_socket(dir);
  int listen_fd;
  try {
    listen_fd = net::listen_unix(socket);
  } catch (const std::runtime_error& e) {
    ::close(lock);
    throw usage_error(e.what());
  }
  auto signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
  int wake[2];
  if (::pipe(wake) != 0)
    throw std::runtime_error("cannot create a pipe");
  {
    runtime_config rcfg;
    caf::actor_system sys{rcfg};
    auto pool = spawn_pool(sys, cfg.pool);
    unix_server_setup setup;
    setup.listen_fd = listen_fd;
    setup.pool = pool;
    setup.idle_exit = std::chrono::milliseconds(cfg.server.idle_exit_ms);
    setup.wake_fd = wake[0];
    auto pool_cfg = cfg.pool;
    setup.make_bridge = [&sys, pool, pool_cfg](caf::actor sink) {
      return spawn_bridge(sys, pool, pool_cfg, std::move(sink));
    };
    auto acceptor = start_unix_server(sys, std::move(setup));
    std::cerr << "taskforce: serving on " << socket.string() << std::endl;
    caf::scoped_actor self{sys};
    if (wait_for(self, acceptor, signals))
      spdlog::info("stopping on signal");
    [[maybe_unused]] auto n = ::write(wake[1], "x", 1);
    wait_down(self, acceptor, std::chrono::milliseconds(2000));
    // New clients start a new server from here on (it waits for the lock).
    ::unlink(socket.c_str());
    stop_pool(self, pool, true);
  }
  ::close(wake[0]);
  ::close(wake[1]);
  ::close(lock);
  return exit_ok;
}

} // namespace

int run_serve_command(const std::vector<std::string>& argv_in,
                      const global_options& opts) {
  auto argv = argv_in;
  std::string address;
  bool listen = take_listen(argv, address);
  args parsed(argv, {"--publish", "--join", "--token-file"},
              {"--stdio", "--user"});
  if (!parsed.positionals().empty())
    throw usage_error("serve takes no positional arguments (got \""
                      + parsed.positionals().front() + "\")");
  if (parsed.flag("--user")) {
    if (listen || parsed.flag("--stdio") || parsed.has("--publish")
        || parsed.has("--join") || parsed.has("--token-file"))
      throw usage_error("--user takes no other option of serve (only the "
                        "global --config)");
    return serve_user(opts);
  }
  bool stdio = parsed.flag("--stdio");
  if (stdio && listen)
    throw usage_error("choose one of --stdio and --listen");
  if (parsed.has("--publish") && parsed.has("--join"))
    throw usage_error("choose one of --publish and --join");
  auto cfg = effective_config(opts);
  listen_address where;
  if (!stdio)
    where = parse_listen_address(address.empty() ? cfg.server.listen : address);
  std::optional<listen_address> publish_at;
  if (parsed.has("--publish"))
    publish_at = parse_listen_address(parsed.value("--publish"));
  std::optional<listen_address> join_at;
  if (parsed.has("--join"))
    join_at = parse_listen_address(parsed.value("--join"));
  // Who may connect: TCP and the published pool need the token; stdio
  // trusts its parent and needs no file.
  bool owned = !join_at;
  fs::path file;
  std::string token;
  if (!stdio || publish_at || join_at) {
    file = endpoint_path(parsed, opts);
    if (owned) {
      refuse_running_server(file);
      token = net::new_token();
    } else {
      token = joined_token(file, parsed.value("--join"));
    }
  }
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
    if (join_at) {
      pool = join_pool(sys, join_at->host, join_at->port, token);
      spdlog::info("joined the pool at {}", to_string(*join_at));
    } else {
      pool = spawn_pool(sys, cfg.pool);
    }
    // The control plane of the repository the server runs in (none outside
    // one: its operations then answer unavailable).
    control_plane_actor control;
    auto top
      = opts.repo.empty() ? find_repository("") : find_repository(opts.repo);
    monitors_actor monitors;
    if (top) {
      monitors_setup watch;
      watch.repository = *top;
      watch.ledger = run::state_dir(*top) / store::ledger_file_name;
      watch.owner = control::new_owner_id("server");
      watch.max_monitors = cfg.control.max_monitors;
      watch.max_output_bytes = cfg.control.max_output_bytes;
      fs::create_directories(watch.ledger.parent_path());
      monitors = spawn_monitors(sys, std::move(watch));
      control_plane_setup setup;
      setup.repository = *top;
      setup.config = cfg.control;
      setup.monitors = monitors;
      control = spawn_control_plane(sys, std::move(setup));
    }
    // Bind everything first, then tell the world where (the file, then
    // standard error), so a client that reads either can connect at once.
    gate_actor gate;
    uint16_t published = 0;
    std::optional<tcp_server> server;
    endpoint_guard guard;
    try {
      if (publish_at) {
        gate = spawn_gate(sys, pool, token);
        auto port = sys.middleman().publish(gate, publish_at->port,
                                            publish_at->host.c_str(), true);
        if (!port) {
          auto why = bind_problem(*publish_at);
          throw usage_error("cannot listen on " + to_string(*publish_at) + ": "
                            + (why.empty() ? sys.render(port.error()) : why));
        }
        published = *port;
      }
      if (!stdio) {
        auto pool_cfg = cfg.pool;
        auto make_bridge = [&sys, pool, pool_cfg, control](caf::actor sink) {
          return spawn_bridge(sys, pool, pool_cfg, std::move(sink), control);
        };
        try {
          server = start_tcp_server(sys, where.host, where.port, make_bridge,
                                    tcp_gate{token, file.string()});
        } catch (const std::runtime_error& e) {
          throw usage_error(e.what());
        }
      }
      if (owned && !file.empty()) {
        net::endpoint_info info;
        if (server)
          info.address = to_string(listen_address{where.host, server->port});
        if (publish_at)
          info.publish = to_string(listen_address{publish_at->host, published});
        info.token = token;
        info.pid = ::getpid();
        try {
          if (!parsed.has("--token-file"))
            fs::create_directories(file.parent_path());
          net::write_endpoint_file(file, info);
        } catch (const std::exception& e) {
          throw usage_error(e.what());
        }
        guard.file = file;
        guard.token = token;
      }
    } catch (...) {
      // Nothing may outlive a failed start, or the actor system waits for
      // it forever.
      caf::scoped_actor self{sys};
      if (server)
        self->send_exit(server->acceptor, caf::exit_reason::user_shutdown);
      if (gate)
        self->send_exit(gate, caf::exit_reason::user_shutdown);
      if (control)
        self->send_exit(control, caf::exit_reason::user_shutdown);
      if (monitors)
        self->send_exit(monitors, caf::exit_reason::user_shutdown);
      stop_pool(self, pool, owned);
      throw;
    }
    if (publish_at)
      std::cerr << "taskforce: pool published on "
                << to_string(listen_address{publish_at->host, published})
                << std::endl;
    if (server)
      std::cerr << "taskforce: listening on "
                << to_string(listen_address{where.host, server->port})
                << std::endl;
    if (stdio)
      result = serve_stdio(sys, pool, control, owned, cfg, signals);
    else
      result = serve_tcp(sys, pool, owned, *server, signals);
    if (gate)
      caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
    if (control)
      caf::anon_send_exit(control, caf::exit_reason::user_shutdown);
    if (monitors)
      caf::anon_send_exit(monitors, caf::exit_reason::user_shutdown);
  }
  return result;
}

} // namespace taskforce::cli
