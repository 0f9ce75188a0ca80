// The per-user server: one `taskforce serve --user` per user, reached over a
// Unix socket, started on demand by the client commands (`acquire`,
// `release`, `pool status`, `hook claude-code`) and gone again once it has
// been idle for a while with nothing held.
//
// Where it lives: a folder only its user may enter (mode 0700, owned by the
// user, not a symlink), `$XDG_RUNTIME_DIR/taskforce/` when XDG_RUNTIME_DIR
// is an absolute path, else `/tmp/taskforce-<uid>/`; when another user took
// that name first (or made it a link, or opened it to others),
// `$XDG_CACHE_HOME/taskforce/run/` (by default `~/.cache/taskforce/run/`).
// In it:
//
//   pool.sock    the socket (JSON lines, the same protocol as stdio/TCP)
//   server.lock  held (flock) by the one server that owns the socket
//   server.log   that server's log (standard error)
//
// The folder's mode is the gate (no token): a folder that is not private is
// refused, and the server also checks each peer's user id.
//
// Starting is race-free: a client that finds no server starts one and
// connects as soon as the socket answers; two servers started at once
// contend for the lock and the loser exits quietly (its client connects to
// the winner).
#pragma once

#include <chrono>
#include <filesystem>
#include <string>

#include "src/net/unix_socket.hpp"

namespace taskforce::net {

/// The per-user server's folder (see above); `/tmp/taskforce-<uid>` is
/// created when it is the one, so that the name is taken.
std::filesystem::path user_runtime_dir();

/// The per-user server's config file: `$XDG_CONFIG_HOME/taskforce/
/// config.json` when XDG_CONFIG_HOME is an absolute path, else
/// `$HOME/.config/taskforce/config.json`; empty when neither is known.
/// The file need not exist (the defaults apply).
std::filesystem::path user_config_file();

/// `<dir>/pool.sock`.
std::filesystem::path user_socket(const std::filesystem::path& dir);

/// `<dir>/server.lock`.
std::filesystem::path user_lock(const std::filesystem::path& dir);

/// `<dir>/server.log`.
std::filesystem::path user_log(const std::filesystem::path& dir);

/// Creates `dir` with mode 0700 when it is missing and checks that it is a
/// directory (not a symlink) owned by this user and closed to everyone
/// else. Throws endpoint_error (bad_file) naming the problem.
void prepare_private_dir(const std::filesystem::path& dir);

/// Server side: takes the folder's lock without waiting. Returns the lock's
/// descriptor (held until closed), or -1 when another process holds it.
/// Throws std::system_error when the lock file cannot be opened.
int try_lock(const std::filesystem::path& lock_file);

// Server side: net::listen_unix (src/net/unix_socket.hpp) binds the socket,
// while holding the lock; net::peer_is_same_user checks each connection.

/// How a client reaches the per-user server.
struct user_server_options {
  /// Start a server when none answers (else no_server is thrown).
  bool start = true;
  /// The program started as `PROGRAM serve --user`; empty = this process's
  /// own executable.
  std::string program;
  /// When not empty: the request line sent when no response came by the
  /// deadline (a `release` of the holder an `acquire` waits for), on the
  /// same connection, so that a grant racing the give-up is given back
  /// (or the wait cancelled) before the caller says it gave up; on a fresh
  /// connection when that one broke. Its response is awaited at most
  /// `give_up_patience`; the timeout is thrown as ever.
  std::string give_up_line;
  /// How long the give-up request may take.
  std::chrono::milliseconds give_up_patience{5000};
};

/// Sends one request line to the per-user server and returns its response
/// line (events on the way are skipped), all before `deadline`; starts the
/// server when none answers (and `opts.start`). A connection the server
/// closes before answering anything (it was just exiting) is retried once
/// on a fresh server. On a timeout, `opts.give_up_line` is sent first (see
/// above). Throws endpoint_error: no_server (none runs and
/// starting was not asked for, or a server could not be started: the
/// message quotes its log), bad_file (the folder is not private), timeout,
/// broken.
std::string user_request(const user_server_options& opts,
                         const std::string& request_line,
                         std::chrono::steady_clock::time_point deadline);

} // namespace taskforce::net
