// A process of another user (nobody, uid 65534) that listens where a
// taskforce client expects its server or driver, as a squatter on a port or
// a stale socket would: it answers every line with a fixed reply and records
// what it got. Needs root (to become nobody), setpriv and perl; `usable()`
// says whether the machine has them.
#pragma once

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "src/proc/spawn.hpp"
#include "test.hpp"

namespace taskforce::test {

class stranger_listener {
 public:
  /// The user id the stranger runs as.
  static constexpr uid_t uid = 65534;

  /// Whether a stranger can be started here.
  static bool usable() {
    return ::geteuid() == 0 && std::filesystem::exists("/usr/bin/setpriv")
           && std::filesystem::exists("/usr/bin/perl");
  }

  /// Listens on a Unix socket in a folder of its own (`socket()`), or, with
  /// `tcp`, on a free loopback port (`port()`); answers each line with
  /// `reply` (a line without its newline).
  stranger_listener(bool tcp, const std::string& reply) {
    std::string pattern
      = (std::filesystem::temp_directory_path() / "taskforce-stranger-XXXXXX")
          .string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("mkdtemp failed");
    folder_ = pattern;
    ::chown(folder_.c_str(), uid, uid);
    log_ = folder_ / "received.log";
    socket_ = folder_ / "driver.sock";
    std::string listen
      = tcp ? "IO::Socket::INET->new(LocalAddr => '127.0.0.1', LocalPort => "
              "0, Listen => 64, Proto => 'tcp', ReuseAddr => 1)"
            : "IO::Socket::UNIX->new(Type => SOCK_STREAM, Local => $ARGV[0], "
              "Listen => 64)";
    std::string script
      = "use IO::Socket::INET; use IO::Socket::UNIX; use Socket;"
        "my $s = "
        + listen
        + " or die \"listen: $!\";"
          "open(my $out, '>>', $ARGV[1]) or die; $out->autoflush(1);"
          "print $out 'port ', ($ARGV[2] ? $s->sockport : 0), \"\\n\";"
          "while (my $c = $s->accept) {"
          "  while (my $l = <$c>) { print $out \"got $l\"; print $c $ARGV[3], "
          "\"\\n\"; }"
          "  close $c; }";
    proc::spawn_options o;
    o.argv = {"/usr/bin/setpriv",
              "--reuid=65534",
              "--regid=65534",
              "--clear-groups",
              "/usr/bin/perl",
              "-e",
              script,
              socket_.string(),
              log_.string(),
              tcp ? "1" : "0",
              reply};
    o.in = proc::stdio::null();
    o.out = proc::stdio::null();
    o.err = proc::stdio::file((folder_ / "stderr.log").string());
    child_ = proc::spawn(o);
    if (!eventually(
          [&] {
            return read_file(log_).rfind("port ", 0) == 0
                   && read_file(log_).find('\n') != std::string::npos;
          },
          std::chrono::seconds(30)))
      throw std::runtime_error("the stranger did not listen: "
                               + read_file(folder_ / "stderr.log"));
    port_ = static_cast<uint16_t>(std::atoi(read_file(log_).c_str() + 5));
  }

  ~stranger_listener() {
    ::kill(child_.pid, SIGKILL);
    ::waitpid(child_.pid, nullptr, 0);
    std::error_code ec;
    std::filesystem::remove_all(folder_, ec);
  }

  stranger_listener(const stranger_listener&) = delete;
  stranger_listener& operator=(const stranger_listener&) = delete;

  /// The stranger's process id.
  pid_t pid() const {
    return child_.pid;
  }

  /// Its socket (Unix) or port (TCP).
  const std::filesystem::path& socket() const {
    return socket_;
  }
  uint16_t port() const {
    return port_;
  }

  /// Every line it was sent, each prefixed "got ".
  std::string received() const {
    auto all = read_file(log_);
    auto nl = all.find('\n');
    return nl == std::string::npos ? std::string{} : all.substr(nl + 1);
  }

 private:
  std::filesystem::path folder_;
  std::filesystem::path log_;
  std::filesystem::path socket_;
  uint16_t port_ = 0;
  proc::child child_;
};

} // namespace taskforce::test
