#include "actors/control.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "src/net/secret.hpp"
#include "src/run/control_wire.hpp"

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

/// How long a connection may take to send its request line.
constexpr int read_deadline_ms = 2000;

/// Connections served at once; more are turned away.
constexpr size_t max_connections = 16;

/// Reads one line (without its newline) within the deadline; false when
/// the peer sent none, too much, or took too long.
bool read_line(int fd, std::string& line) {
  auto deadline = std::chrono::steady_clock::now()
                  + std::chrono::milliseconds(read_deadline_ms);
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                  deadline - std::chrono::steady_clock::now())
                  .count();
    if (left <= 0)
      return false;
    pollfd pfd{fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, static_cast<int>(left));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    auto n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n')
        return true;
      line += buf[i];
    }
    if (line.size() > run::max_control_line)
      return false;
  }
}

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

} // namespace

struct control_endpoint::impl {
  caf::actor_system& sys;
  control_actor control;
  fs::path file;
  int listen_fd = -1;
  int wake[2] = {-1, -1};
  uint16_t port = 0;
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

  void serve(int fd) {
    std::string line;
    if (read_line(fd, line)) {
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
    } else {
      write_all(fd, run::encode_verdict(run::control_answer::failed,
                                        "no request line within "
                                          + std::to_string(read_deadline_ms)
                                          + " ms, or one too long"));
    }
    ::close(fd);
  }

  void accept_loop() {
    for (;;) {
      pollfd pfds[2] = {{listen_fd, POLLIN, 0}, {wake[0], POLLIN, 0}};
      int r = ::poll(pfds, 2, -1);
      if (r < 0 && errno == EINTR)
        continue;
      if (r < 0 || (pfds[1].revents & (POLLIN | POLLHUP)) != 0)
        return;
      if ((pfds[0].revents & POLLIN) == 0)
        continue;
      int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0)
        continue;
      std::lock_guard<std::mutex> guard{mtx};
      if (stopped) {
        ::close(fd);
        return;
      }
      if (reap() >= max_connections) {
        // Commands come from people: this many at once is somebody else.
        write_all(fd, run::encode_verdict(run::control_answer::failed,
                                          "the driver is busy; try again"));
        ::close(fd);
        continue;
      }
      auto done = std::make_shared<std::atomic<bool>>(false);
      connections.push_back({std::thread([this, fd, done] {
                               serve(fd);
                               done->store(true);
                             }),
                             done});
    }
  }
};

control_endpoint::control_endpoint(caf::actor_system& sys,
                                   control_actor control, const fs::path& root,
                                   const std::string& token,
                                   const std::string& run_id)
  : impl_(std::make_unique<impl>(sys, std::move(control))) {
  auto& m = *impl_;
  m.listen_fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (m.listen_fd < 0)
    throw std::runtime_error(std::string{"cannot open the control socket: "}
                             + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(m.listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
      || ::listen(m.listen_fd, 16) != 0
      || ::getsockname(m.listen_fd, reinterpret_cast<sockaddr*>(&addr), &len)
           != 0
      || ::pipe2(m.wake, O_CLOEXEC) != 0) {
    auto why = std::strerror(errno);
    ::close(m.listen_fd);
    throw std::runtime_error(
      std::string{"cannot listen on the loopback interface: "} + why);
  }
  m.port = ntohs(addr.sin_port);
  m.acceptor = std::thread([&m] {
    m.accept_loop();
  });
  m.file = run::driver_file(root);
  run::driver_info info{m.port, token, static_cast<int64_t>(::getpid()),
                        run_id};
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

uint16_t control_endpoint::port() const {
  return impl_->port;
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
    if (info && info->port == m.port && info->pid == ::getpid()) {
      std::error_code ec;
      fs::remove(m.file, ec);
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
