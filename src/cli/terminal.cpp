#include "src/cli/terminal.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>

namespace taskforce::cli {

screen_size terminal_size(screen_size fallback) {
  auto size = fallback;
  auto env = [](const char* name, size_t otherwise) {
    auto* v = std::getenv(name);
    auto n = v ? std::atoi(v) : 0;
    return n > 0 ? static_cast<size_t>(n) : otherwise;
  };
  size.cols = env("COLUMNS", size.cols);
  size.rows = env("LINES", size.rows);
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) {
    if (ws.ws_col > 0)
      size.cols = ws.ws_col;
    if (ws.ws_row > 0)
      size.rows = ws.ws_row;
  }
  return size;
}

} // namespace taskforce::cli
