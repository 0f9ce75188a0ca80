// `taskforce serve --stdio` as a harness drives it: the real binary, real
// pipes, one JSON object per line, as the protocol says.
#define CAF_SUITE e2e.serve_stdio
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <string>
#include <thread>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

struct fixture {
  temp_dir dir;

  std::vector<std::string> with_config(const std::string& pool_json) {
    auto file = dir.write("config.json", "{\"pool\": " + pool_json + "}");
    return {"--config", file.string(), "serve", "--stdio"};
  }
};

/// A server with `pool_json` as its pool section (the binary takes global
/// options before the command).
struct server {
  serve_process process;
  protocol_peer& peer;

  explicit server(std::vector<std::string> args)
    : process(TASKFORCE_BINARY, std::move(args)), peer(process.peer) {}
};

std::vector<std::string> serve_args(fixture& f, const std::string& pool) {
  return f.with_config(pool);
}

} // namespace

// serve_process prepends nothing: global options come first on the line.
#define SERVE(pool)                                                            \
  server srv {                                                                 \
    serve_args(*this, pool)                                                    \
  }

CAF_TEST_FIXTURE_SCOPE(serve_stdio_tests, fixture)

CAF_TEST(hello answers the version the protocol and the effective pool config) {
  SERVE(R"({"maxParallel": 3, "mode": "global"})");
  auto r = srv.peer.call({{"id", 1}, {"op", "hello"}});
  CAF_CHECK_EQUAL(r["ok"], true);
  CAF_CHECK_EQUAL(r["protocol"], 2);
  CAF_CHECK(r["version"].is_string()
            && !r["version"].get<std::string>().empty());
  auto cfg = r["config"];
  CAF_CHECK_EQUAL(cfg["maxParallel"], 3);
  CAF_CHECK_EQUAL(cfg["mode"], "global");
  CAF_CHECK_EQUAL(cfg["queueTimeoutMs"], 300000);
  CAF_CHECK_EQUAL(cfg["maxHoldMs"], 3600000);
  CAF_CHECK_EQUAL(cfg["nested"], "lend");
  CAF_CHECK_EQUAL(cfg["subagentToolNames"],
                  json::array({"Task", "Agent", "task"}));
  CAF_CHECK_EQUAL(cfg["idleMemoryMs"], 10000);
}

CAF_TEST(string ids are echoed as strings and number ids as numbers) {
  SERVE("{}");
  auto r = srv.peer.call({{"id", "req-7"}, {"op", "hello"}});
  CAF_CHECK_EQUAL(r["id"], "req-7");
  auto n = srv.peer.call({{"id", 12.5}, {"op", "hello"}});
  CAF_CHECK_EQUAL(n["id"], 12.5);
}

CAF_TEST(names with quotes controls and unicode come back intact) {
  SERVE("{}");
  std::string odd = "we\"ird\\ name\n\t\x01 \xc3\xa9\xe2\x9c\x93";
  auto r = srv.peer.call(acquire(1, odd, odd));
  CAF_CHECK_EQUAL(r["ok"], true);
  auto ev = srv.peer.event("started", odd);
  CAF_CHECK_EQUAL(ev["session"], odd);
}

CAF_TEST(five acquires on two permits are granted in FIFO order with
           queued and started events) {
  SERVE(R"({"maxParallel": 2})");
  auto& p = srv.peer;
  for (int i = 1; i <= 5; ++i)
    p.send(acquire(i, "s", "h" + std::to_string(i)));
  // The first two are granted at once, each with a started event.
  for (int i = 1; i <= 2; ++i) {
    auto r = p.response(i);
    CAF_CHECK_EQUAL(r["ok"], true);
    CAF_CHECK(r["permit"].is_number_unsigned());
    CAF_CHECK_EQUAL(r["queued_ms"], 0);
    CAF_CHECK_EQUAL(r["lent"], false);
    auto ev = p.event("started", "h" + std::to_string(i));
    CAF_CHECK_EQUAL(ev["session"], "s");
    CAF_CHECK_EQUAL(ev["lent"], false);
  }
  // The other three queue at positions 1, 2 and 3 behind two running.
  for (int i = 3; i <= 5; ++i) {
    auto ev = p.event("queued", "h" + std::to_string(i));
    CAF_CHECK_EQUAL(ev["session"], "s");
    CAF_CHECK_EQUAL(ev["position"], i - 2);
    CAF_CHECK_EQUAL(ev["of"], i - 2);
    CAF_CHECK_EQUAL(ev["running"], 2);
    CAF_CHECK_EQUAL(ev["background"], false);
    CAF_CHECK(!ev.contains("id"));
    CAF_CHECK(!ev.contains("queued_ms"));
  }
  CAF_CHECK(p.silent(200ms));
  // Each release hands its permit to the oldest waiter, and only to it.
  for (int i = 3; i <= 5; ++i) {
    auto rel = p.call(release(100 + i, "h" + std::to_string(i - 2)));
    CAF_CHECK_EQUAL(rel["released"], true);
    auto r = p.response(i);
    CAF_CHECK_EQUAL(r["ok"], true);
    CAF_CHECK(r["queued_ms"].is_number_integer());
    auto started = p.event("started", "h" + std::to_string(i));
    CAF_CHECK(started["queued_ms"].is_number_integer());
    auto released = p.event("released", "h" + std::to_string(i - 2));
    CAF_CHECK_EQUAL(released["reason"], "completed");
    CAF_CHECK(!released.contains("session"));
    if (i < 5)
      CAF_CHECK(p.silent(100ms));
  }
  auto st = p.call({{"id", "st"}, {"op", "status"}});
  CAF_CHECK_EQUAL(st["mode"], "session");
  CAF_CHECK_EQUAL(st["max_parallel"], 2);
  CAF_REQUIRE_EQUAL(st["pools"].size(), 1u);
  auto pool = st["pools"][0];
  CAF_CHECK_EQUAL(pool["key"], "s");
  CAF_REQUIRE_EQUAL(pool["running"].size(), 2u);
  CAF_CHECK_EQUAL(pool["queued"].size(), 0u);
  for (auto& r : pool["running"]) {
    CAF_CHECK(r["holder"] == "h4" || r["holder"] == "h5");
    CAF_CHECK_EQUAL(r["session"], "s");
    CAF_CHECK_EQUAL(r["kind"], "foreground");
    CAF_CHECK(r["held_ms"].is_number_integer());
    CAF_CHECK_EQUAL(r["lent"], false);
  }
}

CAF_TEST(status lists queued holders with their positions) {
  SERVE(R"({"maxParallel": 1})");
  auto& p = srv.peer;
  p.call(acquire(1, "s", "a"));
  p.send(acquire(2, "s", "b"));
  p.send(acquire(3, "s", "c", "background"));
  auto st = p.call({{"id", 4}, {"op", "status"}});
  auto queued = st["pools"][0]["queued"];
  CAF_REQUIRE_EQUAL(queued.size(), 2u);
  CAF_CHECK_EQUAL(queued[0]["holder"], "b");
  CAF_CHECK_EQUAL(queued[0]["position"], 1);
  CAF_CHECK_EQUAL(queued[1]["holder"], "c");
  CAF_CHECK_EQUAL(queued[1]["position"], 2);
  CAF_CHECK_EQUAL(queued[1]["session"], "s");
  CAF_CHECK(queued[1]["waited_ms"].is_number_integer());
  auto ev = p.event("queued", "c");
  CAF_CHECK_EQUAL(ev["background"], true);
}

CAF_TEST(release is idempotent and unknown holders answer false) {
  SERVE("{}");
  auto& p = srv.peer;
  p.call(acquire(1, "s", "h"));
  auto first = p.call(release(2, "h"));
  auto second = p.call(release(3, "h"));
  auto unknown = p.call(release(4, "nobody", "error"));
  CAF_CHECK_EQUAL(first["released"], true);
  CAF_CHECK_EQUAL(second["released"], false);
  CAF_CHECK_EQUAL(unknown["released"], false);
  // Exactly one terminal event for the holder.
  p.silent(200ms);
  int terminal = 0;
  for (auto& line : p.raw) {
    auto x = json::parse(line);
    if (x.value("event", "") == "released" && x["holder"] == "h") {
      ++terminal;
      CAF_CHECK_EQUAL(x["reason"], "completed");
    }
  }
  CAF_CHECK_EQUAL(terminal, 1);
}

CAF_TEST(releasing a queued holder cancels its wait) {
  SERVE(R"({"maxParallel": 1})");
  auto& p = srv.peer;
  p.call(acquire(1, "s", "a"));
  p.send(acquire(2, "s", "b"));
  p.event("queued", "b");
  auto rel = p.call(release(3, "b", "aborted"));
  CAF_CHECK_EQUAL(rel["released"], true);
  auto r = p.response(2);
  CAF_CHECK_EQUAL(r["ok"], false);
  CAF_CHECK_EQUAL(r["error"]["code"], "cancelled");
  CAF_CHECK(r["error"]["message"].is_string());
}

CAF_TEST(
  a tool outside subagentToolNames is answered at once with a null permit) {
  SERVE(R"({"maxParallel": 1, "subagentToolNames": ["task", "delegate"]})");
  auto& p = srv.peer;
  auto req = acquire(1, "s", "a");
  req["tool"] = "bash";
  auto r = p.call(req);
  CAF_CHECK_EQUAL(r["ok"], true);
  CAF_CHECK(r["permit"].is_null());
  auto counted = acquire(2, "s", "b");
  counted["tool"] = "delegate";
  auto counted_reply = p.call(counted);
  CAF_CHECK(counted_reply["permit"].is_number());
  // Uncounted calls never queue, even with the pool full.
  auto more = acquire(3, "s", "c");
  more["tool"] = "grep";
  auto more_reply = p.call(more);
  CAF_CHECK(more_reply["permit"].is_null());
}

CAF_TEST(a holder name in use is refused with duplicate_holder) {
  SERVE(R"({"maxParallel": 1})");
  auto& p = srv.peer;
  p.call(acquire(1, "s", "a"));
  auto again = p.call(acquire(2, "other", "a"));
  CAF_CHECK_EQUAL(again["ok"], false);
  CAF_CHECK_EQUAL(again["error"]["code"], "duplicate_holder");
  p.send(acquire(3, "s", "q"));
  p.event("queued", "q");
  auto queued_again = p.call(acquire(4, "s", "q"));
  CAF_CHECK_EQUAL(queued_again["error"]["code"], "duplicate_holder");
}

CAF_TEST(garbage lines and lines without op get bad_request and the connection
           lives on) {
  SERVE("{}");
  auto& p = srv.peer;
  auto bad = [&](std::string line, const json& id, const std::string& needle) {
    // Raw strings below span lines for reading; the protocol needs one.
    for (auto& c : line)
      if (c == '\n')
        c = ' ';
    p.send_line(line);
    auto r = p.next();
    CAF_CHECK_EQUAL(r["id"], id);
    CAF_CHECK_EQUAL(r["ok"], false);
    CAF_CHECK_EQUAL(r["error"]["code"], "bad_request");
    auto message = r["error"]["message"].get<std::string>();
    if (message.find(needle) == std::string::npos)
      CAF_FAIL("message \"" << message << "\" lacks \"" << needle << "\"");
  };
  bad("this is not json", nullptr, "not JSON");
  bad("{\"id\": 1, \"op\": ", nullptr, "not JSON");
  bad("[1, 2, 3]", nullptr, "JSON object");
  bad("{\"id\": 5}", 5, "\"op\"");
  bad("{\"id\": \"x\", \"op\": 7}", "x", "\"op\"");
  bad("{\"op\": \"hello\"}", nullptr, "\"id\"");
  bad("{\"id\": 6, \"op\": \"fly\"}", 6, "unknown op");
  bad(R"({"id": 7, "op": "acquire", "holder": "h", "kind": "foreground"})", 7,
      "\"session\"");
  bad(R"({"id": 8, "op": "acquire", "session": "s", "holder": "h"})", 8,
      "\"kind\"");
  bad(R"({"id": 9, "op": "acquire", "session": "s", "holder": "h",
          "kind": "sideways"})",
      9, "foreground");
  bad(R"({"id": 10, "op": "acquire", "session": 3, "holder": "h",
          "kind": "background"})",
      10, "must be a string");
  bad(R"({"id": 11, "op": "acquire", "session": "s", "holder": "",
          "kind": "background"})",
      11, "must not be empty");
  bad(R"({"id": 12, "op": "release", "holder": "h", "reason": "idle"})", 12,
      "completed");
  bad(R"({"id": 13, "op": "release", "reason": "completed"})", 13,
      "\"holder\"");
  bad(R"({"id": 14, "op": "bind", "holder": "h"})", 14, "\"child_session\"");
  bad(R"({"id": 15, "op": "idle"})", 15, "\"session\"");
  bad(R"({"id": 16, "op": "end", "session": ["s"]})", 16, "must be a string");
  bad(R"({"id": 17, "op": "adopt", "session": "s", "holder": "h"})", 17,
      "\"child_session\"");
  bad(R"({"id": {"x": 1}, "op": "hello"})", nullptr, "\"id\"");
  // Blank lines are ignored, and the connection still works.
  p.send_line("");
  p.send_line("   ");
  auto r = p.call({{"id", 99}, {"op", "hello"}});
  CAF_CHECK_EQUAL(r["ok"], true);
  CAF_CHECK(p.silent(100ms));
}

CAF_TEST(requests are answered in arrival order while an acquire waits) {
  SERVE(R"({"maxParallel": 1})");
  auto& p = srv.peer;
  p.send(acquire(1, "s", "a"));
  p.send(acquire(2, "s", "b")); // waits
  p.send({{"id", 3}, {"op", "hello"}});
  p.send_line("garbage");
  p.send(release(4, "nobody"));
  p.send({{"id", 5}, {"op", "status"}});
  std::vector<json> ids;
  while (ids.size() < 5) {
    auto x = p.next();
    if (x.contains("id"))
      ids.push_back(x["id"]);
  }
  // The first acquire is granted at once, so it keeps its place too.
  CAF_CHECK_EQUAL(ids, (std::vector<json>{1, 3, nullptr, 4, 5}));
  p.send(release(6, "a"));
  std::vector<json> later;
  while (later.size() < 2) {
    auto x = p.next();
    if (x.contains("id"))
      later.push_back(x["id"]);
  }
  // Granted after the release: the waiting acquire answers later than the
  // requests that came after it, and only it may.
  CAF_CHECK(later == (std::vector<json>{2, 6})
            || later == (std::vector<json>{6, 2}));
}

CAF_TEST(end of input releases every permit and the server exits) {
  SERVE(R"({"maxParallel": 1})");
  auto& p = srv.peer;
  p.call(acquire(1, "s", "a"));
  p.send(acquire(2, "s", "b"));
  p.event("queued", "b");
  srv.process.close_input();
  auto code = srv.process.wait();
  CAF_CHECK_EQUAL(code, 0);
  // The output closes after the last answer; the queued wait was cancelled,
  // never granted.
  try {
    for (;;) {
      auto x = p.next(2000ms);
      CAF_CHECK(x.value("holder", "") != "b"
                || x.value("event", "") != "started");
    }
  } catch (const std::runtime_error&) {
    // end of output
  }
}

CAF_TEST(stdout carries only protocol lines even with debug logging) {
  temp_dir d;
  auto file = d.write("c.json", R"({"pool": {"maxParallel": 1}})");
  serve_process proc(TASKFORCE_BINARY, {"--log-level", "trace", "--config",
                                        file.string(), "serve", "--stdio"});
  auto& p = proc.peer;
  p.call({{"id", 1}, {"op", "hello"}});
  p.call(acquire(2, "s", "a"));
  p.send(acquire(3, "s", "b"));
  p.send_line("nonsense");
  p.call(release(4, "a"));
  p.response(3);
  p.call({{"id", 5}, {"op", "subscribe"}});
  p.call({{"id", 6}, {"op", "end"}, {"session", "s"}});
  proc.close_input();
  auto code = proc.wait();
  CAF_CHECK_EQUAL(code, 0);
  try {
    for (;;)
      p.next(1000ms);
  } catch (const std::runtime_error&) {
  }
  CAF_CHECK(p.raw.size() >= 8u);
  for (auto& line : p.raw) {
    auto x = json::parse(line, nullptr, false);
    CAF_CHECK(x.is_object());
    CAF_CHECK(x.contains("id") != x.contains("event"));
    if (x.contains("id"))
      CAF_CHECK(x["ok"].is_boolean());
  }
}

CAF_TEST(a request nested 100000 deep is refused naming the depth limit and the
           server answers on) {
  SERVE("{}");
  auto& p = srv.peer;
  auto nested
    = [](char open, const std::string& inner, char close, size_t depth) {
        return std::string(depth, open) + inner + std::string(depth, close);
      };
  auto deep_array = nested('[', "", ']', 100000);
  // Deep inside the id: no id can be read.
  p.send_line("{\"id\":" + deep_array + ",\"op\":\"hello\"}");
  auto r = p.next();
  CAF_CHECK_EQUAL(r["id"], nullptr);
  CAF_CHECK_EQUAL(r["ok"], false);
  CAF_CHECK_EQUAL(r["error"]["code"], "bad_request");
  auto message = r["error"]["message"].get<std::string>();
  CAF_CHECK(message.find("deeper than 64") != std::string::npos);
  CAF_CHECK(message.size() < 200u);
  // Deep inside another field: the id is read and echoed.
  p.send_line("{\"id\":7,\"op\":\"acquire\",\"session\":" + deep_array
              + ",\"holder\":\"h\",\"kind\":\"foreground\"}");
  auto field = p.next();
  CAF_CHECK_EQUAL(field["id"], 7);
  CAF_CHECK_EQUAL(field["error"]["code"], "bad_request");
  auto field_message = field["error"]["message"].get<std::string>();
  CAF_CHECK(field_message.find("\"session\"") != std::string::npos);
  CAF_CHECK(field_message.find("64") != std::string::npos);
  // Objects nest as deep.
  std::string deep_object;
  for (int i = 0; i < 100000; ++i)
    deep_object += "{\"a\":";
  deep_object += "1" + std::string(100000, '}');
  p.send_line("{\"id\":8,\"op\":\"hello\",\"x\":" + deep_object + "}");
  auto object = p.next();
  CAF_CHECK_EQUAL(object["id"], 8);
  CAF_CHECK_EQUAL(object["error"]["code"], "bad_request");
  // Exactly at the limit is fine: 64 levels, the request object included.
  p.send_line("{\"id\":9,\"op\":\"hello\",\"x\":" + nested('[', "", ']', 63)
              + "}");
  auto at_limit = p.next();
  CAF_CHECK_EQUAL(at_limit["ok"], true);
  p.send_line("{\"id\":10,\"op\":\"hello\",\"x\":" + nested('[', "", ']', 64)
              + "}");
  auto over_limit = p.next();
  CAF_CHECK_EQUAL(over_limit["ok"], false);
  auto r2 = p.call({{"id", 11}, {"op", "hello"}});
  CAF_CHECK_EQUAL(r2["ok"], true);
  CAF_CHECK(p.silent(100ms));
}

CAF_TEST(odd numbers bytes and escapes each get exactly one answer and stdout
           carries only protocol lines) {
  SERVE("{}");
  auto& p = srv.peer;
  struct probe {
    std::string line;
    bool ok;
    /// Text the raw answer line must contain ("" = nothing to check).
    std::string raw_has;
  };
  std::vector<probe> probes{
    {R"({"id":1,"op":"hello","x":1e400})", false, "1e400"},
    {R"({"id":1e400,"op":"hello"})", false, ""},
    {R"({"id":2,"op":"hello","x":[-1E+400]})", false, ""},
    {R"({"id":3,"op":"hello","x":1e-400})", true, "\"id\":3,"},
    {R"({"id":-0,"op":"hello"})", true, "\"id\":0,"},
    {R"({"id":-0.0,"op":"hello"})", true, "\"id\":-0.0,"},
    {R"({"id":9223372036855,"op":"hello"})", true, "\"id\":9223372036855,"},
    {R"({"id":18446744073709551616,"op":"hello"})", true,
     "\"id\":18446744073709551616,"},
    {R"({"id":-123456789012345678901234567890,"op":"hello"})", true,
     "\"id\":-123456789012345678901234567890,"},
    {R"({"id":1.5e300,"op":"hello"})", true, "\"id\":1.5e300,"},
    {R"({"id":4,"op":"hello","x":NaN})", false, ""},
    {R"({"id":5,"op":"hello","x":-Infinity})", false, ""},
    {"{\"id\":6,\"op\":\"hello\",\"x\":\"\xff\xfe\"}", false, ""},
    {"{\"id\":7,\"op\":\"he\0llo\"}", false, ""},
    {std::string("\0\0\0", 3), false, ""},
    {"\xc3\x28 \xed\xa0\x80", false, ""},
    {R"({"id":8,"op":"hello","x":"\ud800"})", false, ""},
    {R"({"id":9,"op":"hello","x":"\udc00 tail"})", false, ""},
    {R"({"id":10,"op":"hello","x":"\ud83d\ude00"})", true, ""},
    {R"({"id":"\u0000","op":"hello"})", true, "\"id\":\"\\u0000\""},
    {R"({"id":11,"op":"acquire","session":"s","holder":"h\u0000",)"
     R"("kind":"foreground"})",
     true, ""},
    {R"({"id":12,"op":"release","holder":"h\u0000","reason":"completed"})",
     true, "\"released\":true"},
    {R"({"id":13,"op":"hello"})", true, ""},
  };
  // Built with the NUL byte inside (a string literal would stop there).
  probes[13].line = std::string("{\"id\":7,\"op\":\"he") + '\0' + "llo\"}";
  for (auto& x : probes)
    p.send_line(x.line);
  size_t answered = 0;
  while (answered < probes.size()) {
    auto x = p.next();
    if (!x.contains("id"))
      continue; // an event
    auto& expected = probes[answered];
    if (x["ok"] != expected.ok)
      CAF_FAIL("line " << answered << " answered " << x.dump());
    if (!expected.ok) {
      CAF_CHECK_EQUAL(x["error"]["code"], "bad_request");
    }
    auto& raw = p.raw.back();
    if (!expected.raw_has.empty()
        && raw.find(expected.raw_has) == std::string::npos)
      CAF_FAIL("answer " << raw << " lacks " << expected.raw_has);
    ++answered;
  }
  auto last = p.call({{"id", "end"}, {"op", "hello"}});
  CAF_CHECK_EQUAL(last["ok"], true);
  CAF_CHECK(p.silent(200ms));
  // Every line on stdout was one JSON object (next() parses each).
  for (auto& line : p.raw)
    CAF_CHECK(json::parse(line).is_object());
}

CAF_TEST(error messages quote only a short excerpt of what the client sent) {
  SERVE("{}");
  auto& p = srv.peer;
  std::string big(500000, 'a');
  std::string accents;
  for (int i = 0; i < 100000; ++i)
    accents += "\xc3\xa9";
  std::string numbers = "[";
  for (int i = 0; i < 100000; ++i)
    numbers += std::to_string(i) + ",";
  numbers += "0]";
  std::vector<std::string> lines{
    "{\"id\":1,\"op\":\"" + big + "\"}",
    "{\"id\":2,\"op\":\"" + accents + "\"}",
    "{\"id\":3,\"op\":\"acquire\",\"session\":\"s\",\"holder\":\"h\","
    "\"kind\":\""
      + big + "\"}",
    "{\"id\":4,\"op\":\"release\",\"holder\":" + numbers
      + ",\"reason\":\"completed\"}",
    "{\"id\":{\"k\":\"" + big + "\"},\"op\":\"hello\"}",
    "{\"id\":5,\"op\":" + numbers + "}",
    "{\"id\":6,\"op\":\"hello\",\"x\":\"" + big, // unterminated string
    "{\"id\":7,\"op\":\"hello\",\"x\":1" + std::string(400000, '0') + "}",
    "{\"id\":8,\"op\":\"hello\",\"x\":" + big + "}",
  };
  for (auto& line : lines) {
    p.send_line(line);
    auto r = p.next();
    CAF_CHECK_EQUAL(r["ok"], false);
    CAF_CHECK_EQUAL(r["error"]["code"], "bad_request");
    auto message = r["error"]["message"].get<std::string>();
    if (message.size() > 300)
      CAF_FAIL("a message of " << message.size() << " bytes: "
                               << message.substr(0, 200) << "...");
    CAF_CHECK(p.raw.back().size() < 400u);
  }
  auto r = p.call({{"id", 9}, {"op", "hello"}});
  CAF_CHECK_EQUAL(r["ok"], true);
}

CAF_TEST(a harness that does not read its answers stops being read with bounded
           memory
         and then gets every answer once it reads) {
  SERVE("{}");
  auto& p = srv.peer;
  p.call({{"id", "first"}, {"op", "hello"}});
  auto before = vm_rss_kib(srv.process.pid());
  // Each hello answer is about ten times its request: without a bound on
  // pending output the server grows by megabytes per burst.
  std::string burst;
  for (int i = 0; i < 20000; ++i)
    burst += "{\"id\":" + std::to_string(i) + ",\"op\":\"hello\"}\n";
  constexpr size_t cap = 8 << 20;
  size_t sent = 0;
  size_t from = 0; // where in `burst` the next write starts
  while (sent < cap) {
    auto part = burst.substr(from);
    auto n = write_until_stalled(p.out_fd(), part, 2000ms);
    sent += n;
    from = (from + n) % burst.size();
    if (n < part.size())
      break;
  }
  auto during = vm_rss_kib(srv.process.pid());
  CAF_MESSAGE("input taken before the server stopped reading: "
              << sent << " bytes; VmRSS " << before << " -> " << during
              << " KiB");
  CAF_CHECK_LESS(sent, cap);
  CAF_CHECK_LESS(during, before + 48 * 1024);
  // Finish the line cut by the stall while reading, then count: every line
  // sent has exactly one answer, in order.
  size_t lines = 0;
  for (size_t i = 0; i < sent; ++i)
    if (burst[(i) % burst.size()] == '\n')
      ++lines;
  std::string rest;
  if (from != 0 && burst[from - 1] != '\n') {
    rest = burst.substr(from, burst.find('\n', from) + 1 - from);
    ++lines;
  }
  std::thread finisher([&] {
    size_t done = 0;
    while (done < rest.size()) {
      auto n = ::write(p.out_fd(), rest.data() + done, rest.size() - done);
      if (n <= 0)
        break;
      done += static_cast<size_t>(n);
    }
  });
  size_t answers = 0;
  int64_t expected_id = 0;
  bool in_order = true;
  while (answers < lines) {
    auto x = p.next(10000ms);
    if (!x.contains("id"))
      continue;
    if (x["id"] != expected_id)
      in_order = false;
    expected_id = (expected_id + 1) % 20000;
    ++answers;
  }
  finisher.join();
  CAF_CHECK(in_order);
  CAF_CHECK_EQUAL(answers, lines);
  auto after = p.call({{"id", "last"}, {"op", "hello"}});
  CAF_CHECK_EQUAL(after["ok"], true);
  CAF_CHECK(p.silent(200ms));
}

CAF_TEST(SIGTERM stops a server whose output nobody reads) {
  SERVE("{}");
  auto& p = srv.peer;
  p.call({{"id", "first"}, {"op", "hello"}});
  std::string burst;
  for (int i = 0; i < 20000; ++i)
    burst += "{\"id\":" + std::to_string(i) + ",\"op\":\"hello\"}\n";
  size_t sent = 0;
  while (sent < (4u << 20)) {
    auto n = write_until_stalled(p.out_fd(), burst, 1000ms);
    sent += n;
    if (n < burst.size())
      break;
  }
  srv.process.signal(SIGTERM);
  CAF_CHECK_EQUAL(srv.process.wait(10000ms), 0);
}

CAF_TEST(a bad config exits 2 naming the key) {
  auto file = dir.write("bad.json", R"({"pool": {"maxParallel": 0}})");
  serve_process proc(TASKFORCE_BINARY,
                     {"--config", file.string(), "serve", "--stdio"});
  auto code = proc.wait();
  CAF_CHECK_EQUAL(code, 2);
  auto err = proc.drain_stderr();
  CAF_CHECK(err.find("maxParallel") != std::string::npos);
  CAF_CHECK(proc.peer.silent(100ms));
  auto unknown = dir.write("unknown.json", R"({"pool": {"maxParalel": 2}})");
  serve_process proc2(TASKFORCE_BINARY,
                      {"--config", unknown.string(), "serve", "--stdio"});
  auto code2 = proc2.wait();
  CAF_CHECK_EQUAL(code2, 2);
  auto err2 = proc2.drain_stderr();
  CAF_CHECK(err2.find("maxParalel") != std::string::npos);
  CAF_CHECK(err2.find("maxParallel") != std::string::npos);
}

CAF_TEST(SIGTERM stops the server cleanly while a wait is queued) {
  SERVE(R"({"maxParallel": 1})");
  auto& p = srv.peer;
  p.call(acquire(1, "s", "a"));
  p.send(acquire(2, "s", "b"));
  p.event("queued", "b");
  srv.process.signal(SIGTERM);
  auto code = srv.process.wait();
  CAF_CHECK_EQUAL(code, 0);
  auto r = p.response(2, 2000ms);
  CAF_CHECK_EQUAL(r["ok"], false);
  CAF_CHECK(r["error"]["code"] == "shutting_down"
            || r["error"]["code"] == "cancelled");
}

CAF_TEST_FIXTURE_SCOPE_END()
