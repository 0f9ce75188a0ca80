#include "src/net/endpoint.hpp"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "src/net/line_channel.hpp"
#include "src/net/listen_address.hpp"
#include "src/net/secret.hpp"
#include "src/net/tcp_owner.hpp"
#include "src/text/file.hpp"
#include "src/text/json_reader.hpp"
#include "src/time/duration.hpp"

namespace fs = std::filesystem;

namespace taskforce::net {

namespace {

using json = nlohmann::json;
using steady = std::chrono::steady_clock;

/// The longest endpoint file read (it holds a few short fields).
constexpr size_t max_file_bytes = 64 * 1024;

/// The id of the hello the client sends first.
constexpr const char* hello_id = "taskforce-client-hello";

/// A string member of `j`, or "" when it is absent; throws bad_file when it
/// is there and not a string.
std::string text_at(const json& j, const char* key, const fs::path& file) {
  auto i = j.find(key);
  if (i == j.end() || i->is_null())
    return {};
  if (!i->is_string())
    throw endpoint_error(endpoint_errc::bad_file,
                         file.string() + ": \"" + key + "\" must be a string");
  return i->get<std::string>();
}

/// Whether process `pid` exists (a process of another user counts).
bool alive(int64_t pid) {
  if (pid <= 0)
    return true; // unknown: let the connection decide
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

/// Connects to `address` ("HOST:PORT") before `deadline`; -1 with `why`
/// set when nothing accepts there.
int connect_to(const std::string& address, steady::time_point deadline,
               std::string& why) {
  listen_address where;
  try {
    where = parse_listen_address(address);
  } catch (const std::invalid_argument& e) {
    why = e.what();
    return -1;
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  auto port = std::to_string(where.port);
  if (int rc = ::getaddrinfo(where.host.c_str(), port.c_str(), &hints, &found);
      rc != 0) {
    why = ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  why = "no address";
  for (auto* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
                  a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    int err = 0;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        err = ETIMEDOUT;
        if (wait_ready(fd, POLLOUT, deadline)) {
          socklen_t len = sizeof err;
          if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
            err = errno;
        }
      }
    }
    if (err != 0) {
      why = std::strerror(err);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

} // namespace

endpoint_error::endpoint_error(endpoint_errc code, const std::string& message)
  : std::runtime_error(message), code_(code) {}

fs::path endpoint_file(const fs::path& repo) {
  return repo / ".taskforce" / "endpoint.json";
}

void write_endpoint_file(const fs::path& path, const endpoint_info& info) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  if (!info.address.empty())
    j["address"] = info.address;
  if (!info.publish.empty())
    j["publish"] = info.publish;
  j["token"] = info.token;
  j["pid"] = info.pid;
  write_private_file(path, j.dump() + "\n");
}

endpoint_info read_endpoint_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(path, ec)))
    throw endpoint_error(endpoint_errc::no_server,
                         "no server runs (no " + path.string() + ")");
  if (auto problem = private_file_problem(path); !problem.empty())
    throw endpoint_error(endpoint_errc::bad_file,
                         "refusing to use the token: " + problem);
  auto text = read_file(path);
  if (!text)
    throw endpoint_error(endpoint_errc::bad_file, "cannot read " + path.string()
                                                    + ": "
                                                    + std::strerror(errno));
  json j;
  json_read_options o;
  o.max_depth = 4;
  if (text->size() > max_file_bytes
      || !read_json(text->data(), text->data() + text->size(), j, o).ok()
      || !j.is_object())
    throw endpoint_error(endpoint_errc::bad_file,
                         path.string() + " is not an endpoint file");
  endpoint_info info;
  info.address = text_at(j, "address", path);
  info.publish = text_at(j, "publish", path);
  info.token = text_at(j, "token", path);
  if (auto pid = j.find("pid"); pid != j.end() && pid->is_number_integer())
    info.pid = pid->get<int64_t>();
  if (info.token.empty())
    throw endpoint_error(endpoint_errc::bad_file,
                         path.string() + " holds no \"token\"");
  return info;
}

bool server_running(const endpoint_info& info,
                    std::chrono::milliseconds timeout) {
  if (info.pid <= 0 || !alive(info.pid))
    return false;
  if (info.address.empty())
    return true;
  std::string why;
  int fd = connect_to(info.address,
                      saturating_deadline<steady>(steady::now(), timeout), why);
  if (fd < 0)
    return false;
  auto verdict = check_listener(fd, static_cast<pid_t>(info.pid), why);
  ::close(fd);
  // Another process on its port (a file its server left): not running.
  return verdict == listener_verdict::expected
         || verdict == listener_verdict::not_found;
}

// -- the client ---------------------------------------------------------------

struct endpoint_client::impl {
  std::unique_ptr<line_channel> channel;
  std::string hello;
};

endpoint_client::endpoint_client(const fs::path& file,
                                 std::chrono::milliseconds timeout)
  : impl_(std::make_unique<impl>()) {
  auto deadline = saturating_deadline<steady>(steady::now(), timeout);
  auto info = read_endpoint_file(file);
  if (info.address.empty())
    throw endpoint_error(endpoint_errc::no_server,
                         "the server of " + file.string()
                           + " does not listen on TCP");
  if (!alive(info.pid))
    throw endpoint_error(endpoint_errc::no_server,
                         "no server runs (" + file.string()
                           + " is left from process " + std::to_string(info.pid)
                           + ", which is gone)");
  auto& m = *impl_;
  std::string why;
  int fd = connect_to(info.address, deadline, why);
  if (fd < 0)
    throw endpoint_error(endpoint_errc::no_server, "no server answers at "
                                                     + info.address + " (" + why
                                                     + ")");
  // Nothing, the token least of all, goes to a process other than the
  // server the file names.
  switch (check_listener(fd, static_cast<pid_t>(info.pid), why)) {
    case listener_verdict::expected: break;
    case listener_verdict::not_found:
      ::close(fd);
      throw endpoint_error(endpoint_errc::broken,
                           "cannot tell who listens at " + info.address + " ("
                             + why + "); nothing was sent to it");
    default:
      ::close(fd);
      throw endpoint_error(endpoint_errc::no_server,
                           "no server runs (" + file.string()
                             + " is left from a server that is gone: at "
                             + info.address + ", " + why
                             + "; nothing was sent to it)");
  }
  m.channel = std::make_unique<line_channel>(fd, info.address);
  json hello{{"id", hello_id}, {"op", "hello"}, {"token", info.token}};
  m.channel->send_line(hello.dump(), deadline);
  // A refused token is answered (unauthorized) before the server closes.
  auto line = m.channel->read_response(deadline);
  json answer;
  read_json(line.data(), line.data() + line.size(), answer);
  if (answer.value("ok", false) != true) {
    std::string code;
    std::string message;
    if (auto e = answer.find("error"); e != answer.end() && e->is_object()) {
      code = e->value("code", "");
      message = e->value("message", "");
    }
    throw endpoint_error(code == "unauthorized" ? endpoint_errc::unauthorized
                                                : endpoint_errc::broken,
                         "the server at " + info.address
                           + " refused: " + (message.empty() ? line : message));
  }
  m.hello = std::move(line);
}

endpoint_client::~endpoint_client() = default;

const std::string& endpoint_client::hello() const {
  return impl_->hello;
}

std::string endpoint_client::call(const std::string& request_line,
                                  std::chrono::milliseconds timeout) {
  auto deadline = saturating_deadline<steady>(steady::now(), timeout);
  impl_->channel->send_line(request_line, deadline);
  return impl_->channel->read_response(deadline);
}

std::string request_once(const fs::path& file, const std::string& request_line,
                         std::chrono::milliseconds timeout) {
  auto deadline = saturating_deadline<steady>(steady::now(), timeout);
  endpoint_client client{file, timeout};
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
    deadline - steady::now());
  return client.call(request_line,
                     std::max(left, std::chrono::milliseconds{0}));
}

} // namespace taskforce::net
