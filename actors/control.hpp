// The driver's control endpoint: how a person's `approve`, `reject`,
// `answer`, `send`, `broadcast` and `add` reach a live run from another
// terminal.
//
//   taskforce approve t2 ──.taskforce/driver.sock──▶ listener (own thread:
//   (control_client)         one JSON line each way     accept, read
//                                                       bounded lines)
//                                                         │ steer_atom
//                                                         ▼
//                         orchestrator ◀── approve / reject / answer / add
//                         mailbox      ◀── send / broadcast (after asking
//                                          the orchestrator where the task is)
//
// The control actor checks the token and the run, routes the request and
// answers the verdict once the orchestrator (or the mailbox) made the
// change durable. The listener writes `.taskforce/driver.json` (socket,
// pid and token, 0600) once it listens and removes it when it stops. It
// serves only its own user (SO_PEERCRED), and connections that send
// nothing never keep a request from being served.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/mailbox.hpp"
#include "messages/interfaces.hpp"

namespace taskforce {

/// The router of a driver's control requests.
using control_actor = caf::typed_actor<
  /// A request line (src/run/control_wire.hpp) -> the verdict line.
  caf::replies_to<steer_atom, std::string>::with<std::string>>;

/// What the control actor routes to.
struct control_setup {
  /// The driven run.
  std::string run_id;
  /// The token a request must carry.
  std::string token;
  orchestrator_actor orchestrator;
  mailbox_actor mailbox;
  /// Reads the task file of an `add` (an absolute path) as `run` does;
  /// throws std::exception with the parse errors. Runs in a detached
  /// helper (it reads files and may run a parser command).
  std::function<task_additions(const std::string& file)> parse;
  /// How long the control actor waits for the orchestrator or mailbox.
  std::chrono::milliseconds patience{5000};
};

/// Spawns the control actor (event-based: it never blocks).
control_actor spawn_control(caf::actor_system& sys, control_setup setup);

/// A listening endpoint; stops (and removes driver.json) on destruction.
class control_endpoint {
 public:
  /// Listens on `root`'s .taskforce/driver.sock, then writes driver.json of
  /// `root` naming it, this process and `token`. Throws std::runtime_error
  /// when it cannot.
  control_endpoint(caf::actor_system& sys, control_actor control,
                   const std::filesystem::path& root, const std::string& token,
                   const std::string& run_id);
  ~control_endpoint();
  control_endpoint(const control_endpoint&) = delete;
  control_endpoint& operator=(const control_endpoint&) = delete;

  /// The socket it listens on.
  const std::filesystem::path& socket() const;

  /// Stops listening, waits for the connections being served and removes
  /// driver.json and the socket (idempotent).
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace taskforce
