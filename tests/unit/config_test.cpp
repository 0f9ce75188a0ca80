#define CAF_SUITE unit.config
#include <caf/test/unit_test.hpp>

#include "src/config/config.hpp"
#include "test.hpp"

using namespace taskforce;

namespace {

/// The error message for `text`, or "" when it loads.
std::string refusal(const std::string& text) {
  try {
    parse_config(text, "cfg.json");
  } catch (const config_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

} // namespace

CAF_TEST(an empty object gives the documented defaults) {
  auto cfg = parse_config("{}", "cfg.json");
  CAF_CHECK_EQUAL(cfg.pool.max_parallel, 2u);
  CAF_CHECK(cfg.pool.mode == pool_mode::session);
  CAF_CHECK_EQUAL(cfg.pool.queue_timeout_ms, 300000);
  CAF_CHECK_EQUAL(cfg.pool.max_hold_ms, 3600000);
  CAF_CHECK(cfg.pool.nested == nested_policy::lend);
  CAF_CHECK_EQUAL(cfg.pool.subagent_tool_names.size(), 1u);
  CAF_CHECK_EQUAL(cfg.pool.idle_memory_ms, 10000);
  CAF_CHECK_EQUAL(cfg.run.max_concurrency, 3u);
  CAF_CHECK_EQUAL(cfg.run.max_attempts, 2u);
}

CAF_TEST(the shipped config file equals the built-in defaults) {
  auto shipped = load_config(TASKFORCE_SOURCE_DIR "/config/taskforce.json");
  CAF_CHECK_EQUAL(config_json(shipped), config_json(config{}));
}

CAF_TEST(maxParallel must be a positive safe integer) {
  for (auto bad : {"0", "-1", "1.5", "9007199254740992", "\"2\"", "null"}) {
    auto message = refusal(std::string{R"({"pool":{"maxParallel":)"} + bad
                           + "}}");
    CAF_CHECK(contains(message, "pool.maxParallel"));
    CAF_CHECK(contains(message, bad));
    CAF_CHECK(contains(message, "positive safe integer"));
  }
  CAF_CHECK_EQUAL(
    parse_config(R"({"pool":{"maxParallel":2.0}})", "c").pool.max_parallel,
    2u);
  CAF_CHECK_EQUAL(parse_config(R"({"pool":{"maxParallel":9007199254740991}})",
                               "c")
                    .pool.max_parallel,
                  9007199254740991u);
}

CAF_TEST(subagentToolNames needs at least one non-empty name) {
  for (auto bad : {"[]", "[\"\"]", "\"task\"", "[1]"}) {
    auto message = refusal(std::string{R"({"pool":{"subagentToolNames":)"}
                           + bad + "}}");
    CAF_CHECK(contains(message, "pool.subagentToolNames"));
    CAF_CHECK(contains(message, "at least one non-empty string"));
  }
}

CAF_TEST(an unknown mode names the allowed values) {
  auto message = refusal(R"({"pool":{"mode":"galactic"}})");
  CAF_CHECK(contains(message, "pool.mode"));
  CAF_CHECK(contains(message, "\"galactic\""));
  CAF_CHECK(contains(message, "\"session\" or \"global\""));
  CAF_CHECK(contains(refusal(R"({"pool":{"nested":"borrow"}})"),
                     "\"lend\" or \"fail_fast\""));
}

CAF_TEST(negative timeouts are refused) {
  for (auto key : {"queueTimeoutMs", "maxHoldMs", "idleMemoryMs"}) {
    auto message = refusal(std::string{R"({"pool":{")"} + key + "\":-5}}");
    CAF_CHECK(contains(message, std::string{"pool."} + key));
    CAF_CHECK(contains(message, "-5"));
  }
  CAF_CHECK(contains(refusal(R"({"pool":{"maxHoldMs":0}})"), "positive"));
  CAF_CHECK_EQUAL(
    parse_config(R"({"pool":{"queueTimeoutMs":0}})", "c").pool.queue_timeout_ms,
    0);
}

CAF_TEST(unknown keys are refused with the nearest known key) {
  auto message = refusal(R"({"pool":{"maxParalel":3}})");
  CAF_CHECK(contains(message, "unknown key \"pool.maxParalel\""));
  CAF_CHECK(contains(message, "did you mean \"pool.maxParallel\""));
  CAF_CHECK(contains(refusal(R"({"pol":{}})"), "did you mean \"pool\""));
  CAF_CHECK(contains(refusal(R"({"run":{"maxconcurrency":1}})"),
                     "did you mean \"run.maxConcurrency\""));
  CAF_CHECK(contains(refusal(R"({"pool":{"zzzzzzzzz":1}})"), "unknown key"));
}

CAF_TEST(run keys are validated too) {
  CAF_CHECK(contains(refusal(R"({"run":{"holdPattern":["(unclosed"]}})"),
                     "run.holdPattern"));
  CAF_CHECK(contains(refusal(R"({"run":{"worker":"robot"}})"),
                     "\"shell\", \"agent\" or \"scripted\""));
  CAF_CHECK(contains(refusal(R"({"run":{"autoMerge":"yes"}})"),
                     "true or false"));
}

CAF_TEST(malformed JSON names the file) {
  auto message = refusal("{\"pool\": ");
  CAF_CHECK(contains(message, "cfg.json"));
  CAF_CHECK(contains(message, "not valid JSON"));
  CAF_CHECK(contains(refusal("[]"), "must be a JSON object"));
}

CAF_TEST(a file that cannot be read is an error) {
  taskforce::test::temp_dir dir;
  std::string message;
  try {
    load_config((dir.path() / "missing.json").string());
  } catch (const config_error& e) {
    message = e.what();
  }
  CAF_CHECK(contains(message, "missing.json: cannot read"));
}
