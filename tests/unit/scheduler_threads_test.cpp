#define CAF_SUITE unit.scheduler_threads
#include <caf/test/unit_test.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <caf/actor_system_config.hpp>

#include "actors/runtime_config.hpp"
#include "paths.hpp"
#include "src/text/file.hpp"

using namespace taskforce;
namespace fs = std::filesystem;

namespace {

/// Sets TASKFORCE_THREADS (or unsets it) for one scope.
struct threads_variable {
  std::optional<std::string> before;
  explicit threads_variable(const char* value) {
    if (auto* v = std::getenv("TASKFORCE_THREADS"))
      before = v;
    if (value)
      ::setenv("TASKFORCE_THREADS", value, 1);
    else
      ::unsetenv("TASKFORCE_THREADS");
  }
  ~threads_variable() {
    if (before)
      ::setenv("TASKFORCE_THREADS", before->c_str(), 1);
    else
      ::unsetenv("TASKFORCE_THREADS");
  }
};

size_t max_threads(const runtime_config& cfg) {
  return caf::get_or(cfg, "scheduler.max-threads", size_t{0});
}

} // namespace

CAF_TEST(the default is one thread) {
  CAF_CHECK_EQUAL(default_scheduler_threads, 1u);
  CAF_CHECK_EQUAL(scheduler_threads(nullptr).threads, 1u);
  CAF_CHECK_EQUAL(scheduler_threads(nullptr).warning, "");
  CAF_CHECK_EQUAL(scheduler_threads("").threads, 1u);
  threads_variable unset{nullptr};
  runtime_config cfg{0, false};
  CAF_CHECK_EQUAL(max_threads(cfg), 1u);
}

CAF_TEST(a number from 1 to 256 is taken) {
  CAF_CHECK_EQUAL(scheduler_threads("1").threads, 1u);
  CAF_CHECK_EQUAL(scheduler_threads("3").threads, 3u);
  CAF_CHECK_EQUAL(scheduler_threads("256").threads, 256u);
  CAF_CHECK_EQUAL(scheduler_threads("256").warning, "");
  threads_variable three{"3"};
  runtime_config cfg{0, false};
  CAF_CHECK_EQUAL(max_threads(cfg), 3u);
  // A number the caller gives wins over the variable.
  runtime_config two{2, false};
  CAF_CHECK_EQUAL(max_threads(two), 2u);
}

CAF_TEST(anything else is the default with a warning naming the value) {
  for (auto bad :
       {"0", "257", "-1", "abc", "3abc", " 2", "2.5", "99999999999"}) {
    auto chosen = scheduler_threads(bad);
    CAF_CHECK_EQUAL(chosen.threads, 1u);
    CAF_CHECK_EQUAL(chosen.warning,
                    "TASKFORCE_THREADS=" + std::string{bad}
                      + " is not a number of threads from 1 to 256; using 1");
  }
  threads_variable bad{"lots"};
  runtime_config cfg{0, false};
  CAF_CHECK_EQUAL(max_threads(cfg), 1u);
}

CAF_TEST(the documentation states the same default) {
  // Each mention of the variable's default in the README and docs/, and the
  // public header's, say what the code does.
  fs::path root{TASKFORCE_SOURCE_DIR};
  auto expected = "default " + std::to_string(default_scheduler_threads);
  size_t mentions = 0;
  for (auto file : {root / "README.md", root / "docs" / "cli.md",
                    root / "docs" / "embedding.md"}) {
    auto text = read_file(file).value_or("");
    for (auto at = text.find("TASKFORCE_THREADS"); at != std::string::npos;
         at = text.find("TASKFORCE_THREADS", at + 1)) {
      // The rest of its line.
      auto end = text.find('\n', at);
      auto said = text.substr(at, end == std::string::npos ? end : end - at);
      auto d = said.find("default");
      if (d == std::string::npos)
        continue;
      ++mentions;
      CAF_CHECK_EQUAL(said.substr(d, expected.size()), expected);
    }
  }
  CAF_CHECK(mentions >= 1);
  auto header = read_file(root / "include" / "taskforce" / "runtime.hpp");
  CAF_REQUIRE(header.has_value());
  CAF_CHECK(header->find("TASKFORCE_THREADS environment variable\n  /// (1 to "
                         "256), else one.")
            != std::string::npos);
}
