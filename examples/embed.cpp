// Embedding taskforce in a C++ harness: five subagent calls from one session
// share a pool of two permits. Each call waits for its permit, runs, and
// ends; the pool's events show who queued where. Exits 0 when every call ran
// and nothing is held afterwards.
#include <chrono>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "taskforce/runtime.hpp"

int main() {
  taskforce::runtime rt; // maxParallel 2, session mode
  auto pool = rt.pool();
  std::mutex out;
  pool.on_event([&](const taskforce::holder_event& ev) {
    std::lock_guard<std::mutex> guard{out};
    if (ev.event == "queued")
      std::cout << ev.holder << " queued: position " << ev.position << " of "
                << ev.of << " (" << ev.running << " running)\n";
    else
      std::cout << ev.holder << " " << ev.event << "\n";
  });
  auto session = rt.session("harness-session");
  std::vector<std::thread> calls;
  for (int i = 1; i <= 5; ++i)
    calls.emplace_back([&session, i] {
      auto call = "call-" + std::to_string(i);
      session.call_started(call).get(); // blocks until admitted
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      session.call_ended(call).get();
    });
  for (auto& t : calls)
    t.join();
  // Nothing is held now: disposing the session releases nothing.
  auto leftovers = session.dispose().get();
  // A call from another session, through the pool handle directly.
  auto permit = pool.acquire({"other-session", "direct-call"}).get();
  bool released = pool.release("direct-call").get();
  try {
    pool.release("direct-call").get(); // idempotent: answers false
  } catch (const taskforce::pool_error& e) {
    std::cerr << "unexpected error " << e.code() << '\n';
    return 1;
  }
  std::cout << "done: " << leftovers.size() << " left over, permit "
            << permit.permit << " released " << std::boolalpha << released
            << '\n';
  return leftovers.empty() && released ? 0 : 1;
}
