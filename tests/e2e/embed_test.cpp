// The embedding API (include/taskforce/runtime.hpp) on the real scheduler:
// futures, callbacks, events, and session actors that end what they hold.
#define CAF_SUITE e2e.embed
#include <caf/test/unit_test.hpp>

#include <chrono>
#include <future>
#include <mutex>
#include <string>
#include <vector>

#include "taskforce/runtime.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace std::chrono_literals;

namespace {

template<class T>
bool ready(std::future<T>& f, std::chrono::milliseconds wait = 2000ms) {
  return f.wait_for(wait) == std::future_status::ready;
}

/// Collects events from a runtime thread.
struct recorder {
  std::mutex mtx;
  std::vector<holder_event> events;

  void operator()(const holder_event& ev) {
    std::lock_guard<std::mutex> guard{mtx};
    events.push_back(ev);
  }

  std::vector<std::string> of(const std::string& holder) {
    std::lock_guard<std::mutex> guard{mtx};
    std::vector<std::string> kinds;
    for (auto& ev : events)
      if (ev.holder == holder)
        kinds.push_back(ev.event + (ev.reason.empty() ? "" : ":" + ev.reason));
    return kinds;
  }
};

} // namespace

CAF_TEST(acquire futures are granted in FIFO order and release hands over) {
  runtime rt;
  auto pool = rt.pool();
  auto a = pool.acquire({"s", "a"});
  auto b = pool.acquire({"s", "b"});
  auto c = pool.acquire({"s", "c"});
  CAF_REQUIRE(ready(a));
  CAF_REQUIRE(ready(b));
  CAF_CHECK(!ready(c, 100ms));
  CAF_CHECK(pool.release("a").get());
  CAF_REQUIRE(ready(c));
  CAF_CHECK(c.get().counted);
  CAF_CHECK(!pool.release("a").get());
}

CAF_TEST(failures arrive as pool_error with the protocol code) {
  runtime rt;
  auto pool = rt.pool();
  pool.acquire({"s", "a"}).get();
  auto dup = pool.acquire({"s", "a"});
  try {
    dup.get();
    CAF_FAIL("a duplicate holder was granted");
  } catch (const pool_error& e) {
    CAF_CHECK_EQUAL(e.code(), "duplicate_holder");
  }
  std::promise<outcome<permit_info>> done;
  pool.acquire({"s", "b"}, [&](outcome<permit_info> x) {
    done.set_value(x);
  });
  auto result = done.get_future().get();
  CAF_CHECK(result.ok);
  auto adopt = pool.adopt("s", "c", "child-c");
  try {
    adopt.get();
    CAF_FAIL("adopt queued or granted beyond the bound");
  } catch (const pool_error& e) {
    CAF_CHECK_EQUAL(e.code(), "pool_full");
  }
}

CAF_TEST(a session releases a background call when its child goes idle) {
  runtime rt;
  recorder rec;
  auto pool = rt.pool();
  pool.on_event(std::ref(rec));
  auto parent = rt.session("parent");
  auto child = rt.session("child-1");
  parent.call_started("bg", call_kind::background).get();
  CAF_CHECK(!parent.call_returned("bg", "child-1").get());
  auto released = child.idle().get();
  CAF_CHECK_EQUAL(released, std::vector<std::string>{"bg"});
  parent.dispose().get();
  child.dispose().get();
  std::this_thread::sleep_for(50ms);
  CAF_CHECK_EQUAL(rec.of("bg"),
                  (std::vector<std::string>{"started", "released:idle"}));
}

CAF_TEST(disposing a session ends its calls and cancels its waits) {
  runtime rt;
  recorder rec;
  auto pool = rt.pool();
  pool.on_event(std::ref(rec));
  auto s = rt.session("s");
  s.call_started("one").get();
  s.call_started("two").get();
  auto three = s.call_started("three");
  CAF_CHECK(!ready(three, 100ms));
  s.dispose().get();
  CAF_REQUIRE(ready(three));
  try {
    three.get();
    CAF_FAIL("a disposed session's wait was granted");
  } catch (const pool_error& e) {
    CAF_CHECK_EQUAL(e.code(), "cancelled");
  }
  std::this_thread::sleep_for(50ms);
  CAF_CHECK_EQUAL(rec.of("one"),
                  (std::vector<std::string>{"started", "released:ended"}));
  // Its permits are free again for another session.
  auto other = rt.session("other");
  auto granted = other.call_started("four");
  CAF_CHECK(ready(granted));
}

CAF_TEST(destroying the runtime fails open waits instead of hanging) {
  std::future<permit_info> waiting;
  {
    runtime rt;
    auto pool = rt.pool();
    pool.acquire({"s", "a"}).get();
    pool.acquire({"s", "b"}).get();
    waiting = pool.acquire({"s", "c"});
  }
  CAF_REQUIRE(ready(waiting));
  try {
    waiting.get();
    CAF_FAIL("a wait was granted after shutdown");
  } catch (const pool_error& e) {
    CAF_CHECK(e.code() == "cancelled" || e.code() == "shutting_down");
  }
}

CAF_TEST(a bad config file is refused naming the key) {
  taskforce::test::temp_dir dir;
  auto file = dir.write("c.json", R"({"pool": {"mode": "everywhere"}})");
  runtime_options opts;
  opts.config_file = file.string();
  try {
    runtime rt{opts};
    CAF_FAIL("a bad config was accepted");
  } catch (const std::invalid_argument& e) {
    CAF_CHECK(std::string{e.what()}.find("mode") != std::string::npos);
  }
}

CAF_TEST(destroying the runtime calls no listener while it releases) {
  // Listeners often capture objects declared after the runtime, which are
  // gone by the time it is destroyed.
  auto calls = std::make_shared<std::vector<std::string>>();
  auto mtx = std::make_shared<std::mutex>();
  size_t before = 0;
  {
    runtime rt;
    auto pool = rt.pool();
    pool.on_event(
      [calls, mtx](const holder_event& ev) {
        std::lock_guard<std::mutex> guard{*mtx};
        calls->push_back(ev.event + ":" + ev.holder);
      },
      true);
    // The started event reaches the listener before the answer.
    pool.acquire({"s", "held"}).get();
    std::lock_guard<std::mutex> guard{*mtx};
    CAF_CHECK(*calls == std::vector<std::string>{"started:held"});
    before = calls->size();
  }
  std::lock_guard<std::mutex> guard{*mtx};
  CAF_CHECK_EQUAL(calls->size(), before);
}
