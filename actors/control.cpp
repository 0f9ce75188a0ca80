#include "actors/control.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "src/net/secret.hpp"
#include "src/net/unix_socket.hpp"
#include "src/run/control_wire.hpp"
#include "src/time/duration.hpp"

namespace fs = std::filesystem;

namespace taskforce {

namespace {

using run::control_answer;
using run::steer_verb;

/// The text an error carries (its context string), else CAF's rendering.
std::string text_of(caf::actor_system& sys, const caf::error& err) {
  std::string out;
  if (err.context().match_elements<std::string>())
    out = err.context().get_as<std::string>(0);
  return out.empty() ? sys.render(err) : out;
}

/// Whether a run error is a refusal (the person's mistake) rather than a
/// failure.
bool refusal(const caf::error& err) {
  if (err.category() != caf::atom(run_errc_category))
    return false;
  switch (static_cast<run_errc>(err.code())) {
    case run_errc::unknown_task:
    case run_errc::wrong_state:
    case run_errc::duplicate_task:
    case run_errc::bad_tasks:
    case run_errc::refused_transition:
    case run_errc::unknown_run: return true;
    default: return false;
  }
}

std::string describe(const steer_reply& r) {
  std::string out;
  for (auto& t : r.tasks) {
    if (!out.empty())
      out += ", ";
    out += t.id + " " + to_string(t.state);
  }
  return out;
}

bool takes_mail(task_state s) {
  return s == task_state::running || s == task_state::verifying;
}

struct control_state {
  static inline const char* name = "control";
  control_setup setup;
};

using self_ptr = control_actor::stateful_pointer<control_state>;
using promise_t = caf::typed_response_promise<std::string>;

void answer(promise_t& p, control_answer a, const std::string& message) {
  p.deliver(run::encode_verdict(a, message));
}

void fail_with(self_ptr self, promise_t p, const caf::error& err) {
  answer(p, refusal(err) ? control_answer::refused : control_answer::failed,
         text_of(self->system(), err));
}

/// approve / reject / answer / add: the orchestrator decides; the reply
/// comes once its changes are durable.
template<class... Ts>
void to_orchestrator(self_ptr self, promise_t p, std::string done, Ts&&... xs) {
  auto& st = self->state;
  self
    ->request(st.setup.orchestrator, st.setup.patience, std::forward<Ts>(xs)...)
    .then(
      [p, done](steer_reply& r) mutable {
        auto now = describe(r);
        answer(p, control_answer::accepted,
               done + (now.empty() ? "" : " (now " + now + ")"));
      },
      [self, p](caf::error& err) mutable {
        fail_with(self, p, err);
      });
}

/// send / broadcast: where the tasks are, then the mail, durable.
void to_mailbox(self_ptr self, promise_t p, run::steer_request req) {
  auto& st = self->state;
  self->request(st.setup.orchestrator, st.setup.patience, caf::get_atom::value)
    .then(
      [self, p, req](steer_reply& r) mutable {
        std::vector<std::string> to;
        if (req.verb == steer_verb::send) {
          auto it = std::find_if(r.tasks.begin(), r.tasks.end(),
                                 [&](const task_view& t) {
                                   return t.id == req.task;
                                 });
          if (it == r.tasks.end())
            return answer(p, control_answer::refused,
                          "no task " + req.task + " in run "
                            + self->state.setup.run_id);
          if (!takes_mail(it->state))
            return answer(p, control_answer::refused,
                          "task " + req.task + " is " + to_string(it->state)
                            + "; send applies to a running or verifying "
                              "task");
          to.push_back(req.task);
        } else {
          for (auto& t : r.tasks)
            if (takes_mail(t.state))
              to.push_back(t.id);
          if (to.empty())
            return answer(p, control_answer::refused,
                          "no task of run " + self->state.setup.run_id
                            + " is running");
        }
        struct fan {
          size_t open;
          std::string failure;
        };
        auto f = std::make_shared<fan>(fan{to.size(), {}});
        std::string names;
        for (auto& id : to)
          names += (names.empty() ? "" : ", ") + id;
        for (auto& id : to)
          self
            ->request(self->state.setup.mailbox, self->state.setup.patience,
                      post_atom::value, self->state.setup.run_id, id,
                      turn_kind::message, req.text)
            .then(
              [p, f, names](int64_t) mutable {
                if (--f->open == 0)
                  f->failure.empty()
                    ? answer(p, control_answer::accepted, "sent to " + names)
                    : answer(p, control_answer::failed, f->failure);
              },
              [self, p, f, names](caf::error& err) mutable {
                if (f->failure.empty())
                  f->failure = text_of(self->system(), err);
                if (--f->open == 0)
                  answer(p, control_answer::failed, f->failure);
              });
      },
      [self, p](caf::error& err) mutable {
        fail_with(self, p, err);
      });
}

/// answer: the answer is stored in the task's mailbox before the task
/// leaves blocked, so it survives a driver that stops before the next
/// attempt starts; that attempt's worker takes it as its answer turn. The
/// orchestrator gets no text of its own (it would post it again).
void answer_task(self_ptr self, promise_t p, run::steer_request req) {
  auto& st = self->state;
  self->request(st.setup.orchestrator, st.setup.patience, caf::get_atom::value)
    .then(
      [self, p, req](steer_reply& r) mutable {
        auto& st = self->state;
        auto it = std::find_if(r.tasks.begin(), r.tasks.end(),
                               [&](const task_view& t) {
                                 return t.id == req.task;
                               });
        if (it == r.tasks.end())
          return answer(p, control_answer::refused,
                        "no task " + req.task + " in run " + st.setup.run_id);
        if (it->state != task_state::blocked)
          return answer(p, control_answer::refused,
                        "task " + req.task + " is " + to_string(it->state)
                          + "; answer applies to a blocked task");
        self
          ->request(st.setup.mailbox, st.setup.patience, post_atom::value,
                    st.setup.run_id, req.task, turn_kind::answer, req.text)
          .then(
            [self, p, req](int64_t) mutable {
              to_orchestrator(self, p, "answered " + req.task,
                              answer_atom::value, req.task, std::string{});
            },
            [self, p](caf::error& err) mutable {
              fail_with(self, p, err);
            });
      },
      [self, p](caf::error& err) mutable {
        fail_with(self, p, err);
      });
}

/// add: the file is read in a detached helper, then the orchestrator adds
/// the tasks (recorded in the ledger first).
void add_file(self_ptr self, promise_t p, std::string file) {
  auto parse = self->state.setup.parse;
  if (!parse)
    return answer(p, control_answer::failed, "this driver cannot add tasks");
  auto helper = self->spawn<caf::detached>(
    [parse, file](caf::event_based_actor* h) -> caf::behavior {
      return {
        [=](add_atom) -> caf::result<task_additions> {
          h->quit();
          try {
            return parse(file);
          } catch (const std::exception& e) {
            return caf::make_error(run_errc::bad_tasks, std::string{e.what()});
          }
        },
      };
    });
  self->request(helper, caf::infinite, add_atom::value)
    .then(
      [self, p, file](task_additions& more) mutable {
        auto n = more.tasks.size();
        to_orchestrator(self, p,
                        "added " + std::to_string(n) + " task"
                          + (n == 1 ? "" : "s") + " from " + file,
                        add_atom::value, std::move(more));
      },
      [self, p](caf::error& err) mutable {
        fail_with(self, p, err);
      });
}

control_actor::behavior_type control_behavior(self_ptr self,
                                              control_setup setup) {
  self->state.setup = std::move(setup);
  return {
    [self](steer_atom, std::string& line) -> caf::result<std::string> {
      auto& st = self->state;
      std::string error;
      auto decoded = run::decode_request(line, error);
      if (!decoded)
        return run::encode_verdict(control_answer::failed,
                                   "bad request: " + error);
      if (!net::same_token(decoded->token, st.setup.token))
        return run::encode_verdict(control_answer::unauthorized, "wrong token");
      auto& req = decoded->request;
      if (!req.run_id.empty() && req.run_id != st.setup.run_id)
        return run::encode_verdict(control_answer::elsewhere,
                                   "this driver drives run " + st.setup.run_id);
      auto p = self->make_response_promise<std::string>();
      switch (req.verb) {
        case steer_verb::approve:
          to_orchestrator(self, p, "approved " + req.task, approve_atom::value,
                          req.task);
          break;
        case steer_verb::reject:
          to_orchestrator(self, p, "rejected " + req.task, reject_atom::value,
                          req.task, req.text);
          break;
        case steer_verb::answer: answer_task(self, p, req); break;
        case steer_verb::add: add_file(self, p, req.file); break;
        case steer_verb::send:
        case steer_verb::broadcast: to_mailbox(self, p, req); break;
      }
      return p;
    },
  };
}

} // namespace

control_actor spawn_control(caf::actor_system& sys, control_setup setup) {
  return sys.spawn(control_behavior, std::move(setup));
}

// -- the listener -------------------------------------------------------------

namespace {

using steady = std::chrono::steady_clock;

/// How long a connection may take to send its request line.
constexpr auto read_deadline = std::chrono::milliseconds(2000);

/// Requests being carried out at once; more are answered "busy".
constexpr size_t max_serving = 16;

/// Connections that have not sent their request line yet; past this, the
/// one that waited longest is dropped to make room for the newest.
constexpr size_t max_waiting = 64;

/// How long accepting pauses when the process is out of descriptors and no
/// waiting connection can be dropped (else poll would report the pending
/// connection again at once, for ever).
constexpr auto out_of_descriptors_pause = std::chrono::milliseconds(100);

void write_all(int fd, const std::string& text) {
  size_t off = 0;
  while (off < text.size()) {
    auto n = ::send(fd, text.data() + off, text.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return;
    off += static_cast<size_t>(n);
  }
}

/// A connection accepted and not yet carrying a whole request line.
struct waiting_connection {
  int fd;
  /// What it sent so far.
  std::string line;
  steady::time_point since;
};

/// Reads what `w` sent; true when its line is whole (then without its
/// newline in `w.line`), false while more is to come or, with `gone` set,
/// when the peer closed or sent too much.
bool read_some(waiting_connection& w, bool& gone) {
  char buf[4096];
  for (;;) {
    auto n = ::recv(w.fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return false;
    if (n <= 0) {
      gone = true;
      return false;
    }
    std::string_view chunk{buf, static_cast<size_t>(n)};
    auto nl = chunk.find('\n');
    w.line.append(chunk.substr(0, nl));
    if (w.line.size() > run::max_control_line) {
      gone = true;
      return false;
    }
    if (nl != std::string_view::npos)
      return true;
  }
}

} // namespace

// One thread accepts and reads request lines for every connection at once
// (non-blocking), so connections that say nothing hold no thread and no
// slot: they are dropped after read_deadline, or when more than max_waiting
// wait (the oldest first). Only a whole request line takes one of the
// max_serving threads that carry requests out. A connection of another
// user is closed unread (the socket's mode keeps them out already).
struct control_endpoint::impl {
  caf::actor_system& sys;
  control_actor control;
  fs::path file;
  fs::path socket;
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  std::thread acceptor;
  std::mutex mtx;
  /// Connections being served (or served and not joined yet).
  struct connection {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  std::vector<connection> connections;
  bool stopped = false;

  /// Joins the connections that ended; how many are still served.
  size_t reap() {
    std::vector<connection> keep;
    for (auto& c : connections) {
      if (c.done->load()) {
        c.thread.join();
      } else {
        keep.push_back(std::move(c));
      }
    }
    connections.swap(keep);
    return connections.size();
  }

  impl(caf::actor_system& s, control_actor c) : sys(s), control(std::move(c)) {}

  void serve(int fd, std::string line) {
    caf::scoped_actor self{sys};
    std::string reply;
    self
      ->request(control, std::chrono::seconds(30), steer_atom::value,
                std::move(line))
      .receive(
        [&](std::string& r) {
          reply = std::move(r);
        },
        [&](caf::error& err) {
          reply = run::encode_verdict(run::control_answer::failed,
                                      "the driver could not answer: "
                                        + sys.render(err));
        });
    write_all(fd, reply);
    ::close(fd);
  }

  /// Hands a whole request line to a thread of its own.
  void dispatch(int fd, std::string line) {
    // The verdict is written with blocking sends.
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::lock_guard<std::mutex> guard{mtx};
    if (reap() >= max_serving) {
      // Commands come from people: this many at once is a script's flood.
      write_all(fd, run::encode_verdict(run::control_answer::failed,
                                        "the driver is busy; try again"));
      ::close(fd);
      return;
    }
    auto done = std::make_shared<std::atomic<bool>>(false);
    connections.push_back(
      {std::thread([this, fd, done, line = std::move(line)]() mutable {
         serve(fd, std::move(line));
         done->store(true);
       }),
       done});
  }

  static void drop(waiting_connection& w, const std::string& why) {
    if (!why.empty())
      write_all(w.fd, run::encode_verdict(run::control_answer::failed, why));
    ::close(w.fd);
  }

  /// Takes the connections waiting to be accepted; false when out of
  /// descriptors with none to give up (the caller pauses accepting).
  bool accept_all(std::deque<waiting_connection>& waiting) {
    for (;;) {
      int fd
        = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR)
          continue;
        if (errno != EMFILE && errno != ENFILE)
          return true; // EAGAIN: all taken; anything else: try later
        if (waiting.empty())
          return false;
        drop(waiting.front(), {});
        waiting.pop_front();
        continue;
      }
      if (!net::peer_is_same_user(fd)) {
        spdlog::warn("control endpoint: refused a connection of another user");
        ::close(fd);
        continue;
      }
      if (waiting.size() >= max_waiting) {
        drop(waiting.front(), "dropped: too many connections sent nothing");
        waiting.pop_front();
      }
      waiting.push_back({fd, {}, steady::now()});
    }
  }

  void accept_loop() {
    std::deque<waiting_connection> waiting;
    auto paused_until = steady::time_point::min();
    for (;;) {
      auto now = steady::now();
      while (!waiting.empty() && now - waiting.front().since >= read_deadline) {
        drop(waiting.front(), "no request line within "
                                + std::to_string(read_deadline.count())
                                + " ms");
        waiting.pop_front();
      }
      std::vector<pollfd> pfds{{wake[0], POLLIN, 0}};
      bool accepting = now >= paused_until;
      pfds.push_back({accepting ? listen_fd : -1, POLLIN, 0});
      for (auto& w : waiting)
        pfds.push_back({w.fd, POLLIN, 0});
      auto next = steady::time_point::max();
      if (!waiting.empty())
        next = waiting.front().since + read_deadline;
      if (!accepting)
        next = std::min(next, paused_until);
      int timeout
        = next == steady::time_point::max() ? -1 : poll_timeout_ms(next - now);
      int r = ::poll(pfds.data(), pfds.size(), timeout);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0 || (pfds[0].revents & (POLLIN | POLLHUP)) != 0)
        break;
      // Lines first (they come from people waiting for an answer), then
      // new connections.
      std::deque<waiting_connection> still;
      for (size_t i = 0; i < waiting.size(); ++i) {
        auto& w = waiting[i];
        if (pfds[i + 2].revents == 0) {
          still.push_back(std::move(w));
          continue;
        }
        bool gone = false;
        if (read_some(w, gone))
          dispatch(w.fd, std::move(w.line));
        else if (gone)
          drop(w, "no request line, or one too long");
        else
          still.push_back(std::move(w));
      }
      waiting.swap(still);
      if ((pfds[1].revents & POLLIN) != 0 && !accept_all(waiting)) {
        spdlog::warn("control endpoint: out of file descriptors; accepting "
                     "again in {} ms",
                     out_of_descriptors_pause.count());
        paused_until = steady::now() + out_of_descriptors_pause;
      }
    }
    for (auto& w : waiting)
      ::close(w.fd);
  }
};

control_endpoint::control_endpoint(caf::actor_system& sys,
                                   control_actor control, const fs::path& root,
                                   const std::string& token,
                                   const std::string& run_id)
  : impl_(std::make_unique<impl>(sys, std::move(control))) {
  auto& m = *impl_;
  // The run lock is held: a socket left there is a killed driver's.
  m.socket = run::driver_socket(root);
  m.listen_fd = net::listen_unix(m.socket);
  if (::pipe2(m.wake, O_CLOEXEC) != 0) {
    auto why = std::strerror(errno);
    ::close(m.listen_fd);
    throw std::runtime_error(std::string{"cannot open the control endpoint: "}
                             + why);
  }
  m.acceptor = std::thread([&m] {
    m.accept_loop();
  });
  m.file = run::driver_file(root);
  run::driver_info info{m.socket.string(), token,
                        static_cast<int64_t>(::getpid()), run_id};
  try {
    run::write_driver_file(m.file, info);
  } catch (...) {
    stop();
    throw;
  }
}

control_endpoint::~control_endpoint() {
  stop();
}

const fs::path& control_endpoint::socket() const {
  return impl_->socket;
}

void control_endpoint::stop() {
  auto& m = *impl_;
  std::vector<impl::connection> serving;
  {
    std::lock_guard<std::mutex> guard{m.mtx};
    if (m.stopped)
      return;
    m.stopped = true;
  }
  // Nobody finds this driver any more, then it stops answering.
  if (!m.file.empty()) {
    // Only our own file: a later driver may have written its own.
    auto info = run::read_driver_file(m.file);
    if (info && info->socket == m.socket.string() && info->pid == ::getpid()) {
      std::error_code ec;
      fs::remove(m.file, ec);
      fs::remove(m.socket, ec);
    }
  }
  if (m.wake[1] >= 0) {
    char c = 0;
    auto n = ::write(m.wake[1], &c, 1);
    (void)n;
  }
  if (m.acceptor.joinable())
    m.acceptor.join();
  {
    std::lock_guard<std::mutex> guard{m.mtx};
    serving.swap(m.connections);
  }
  for (auto& c : serving)
    c.thread.join();
  ::close(m.listen_fd);
  for (int fd : m.wake)
    if (fd >= 0)
      ::close(fd);
}

} // namespace taskforce
