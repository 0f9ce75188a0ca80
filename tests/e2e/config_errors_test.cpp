// Hostile config files against every command that loads the config: each is
// refused with exit 2 and a message naming the file, the key (where there is
// one), the value and the rule; never a crash, never a raw library message.
#define CAF_SUITE e2e.config_errors
#include <caf/test/unit_test.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "src/proc/spawn.hpp"
#include "test.hpp"

using namespace taskforce;
namespace fs = std::filesystem;

namespace {

struct outcome {
  int status = -1;
  std::string out;
  std::string err;
};

/// Runs `taskforce args...` in `cwd` with standard input closed.
outcome taskforce_cli(const std::vector<std::string>& args,
                      const fs::path& cwd) {
  test::temp_dir scratch;
  proc::spawn_options opts;
  opts.argv = {TASKFORCE_BINARY};
  opts.argv.insert(opts.argv.end(), args.begin(), args.end());
  opts.cwd = cwd.string();
  opts.in = proc::stdio::null();
  opts.out = proc::stdio::file((scratch.path() / "out").string());
  opts.err = proc::stdio::file((scratch.path() / "err").string());
  auto child = proc::spawn(opts);
  auto status = proc::wait_for(child.pid);
  return {status.code, test::read_file(scratch.path() / "out"),
          test::read_file(scratch.path() / "err")};
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

/// Whether `text` is printable ASCII and newlines only.
bool clean_text(const std::string& text) {
  for (unsigned char c : text)
    if ((c < 0x20 && c != '\n') || c >= 0x7f)
      return false;
  return true;
}

/// A scratch repository (a `.git` folder is enough to be found as one) with
/// a task file.
struct fixture {
  test::temp_dir dir;
  fixture() {
    fs::create_directories(dir.path() / ".git");
    dir.write("tasks.md", "- [ ] t1: Do a thing\n  - files: a.txt\n");
  }

  /// Every command that loads the config, with `--config FILE`.
  std::vector<std::vector<std::string>> commands(const std::string& file) {
    return {{"--config", file, "config"},
            {"--config", file, "plan", "tasks.md"},
            {"--config", file, "serve", "--stdio"},
            {"--config", file, "serve", "--listen", "127.0.0.1:0"},
            {"--config", file, "run", "tasks.md"}};
  }

  /// Checks that every command refuses `text` with exit 2 and a message
  /// holding each of `needles`.
  void refused_everywhere(const std::string& text,
                          const std::vector<std::string>& needles) {
    auto file = dir.write("hostile.json", text).string();
    for (auto& args : commands(file)) {
      auto r = taskforce_cli(args, dir.path());
      CAF_MESSAGE(args[2] << ": " << r.err);
      CAF_CHECK_EQUAL(r.status, 2);
      CAF_CHECK_EQUAL(r.out, "");
      CAF_CHECK(contains(r.err, "hostile.json"));
      for (auto& needle : needles)
        CAF_CHECK(contains(r.err, needle));
      CAF_CHECK(!contains(r.err, "json.exception"));
      CAF_CHECK(clean_text(r.err));
      CAF_CHECK(r.err.size() < 2000);
    }
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(config_errors_tests, fixture)

CAF_TEST(a number beyond double names the key the value and the rule) {
  refused_everywhere(R"({"pool": {"maxHoldMs": 1e400}})",
                     {"pool.maxHoldMs", "1e400", "positive safe integer"});
  refused_everywhere(R"({"run": {"taskTimeoutMs": -1e400}})",
                     {"run.taskTimeoutMs", "-1e400", "positive safe integer"});
  refused_everywhere(R"({"pool": {"subagentToolNames": ["task", 1e999]}})",
                     {"pool.subagentToolNames", "1e999"});
}

CAF_TEST(a config the repository holds is refused the same way) {
  dir.write(".taskforce/config.json", R"({"pool": {"queueTimeoutMs": 1e400}})");
  for (auto args : std::vector<std::vector<std::string>>{
         {"config"}, {"plan", "tasks.md"}, {"serve", "--stdio"}}) {
    auto r = taskforce_cli(args, dir.path());
    CAF_CHECK_EQUAL(r.status, 2);
    CAF_CHECK(contains(r.err, "config.json"));
    CAF_CHECK(contains(r.err, "pool.queueTimeoutMs = 1e400"));
  }
}

CAF_TEST(deep nesting is refused without a crash) {
  auto deep = std::string(100000, '[') + std::string(100000, ']');
  refused_everywhere(R"({"pool": {"maxParallel": )" + deep + "}}",
                     {"pool.maxParallel", "nested"});
  std::string objects;
  for (int i = 0; i < 100000; ++i)
    objects += "{\"a\":";
  objects += "1" + std::string(100000, '}');
  refused_everywhere(R"({"run": {"fields": )" + objects + "}}",
                     {"run.fields", "nested"});
}

CAF_TEST(invalid utf8 is refused naming the file and the key) {
  refused_everywhere("{\"pool\": {\"mode\": \"glob\xff\xfe\"}}",
                     {"pool.mode", "UTF-8"});
}

CAF_TEST(server listen must be an address serve accepts) {
  for (auto bad : {"nope", "127.0.0.1:99999", "127.0.0.1:", "::1:80",
                   "127.0.0.1:http", ""}) {
    auto text = std::string{R"({"server": {"listen": ")"} + bad + "\"}}";
    refused_everywhere(text, {"server.listen", "HOST:PORT", "0 ... 65535"});
  }
  for (auto good :
       {"127.0.0.1:0", ":7411", "7411", "[::1]:80", "localhost:65535"}) {
    auto file = dir.write("good.json", std::string{R"({"server": {"listen": ")"}
                                         + good + "\"}}");
    auto r = taskforce_cli({"--config", file.string(), "config"}, dir.path());
    CAF_CHECK_EQUAL(r.status, 0);
    CAF_CHECK(contains(r.out, good));
  }
}

CAF_TEST(hostile values of every kind are refused with their key) {
  struct probe {
    const char* key;
    const char* section;
  };
  for (auto p : {probe{"maxParallel", "pool"}, probe{"maxHoldMs", "pool"},
                 probe{"queueTimeoutMs", "pool"}, probe{"idleMemoryMs", "pool"},
                 probe{"maxConcurrency", "run"}, probe{"taskTimeoutMs", "run"},
                 probe{"verifyTimeoutMs", "run"}}) {
    for (auto value : {"-1", "9007199254740992", "9223372036854775808",
                       "18446744073709551616", "1.5", "\"5\"", "null", "[]",
                       "{}", "true", "-9223372036854775809"}) {
      auto file = dir.write("v.json", std::string{"{\""} + p.section + "\": {\""
                                        + p.key + "\": " + value + "}}");
      auto r = taskforce_cli({"--config", file.string(), "config"}, dir.path());
      CAF_MESSAGE(p.key << " = " << value << ": " << r.err);
      CAF_CHECK_EQUAL(r.status, 2);
      CAF_CHECK(contains(r.err, std::string{p.section} + "." + p.key));
      CAF_CHECK(contains(r.err, "safe integer"));
    }
  }
}

CAF_TEST_FIXTURE_SCOPE_END()
