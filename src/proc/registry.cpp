#include "src/proc/registry.hpp"

namespace taskforce::proc {

std::mutex& registry_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::unordered_set<pid_t>& registered_children() {
  static std::unordered_set<pid_t> pids;
  return pids;
}

void forget_child(pid_t pid) {
  std::lock_guard<std::mutex> guard{registry_mutex()};
  registered_children().erase(pid);
}

} // namespace taskforce::proc
