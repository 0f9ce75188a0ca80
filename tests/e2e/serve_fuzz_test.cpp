// The protocol under fire: the real `taskforce serve --stdio` and `--listen`
// binaries fed generated lines (deep nesting, odd and huge numbers, wrong
// types, huge strings, over-long and truncated lines, random bytes, escapes,
// pipelined bursts) by a client that sometimes stops reading, next to
// clients that never read or vanish. After every batch: the server runs,
// every line got exactly one answer (every well-formed request its own,
// once), nothing but JSON objects came out, a well-behaved client gets
// `hello` and `status` answered, and the server's VmRSS stays under a bound.
//
// Deterministic input: the seed (TASKFORCE_FUZZ_SEED, default below) and the
// number of batches (TASKFORCE_FUZZ_BATCHES) are printed; the same values
// replay the same lines.
#define CAF_SUITE e2e.serve_fuzz
#include <caf/test/unit_test.hpp>

#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "e2e/protocol_client.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;
using namespace std::chrono_literals;

namespace {

/// The seed when TASKFORCE_FUZZ_SEED is not set.
constexpr uint64_t default_seed = 20240611;

/// Batches per transport when TASKFORCE_FUZZ_BATCHES is not set.
constexpr int default_batches = 16;

/// How far the server's VmRSS may grow above its size after start-up.
constexpr uint64_t rss_growth_bound_kib = 64 * 1024;

/// The first id of a well-formed request: far from the numbers the odd
/// lines use as ids.
constexpr int64_t first_id = 1000000;

/// The line limit of the server (bytes), for over-long lines.
constexpr size_t line_limit = 1 << 20;

uint64_t env_number(const char* name, uint64_t fallback) {
  if (auto text = std::getenv(name); text != nullptr && *text != '\0')
    return std::strtoull(text, nullptr, 10);
  return fallback;
}

/// splitmix64: the same seed gives the same lines on every platform.
class rng {
 public:
  explicit rng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// A number in [0, n).
  size_t below(size_t n) {
    return n == 0 ? 0 : static_cast<size_t>(next() % n);
  }

  /// True `num` times in `den`.
  bool chance(size_t num, size_t den) {
    return below(den) < num;
  }

  template<class T>
  const T& pick(const std::vector<T>& xs) {
    return xs[below(xs.size())];
  }

 private:
  uint64_t state_;
};

/// One generated line: its bytes (no newline) and, for a well-formed
/// request, the id its one answer must carry.
struct fuzz_line {
  std::string text;
  /// The numeric id of a well-formed request (answered exactly once), or
  /// -1 for a line whose answer may carry any id.
  int64_t id = -1;
};

/// Whether the server owes `text` no answer (it skips blank lines).
bool blank(const std::string& text) {
  for (char c : text)
    if (c != ' ' && c != '\t' && c != '\r')
      return false;
  return true;
}

const std::vector<std::string> sessions{"s0", "s1", "s2", "s3"};
const std::vector<std::string> holders{"h0", "h1", "h2", "h3",
                                       "h4", "h5", "h6", "h7"};
const std::vector<std::string> children{"c0", "c1", "c2"};

const std::vector<std::string> odd_numbers{
  "1e400", "-1e400", "1E+400", "1e-400", "-0", "-0.0", "0.0e0", "9223372036855",
  "9223372036854775807", "9223372036854775808", "-9223372036854775808",
  "-9223372036854775809", "18446744073709551615", "18446744073709551616",
  "123456789012345678901234567890", "1.7976931348623157e308", "1.8e308",
  "5e-324", "2.5e-400", "0.1e1",
  // not JSON:
  "00", "01", "-", "+1", ".5", "1.", "1e", "NaN", "Infinity", "-Infinity",
  "0x10", "1_000"};

const std::vector<std::string> odd_strings{"\\ud800",
                                           "\\udbff\\udfff",
                                           "\\udc00",
                                           "\\ud800\\u0041",
                                           "\\u0000",
                                           "\\u0000\\u0001\\u001f",
                                           "\xc0\x80",
                                           "\xed\xa0\x80",
                                           "\xf4\x90\x80\x80",
                                           "\xff",
                                           "\xe2\x82",
                                           "\x01\x02",
                                           "\\x41",
                                           "\\",
                                           "\\\\",
                                           "\xf0\x9f\x98\x80",
                                           "\xc3\xa9",
                                           "tab\\there"};

/// Builds one batch's lines from the generator.
class line_maker {
 public:
  line_maker(rng& r, int64_t& next_id) : r_(r), next_id_(next_id) {}

  /// A well-formed request with a fresh numeric id.
  fuzz_line valid() {
    auto id = next_id_++;
    json req{{"id", id}};
    switch (r_.below(12)) {
      case 0: req["op"] = "hello"; break;
      case 1: req["op"] = "status"; break;
      case 2:
      case 3:
      case 4:
        req["op"] = "acquire";
        req["session"] = r_.pick(sessions);
        req["holder"] = r_.pick(holders);
        req["kind"] = r_.chance(1, 3) ? "background" : "foreground";
        if (r_.chance(1, 4))
          req["tool"] = r_.chance(1, 2) ? "task" : "bash";
        if (r_.chance(1, 6))
          req["parent"] = r_.pick(holders);
        if (req["kind"] == "background" && r_.chance(1, 2))
          req["child_session"] = r_.pick(children);
        break;
      case 5:
      case 6:
        req["op"] = "release";
        req["holder"] = r_.pick(holders);
        req["reason"] = r_.pick<std::string>({"completed", "error", "aborted"});
        break;
      case 7:
        req["op"] = "idle";
        req["session"] = r_.pick(children);
        break;
      case 8:
        req["op"] = "end";
        req["session"] = r_.pick(sessions);
        break;
      case 9:
        req["op"] = "bind";
        req["holder"] = r_.pick(holders);
        req["child_session"] = r_.pick(children);
        break;
      case 10:
        req["op"] = "adopt";
        req["session"] = r_.pick(sessions);
        req["holder"] = r_.pick(holders);
        req["child_session"] = r_.pick(children);
        break;
      default: req["op"] = "subscribe"; break;
    }
    return {req.dump(), id};
  }

  /// Nesting past the server's limit, in the id or in a field.
  fuzz_line deep() {
    size_t depth = 65 + r_.below(r_.chance(1, 2) ? 200 : 100000);
    bool arrays = r_.chance(1, 2);
    std::string value;
    if (arrays) {
      value = std::string(depth, '[') + std::string(depth, ']');
    } else {
      for (size_t i = 0; i < depth; ++i)
        value += "{\"k\":";
      value += "0" + std::string(depth, '}');
    }
    if (r_.chance(1, 3))
      return {"{\"id\":" + value + ",\"op\":\"hello\"}"};
    auto field = r_.pick<std::string>({"session", "holder", "x", "op"});
    return {"{\"id\":\"deep\",\"op\":\"acquire\",\"" + field + "\":" + value
            + "}"};
  }

  /// An odd or out-of-range number, as the id or in a field.
  fuzz_line odd_number() {
    auto& n = r_.pick(odd_numbers);
    if (r_.chance(1, 2))
      return {"{\"id\":" + n + ",\"op\":\"hello\"}"};
    return {"{\"id\":\"num\",\"op\":\""
            + std::string(r_.chance(1, 2) ? "hello" : "status") + "\",\"x\":["
            + n + "]}"};
  }

  /// A request with one field of the wrong type (or empty).
  fuzz_line wrong_type() {
    auto base = json::parse(valid().text);
    --next_id_; // its id is not owed a well-formed answer
    base["id"] = "wrong";
    static const std::vector<json> wrong{json(7),
                                         json(-1.5),
                                         json(true),
                                         json(nullptr),
                                         json(""),
                                         json::array({"a"}),
                                         json::object({{"a", 1}}),
                                         json("?")};
    std::vector<std::string> keys;
    for (auto& [key, value] : base.items())
      if (key != "id")
        keys.push_back(key);
    auto key = r_.pick(keys);
    auto replacement = r_.pick(wrong);
    // A non-empty string is a wrong value only where a fixed word is
    // expected; elsewhere it would be a fine name.
    if (replacement.is_string() && replacement != "" && key != "kind"
        && key != "reason")
      replacement = 5;
    base[key] = replacement;
    // Only refusals count: a value the op tolerates (e.g. a null optional
    // field) would make a real request out of it.
    if (key == "tool" || key == "parent" || key == "child_session")
      base["kind"] = 3;
    if (base["op"] == "hello" || base["op"] == "status"
        || base["op"] == "subscribe")
      base["op"] = json::array();
    return {base.dump()};
  }

  /// A huge string where the server must not echo all of it in an error.
  fuzz_line huge_string() {
    std::string big(1000 + r_.below(r_.chance(1, 4) ? 900000 : 20000),
                    static_cast<char>('a' + r_.below(26)));
    switch (r_.below(5)) {
      case 0: return {"{\"id\":\"huge\",\"op\":\"" + big + "\"}"};
      case 1:
        return {"{\"id\":\"huge\",\"op\":\"release\",\"holder\":\"h0\","
                "\"reason\":\""
                + big + "\"}"};
      case 2: return {"{\"id\":\"huge\",\"op\":\"hello\",\"" + big + "\":1}"};
      case 3:
        return {"{\"id\":\"huge\",\"op\":\"acquire\",\"session\":\"" + big
                + "\",\"holder\":\"h1\",\"kind\":\"" + big + "\"}"};
      default: return {"{\"id\":\"huge\",\"op\":\"hello\",\"x\":\"" + big};
    }
  }

  /// A line over the server's limit.
  fuzz_line over_long() {
    return {"{\"id\":1,\"op\":\"hello\",\"x\":\""
            + std::string(line_limit + r_.below(100000), 'x') + "\"}"};
  }

  /// A well-formed request cut short.
  fuzz_line truncated() {
    auto text = valid().text;
    --next_id_;
    return {text.substr(0, 1 + r_.below(text.size() - 1))};
  }

  /// Random bytes (no newline).
  fuzz_line random_bytes() {
    std::string text(1 + r_.below(200), '\0');
    for (auto& c : text) {
      c = static_cast<char>(r_.below(256));
      if (c == '\n')
        c = '{';
    }
    return {text};
  }

  /// Odd escapes and bytes inside strings.
  fuzz_line odd_string() {
    auto s = r_.pick(odd_strings);
    switch (r_.below(3)) {
      case 0: return {"{\"id\":\"str\",\"op\":\"hello\",\"x\":\"" + s + "\"}"};
      case 1: return {"{\"id\":\"" + s + "\",\"op\":\"status\"}"};
      default:
        return {"{\"id\":\"str\",\"op\":\"release\",\"holder\":\"" + s
                + "\",\"reason\":\"aborted\"}"};
    }
  }

  /// A blank line (no answer owed) or a request ended by CRLF.
  fuzz_line blank_or_crlf() {
    if (r_.chance(1, 2))
      return {r_.pick<std::string>({"", " ", "\t", "\r", " \t \r"})};
    auto line = valid();
    line.text += "\r";
    return line;
  }

  /// One line of a random kind.
  fuzz_line any() {
    auto roll = r_.below(100);
    if (roll < 35)
      return valid();
    if (roll < 42)
      return deep();
    if (roll < 52)
      return odd_number();
    if (roll < 64)
      return wrong_type();
    if (roll < 68)
      return huge_string();
    if (roll < 69)
      return over_long();
    if (roll < 79)
      return truncated();
    if (roll < 88)
      return random_bytes();
    if (roll < 95)
      return odd_string();
    return blank_or_crlf();
  }

 private:
  rng& r_;
  int64_t& next_id_;
};

/// What one batch expects back.
struct batch_plan {
  /// The bytes to send, newlines included.
  std::string bytes;
  /// Lines owed an answer.
  size_t owed = 0;
  /// Ids of well-formed requests, each owed exactly one answer.
  std::set<int64_t> ids;
};

batch_plan make_batch(rng& r, int64_t& next_id, int batch) {
  line_maker make{r, next_id};
  batch_plan plan;
  auto add = [&](const fuzz_line& line) {
    plan.bytes += line.text + "\n";
    if (!blank(line.text))
      ++plan.owed;
    if (line.id >= 0)
      plan.ids.insert(line.id);
  };
  size_t lines = 30 + r.below(50);
  for (size_t i = 0; i < lines; ++i)
    add(make.any());
  // A pipelined burst of cheap well-formed requests now and then.
  if (r.chance(1, 3)) {
    size_t burst = 200 + r.below(2000);
    for (size_t i = 0; i < burst; ++i)
      add(make.valid());
  }
  // End every session and ask for the status: the waits of this batch are
  // over by then, so every answer is in before the status answer.
  for (size_t i = 0; i < sessions.size(); ++i)
    plan.bytes
      += json{{"id", "end-" + std::to_string(batch) + "-" + std::to_string(i)},
              {"op", "end"},
              {"session", sessions[i]}}
           .dump()
         + "\n";
  plan.owed += sessions.size();
  plan.bytes
    += json{{"id", "sync-" + std::to_string(batch)}, {"op", "status"}}.dump()
       + "\n";
  ++plan.owed;
  return plan;
}

/// What came back for one batch.
struct batch_result {
  size_t answers = 0;
  std::map<int64_t, int> per_id;
  std::vector<std::string> problems;
};

/// Reads one batch's answers up to its `sync-<batch>` status answer, checking
/// that every line is one JSON object with either an id or an event.
batch_result read_batch(protocol_peer& p, int batch) {
  batch_result result;
  auto sync = "sync-" + std::to_string(batch);
  for (;;) {
    json x;
    try {
      x = p.next(30000ms);
    } catch (const json::exception& e) {
      result.problems.push_back(std::string{"a line that is not JSON: "}
                                + e.what());
      continue;
    } catch (const std::runtime_error& e) {
      result.problems.push_back(std::string{"no more answers: "} + e.what());
      return result;
    }
    if (!x.is_object() || (x.contains("id") == x.contains("event"))) {
      result.problems.push_back("not a protocol line: "
                                + x.dump().substr(0, 200));
      continue;
    }
    if (!x.contains("id"))
      continue;
    ++result.answers;
    if (!x["ok"].is_boolean())
      result.problems.push_back("an answer without ok: "
                                + x.dump().substr(0, 200));
    if (x["id"].is_number_integer())
      ++result.per_id[x["id"].get<int64_t>()];
    if (x["id"] == sync)
      return result;
  }
}

/// Checks one batch's answers against its plan.
void check_batch(const batch_plan& plan, const batch_result& got, int batch) {
  for (auto& problem : got.problems)
    CAF_FAIL("batch " << batch << ": " << problem);
  if (got.answers != plan.owed)
    CAF_FAIL("batch " << batch << ": " << plan.owed << " lines owed an answer, "
                      << got.answers << " answers came");
  for (auto id : plan.ids) {
    auto i = got.per_id.find(id);
    auto n = i == got.per_id.end() ? 0 : i->second;
    if (n != 1)
      CAF_FAIL("batch " << batch << ": request " << id << " answered " << n
                        << " times");
  }
}

/// Sends `bytes` from a thread (the server may stop reading until its
/// answers are read), so the caller can read meanwhile.
class background_write {
 public:
  background_write(int fd, std::string bytes)
    : bytes_(std::move(bytes)), thread_([this, fd] {
        size_t done = 0;
        while (done < bytes_.size()) {
          auto n = ::write(fd, bytes_.data() + done, bytes_.size() - done);
          if (n < 0 && errno == EINTR)
            continue;
          if (n <= 0)
            return;
          done += static_cast<size_t>(n);
        }
      }) {}

  ~background_write() {
    thread_.join();
  }

 private:
  std::string bytes_;
  std::thread thread_;
};

struct fuzz_settings {
  uint64_t seed;
  int batches;

  fuzz_settings()
    : seed(env_number("TASKFORCE_FUZZ_SEED", default_seed)),
      batches(static_cast<int>(
        env_number("TASKFORCE_FUZZ_BATCHES", default_batches))) {
    std::cerr << "protocol fuzz: seed " << seed << ", " << batches
              << " batches (replay with TASKFORCE_FUZZ_SEED=" << seed
              << " TASKFORCE_FUZZ_BATCHES=" << batches << ")" << std::endl;
  }
};

struct fixture {
  temp_dir dir;
  fuzz_settings settings;

  fixture() {
    // A server that dies must fail the test with a message, not kill the
    // test binary with SIGPIPE on the next write.
    ::signal(SIGPIPE, SIG_IGN);
  }

  std::string config() {
    return dir
      .write("config.json",
             R"({"pool": {"maxParallel": 2, "queueTimeoutMs": 0}})")
      .string();
  }
};

/// The server's VmRSS stays under its start-up size plus the bound.
void check_memory(pid_t pid, uint64_t baseline, int batch) {
  auto now = vm_rss_kib(pid);
  if (now > baseline + rss_growth_bound_kib)
    CAF_FAIL("batch " << batch << ": VmRSS " << now << " KiB, started at "
                      << baseline << " KiB");
}

} // namespace

CAF_TEST_FIXTURE_SCOPE(serve_fuzz_tests, fixture)

CAF_TEST(generated lines over stdio each get one answer and the server stays
           up and bounded) {
  CAF_MESSAGE("seed " << settings.seed);
  serve_process server(TASKFORCE_BINARY,
                       {"--config", config(), "serve", "--stdio"});
  auto& p = server.peer;
  p.call({{"id", "start"}, {"op", "hello"}});
  auto baseline = vm_rss_kib(server.pid());
  rng r{settings.seed};
  int64_t next_id = first_id;
  for (int batch = 0; batch < settings.batches; ++batch) {
    auto plan = make_batch(r, next_id, batch);
    bool slow = r.chance(1, 4);
    batch_result got;
    {
      background_write writer{p.out_fd(), plan.bytes};
      if (slow) {
        // A reader that falls behind: the server must stop reading rather
        // than grow.
        std::this_thread::sleep_for(300ms);
        check_memory(server.pid(), baseline, batch);
      }
      got = read_batch(p, batch);
    }
    server.skim_stderr();
    if (!server.running())
      CAF_FAIL("batch " << batch << ": the server exited with "
                        << server.exit_status() << "; replay with seed "
                        << settings.seed);
    check_batch(plan, got, batch);
    check_memory(server.pid(), baseline, batch);
    // The same connection still serves a well-behaved request.
    auto hello = p.call(
      {{"id", "hello-" + std::to_string(batch)}, {"op", "hello"}}, 10000ms);
    CAF_REQUIRE_EQUAL(hello["ok"], true);
  }
  CAF_MESSAGE("VmRSS at the end: " << vm_rss_kib(server.pid()) << " KiB");
  server.close_input();
  CAF_CHECK_EQUAL(server.wait(10000ms), 0);
}

CAF_TEST(generated lines over TCP each get one answer while other clients never
           read
         or vanish and a well behaved client is served) {
  CAF_MESSAGE("seed " << settings.seed);
  auto endpoint = (dir.path() / "endpoint.json").string();
  serve_process server(TASKFORCE_BINARY,
                       {"--config", config(), "serve", "--listen",
                        "127.0.0.1:0", "--token-file", endpoint});
  auto line = server.stderr_line();
  CAF_REQUIRE(line.has_value());
  auto port
    = static_cast<uint16_t>(std::stoi(line->substr(line->rfind(':') + 1)));
  auto token = token_in(endpoint);
  tcp_peer fuzzer{port, token};
  tcp_peer watcher{port, token};
  // A subscriber that never reads and keeps asking.
  tcp_peer mute{port, token, 4096};
  mute.peer.send_line(R"({"id":1,"op":"subscribe"})");
  std::string mute_burst;
  for (int i = 0; i < 2000; ++i)
    mute_burst += R"({"id":2,"op":"status"})"
                  "\n";
  watcher.peer.call({{"id", "start"}, {"op", "hello"}});
  auto baseline = vm_rss_kib(server.pid());
  rng r{settings.seed ^ 0x7463700aULL};
  int64_t next_id = first_id;
  for (int batch = 0; batch < settings.batches; ++batch) {
    auto plan = make_batch(r, next_id, batch);
    write_until_stalled(mute.peer.out_fd(), mute_burst, 20ms);
    // A client that sends a little garbage and vanishes mid-line.
    {
      tcp_peer vanishing{port, token};
      line_maker make{r, next_id};
      std::string junk = make.any().text + "\n" + make.random_bytes().text;
      write_until_stalled(vanishing.peer.out_fd(), junk, 200ms);
    }
    bool slow = r.chance(1, 4);
    batch_result got;
    {
      background_write writer{fuzzer.peer.out_fd(), plan.bytes};
      if (slow) {
        std::this_thread::sleep_for(300ms);
        check_memory(server.pid(), baseline, batch);
      }
      got = read_batch(fuzzer.peer, batch);
    }
    server.skim_stderr();
    if (!server.running())
      CAF_FAIL("batch " << batch << ": the server exited with "
                        << server.exit_status() << "; replay with seed "
                        << settings.seed);
    check_batch(plan, got, batch);
    check_memory(server.pid(), baseline, batch);
    auto hello = watcher.peer.call(
      {{"id", "hello-" + std::to_string(batch)}, {"op", "hello"}}, 10000ms);
    CAF_REQUIRE_EQUAL(hello["ok"], true);
    auto st = watcher.peer.call(
      {{"id", "status-" + std::to_string(batch)}, {"op", "status"}}, 10000ms);
    CAF_REQUIRE_EQUAL(st["ok"], true);
  }
  CAF_MESSAGE("VmRSS at the end: " << vm_rss_kib(server.pid()) << " KiB");
  server.signal(SIGTERM);
  CAF_CHECK_EQUAL(server.wait(10000ms), 0);
}

CAF_TEST_FIXTURE_SCOPE_END()
