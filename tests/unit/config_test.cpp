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
  CAF_CHECK(cfg.pool.subagent_tool_names
            == (std::vector<std::string>{"Task", "Agent", "task"}));
  CAF_CHECK_EQUAL(cfg.pool.idle_memory_ms, 10000);
  CAF_CHECK_EQUAL(cfg.run.max_concurrency, 3u);
  CAF_CHECK_EQUAL(cfg.run.max_attempts, 2u);
}

CAF_TEST(the shipped config file equals the built - in defaults) {
  auto shipped
    = load_config(std::string{TASKFORCE_SOURCE_DIR} + "/config/taskforce.json");
  CAF_CHECK_EQUAL(config_json(shipped), config_json(config{}));
}

CAF_TEST(maxParallel must be a positive safe integer) {
  for (auto bad : {"0", "-1", "1.5", "9007199254740992", "\"2\"", "null"}) {
    auto message
      = refusal(std::string{R"({"pool":{"maxParallel":)"} + bad + "}}");
    CAF_CHECK(contains(message, "pool.maxParallel"));
    CAF_CHECK(contains(message, bad));
    CAF_CHECK(contains(message, "positive safe integer"));
  }
  CAF_CHECK_EQUAL(
    parse_config(R"({"pool":{"maxParallel":2.0}})", "c").pool.max_parallel, 2u);
  CAF_CHECK_EQUAL(
    parse_config(R"({"pool":{"maxParallel":9007199254740991}})", "c")
      .pool.max_parallel,
    9007199254740991u);
}

CAF_TEST(subagentToolNames needs at least one non - empty name) {
  for (auto bad : {"[]", "[\"\"]", "\"task\"", "[1]"}) {
    auto message
      = refusal(std::string{R"({"pool":{"subagentToolNames":)"} + bad + "}}");
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
  CAF_CHECK(
    contains(refusal(R"({"run":{"autoMerge":"yes"}})"), "true or false"));
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

CAF_TEST(numbers beyond double name the key the value and the rule) {
  auto message = refusal(R"({"pool": {"maxHoldMs": 1e400}})");
  CAF_CHECK_EQUAL(message, "cfg.json: pool.maxHoldMs = 1e400 is refused: must "
                           "be a positive safe integer (1 ... 2^53-1)");
  CAF_CHECK(contains(refusal(R"({"pool":{"idleMemoryMs":-1e400}})"),
                     "pool.idleMemoryMs = -1e400 is refused: must be a "
                     "non-negative safe integer"));
  CAF_CHECK(contains(refusal(R"({"run":{"fields":{"Scope":1e400}}})"),
                     "run.fields holds 1e400, which is refused: run.fields "
                     "must be an object"));
  CAF_CHECK(contains(refusal(R"({"pool":{"subagentToolNames":["a",-1e999]}})"),
                     "pool.subagentToolNames holds -1e999"));
  CAF_CHECK(contains(refusal(R"({"run":{"workerModel":1e400}})"),
                     "run.workerModel = 1e400 is refused: must be empty or "
                     "provider/model"));
  // Where no key applies, the message still names the file and the number.
  CAF_CHECK(contains(refusal(R"({"pool": 1e400})"),
                     "cfg.json: \"pool\" must be an object of settings, got "
                     "1e400"));
  CAF_CHECK(contains(refusal(R"({"pool": {"bogus": 1e400}})"),
                     "unknown key \"pool.bogus\""));
  CAF_CHECK(
    contains(refusal(R"({"//": [1e400]})"), "cfg.json: \"//\" holds 1e400"));
  CAF_CHECK(contains(refusal("1e400"), "cfg.json"));
  CAF_CHECK(contains(refusal("1e400"), "1e400"));
  // A very long number is shown shortened.
  auto long_number = "1" + std::string(5000, '0');
  auto shown = refusal(R"({"pool": {"maxHoldMs": )" + long_number + "}}");
  CAF_CHECK(contains(shown, "pool.maxHoldMs"));
  CAF_CHECK_LESS(shown.size(), 300u);
}

CAF_TEST(deep nesting is refused before it is built) {
  auto deep = std::string(100000, '[') + std::string(100000, ']');
  auto message = refusal(R"({"pool": {"maxParallel": )" + deep + "}}");
  CAF_CHECK(contains(message, "cfg.json: pool.maxParallel"));
  CAF_CHECK(contains(message, "nested deeper than"));
  CAF_CHECK_LESS(message.size(), 300u);
  CAF_CHECK(contains(refusal(std::string(100000, '[')), "nested deeper than"));
  // Ordinary nesting is fine.
  CAF_CHECK_EQUAL(parse_config(R"({"run":{"fields":{"Scope":"files"}}})", "c")
                    .run.fields.at("Scope"),
                  "files");
}

CAF_TEST(values shown in errors are bounded) {
  auto big = "\"" + std::string(100000, 'x') + "\"";
  auto message = refusal(R"({"pool": {"maxParallel": )" + big + "}}");
  CAF_CHECK(contains(message, "pool.maxParallel = \"xxxx"));
  CAF_CHECK_LESS(message.size(), 300u);
  std::string wide = "[";
  for (int i = 0; i < 10000; ++i)
    wide += "1,";
  wide += "1]";
  CAF_CHECK_LESS(refusal(R"({"pool": {"mode": )" + wide + "}}").size(), 300u);
}

CAF_TEST(invalid utf8 and syntax errors name the file the key and the place) {
  auto message = refusal("{\"pool\": {\"mode\": \"glob\xff\"}}");
  CAF_CHECK(contains(message, "cfg.json: pool.mode"));
  CAF_CHECK(contains(message, "line 1, column"));
  CAF_CHECK(contains(message, "UTF-8"));
  CAF_CHECK(!contains(message, "\xff"));
  CAF_CHECK(!contains(message, "json.exception"));
  auto syntax = refusal("{\"pool\": {\"maxParallel\": 2,,}}");
  CAF_CHECK(contains(syntax, "cfg.json"));
  CAF_CHECK(contains(syntax, "not valid JSON"));
  CAF_CHECK(!contains(syntax, "json.exception"));
}

CAF_TEST(hostile numbers are refused and the limits of the rules hold) {
  for (auto bad : {"-1", "-0.5", "9007199254740992", "9223372036854775807",
                   "9223372036854775808", "18446744073709551616", "1.5", "1e16",
                   "\"5\"", "null", "[]", "{}", "true"})
    for (auto key :
         {"maxHoldMs", "queueTimeoutMs", "idleMemoryMs", "maxParallel"})
      CAF_CHECK(contains(
        refusal(std::string{R"({"pool":{")"} + key + "\":" + bad + "}}"),
        std::string{"pool."} + key + " = "));
  // -0 and 0.0 are zero: allowed where zero is, refused where it is not.
  CAF_CHECK_EQUAL(parse_config(R"({"pool":{"queueTimeoutMs":-0}})", "c")
                    .pool.queue_timeout_ms,
                  0);
  CAF_CHECK_EQUAL(
    parse_config(R"({"pool":{"idleMemoryMs":-0.0}})", "c").pool.idle_memory_ms,
    0);
  CAF_CHECK(contains(refusal(R"({"pool":{"maxHoldMs":-0}})"),
                     "pool.maxHoldMs = 0 is refused"));
  // The longest limits are accepted as written.
  auto cfg = parse_config(R"({"pool":{"maxHoldMs":9223372036855,)"
                          R"("queueTimeoutMs":9007199254740991,)"
                          R"("idleMemoryMs":1e15}})",
                          "c");
  CAF_CHECK_EQUAL(cfg.pool.max_hold_ms, 9223372036855);
  CAF_CHECK_EQUAL(cfg.pool.queue_timeout_ms, 9007199254740991);
  CAF_CHECK_EQUAL(cfg.pool.idle_memory_ms, 1000000000000000);
}

CAF_TEST(server idleExitMs is a positive safe integer) {
  for (auto bad : {"0", "-5", "1.5", "\"60000\""}) {
    auto message
      = refusal(std::string{R"({"server":{"idleExitMs":)"} + bad + "}}");
    CAF_CHECK(contains(message, "server.idleExitMs"));
    CAF_CHECK(contains(message, "positive safe integer"));
  }
  CAF_CHECK_EQUAL(
    parse_config(R"({"server":{"idleExitMs":250}})", "c").server.idle_exit_ms,
    250);
  CAF_CHECK_EQUAL(config{}.server.idle_exit_ms, 600000);
}

CAF_TEST(server listen is validated like serve-- listen) {
  for (auto bad : {"nope", "127.0.0.1:65536", "host:", "::1:80", "1.2.3.4:-1",
                   "", "[]:80", "a b:80"}) {
    auto message
      = refusal(std::string{R"({"server":{"listen":")"} + bad + "\"}}");
    CAF_MESSAGE(message);
    CAF_CHECK(contains(message, "cfg.json: server.listen = \""));
    CAF_CHECK(contains(message, "HOST:PORT"));
  }
  CAF_CHECK(contains(refusal(R"({"server":{"listen":7411}})"),
                     "server.listen = 7411 is refused"));
  for (auto good : {"127.0.0.1:0", ":7411", "7411", "[::1]:80",
                    "localhost:65535", "0.0.0.0:80"})
    CAF_CHECK_EQUAL(
      parse_config(std::string{R"({"server":{"listen":")"} + good + "\"}}", "c")
        .server.listen,
      good);
}

CAF_TEST(the control section has its defaults and refuses bad values) {
  auto cfg = parse_config("{}", "cfg.json");
  CAF_CHECK_EQUAL(cfg.control.max_concurrent, 4u);
  CAF_CHECK_EQUAL(cfg.control.max_monitors, 8u);
  CAF_CHECK(cfg.control.enforce_write_roots);
  CAF_CHECK(cfg.control.require_completion);
  CAF_CHECK_EQUAL(cfg.control.validation_timeout_ms, 600000u);
  CAF_CHECK_EQUAL(cfg.control.max_output_bytes, 65536u);
  auto set = parse_config(R"({"control":{"maxConcurrent":1,"maxMonitors":2,)"
                          R"("enforceWriteRoots":false,)"
                          R"("requireCompletion":false,)"
                          R"("validationTimeoutMs":30,"maxOutputBytes":32}})",
                          "cfg.json");
  CAF_CHECK_EQUAL(set.control.max_concurrent, 1u);
  CAF_CHECK_EQUAL(set.control.max_monitors, 2u);
  CAF_CHECK(!set.control.enforce_write_roots);
  CAF_CHECK(!set.control.require_completion);
  CAF_CHECK_EQUAL(set.control.validation_timeout_ms, 30u);
  CAF_CHECK_EQUAL(set.control.max_output_bytes, 32u);
  CAF_CHECK(contains(refusal(R"({"control":{"maxConcurrent":0}})"),
                     "cfg.json: control.maxConcurrent = 0 is refused"));
  CAF_CHECK(contains(refusal(R"({"control":{"maxOutputBytes":1e400}})"),
                     "control.maxOutputBytes = 1e400 is refused"));
  CAF_CHECK(contains(refusal(R"({"control":{"enforceWriteRoots":"yes"}})"),
                     "control.enforceWriteRoots"));
  CAF_CHECK(contains(refusal(R"({"control":{"maxMonitor":3}})"),
                     "did you mean \"control.maxMonitors\""));
}

CAF_TEST(
  hold patterns are bounded so compiling them cannot overflow the stack) {
  auto deep = std::string(100000, '(') + std::string(100000, ')');
  auto message = refusal(R"({"run":{"holdPattern":[")" + deep + "\"]}}");
  CAF_CHECK(contains(message, "run.holdPattern"));
  CAF_CHECK(contains(message, "at most 1000 characters"));
  CAF_CHECK_LESS(message.size(), 400u);
  auto longest = std::string(500, '(') + std::string(500, ')');
  CAF_CHECK_EQUAL(
    parse_config(R"({"run":{"holdPattern":[")" + longest + "\"]}}", "c")
      .run.hold_pattern.size(),
    1u);
}

CAF_TEST(askUserOnBlocked is a run key and must be a boolean) {
  CAF_CHECK(!parse_config("{}", "cfg.json").run.ask_user_on_blocked);
  auto cfg = parse_config(R"({"run":{"askUserOnBlocked":true}})", "cfg.json");
  CAF_CHECK(cfg.run.ask_user_on_blocked);
  auto message = refusal(R"({"run":{"askUserOnBlocked":"yes"}})");
  CAF_CHECK(contains(message, "run.askUserOnBlocked"));
  CAF_CHECK(contains(message, "true or false"));
}

CAF_TEST(the run policy keys are checked with their rules) {
  auto cfg = parse_config(R"({"run":{
    "maxCostUsd": 1.5, "maxTokens": 1000,
    "roleModels": {"reviewer": "anthropic/claude-sonnet-4-5#thinking"},
    "fallbackModels": ["openai/gpt-4o-mini", "openrouter/meta/llama-3"],
    "workerModel": "anthropic/claude-sonnet-4-5",
    "workerSkills": ["tdd"], "workerContract": "none",
    "verifierEnabled": true, "verifierPreset": "codex",
    "verifierPrompt": "check the tests", "verifyMerged": false,
    "flipCheckboxes": true, "progressFile": "progress.md",
    "detectCompletion": "checkboxes",
    "coChangeLearning": true, "coChangeMinCount": 3}})",
                          "c");
  CAF_CHECK_EQUAL(cfg.run.max_cost_usd, 1.5);
  CAF_CHECK_EQUAL(cfg.run.max_tokens, 1000);
  CAF_CHECK_EQUAL(cfg.run.role_models.at("reviewer"),
                  "anthropic/claude-sonnet-4-5#thinking");
  CAF_CHECK_EQUAL(cfg.run.fallback_models.size(), 2u);
  CAF_CHECK_EQUAL(cfg.run.worker_contract, "none");
  CAF_CHECK(cfg.run.verifier_enabled);
  CAF_CHECK(!cfg.run.verify_merged);
  CAF_CHECK_EQUAL(cfg.run.detect_completion, "checkboxes");
  CAF_CHECK_EQUAL(cfg.run.co_change_min_count, 3u);
  struct refused {
    const char* text;
    const char* key;
    const char* rule;
  };
  for (auto [text, key, rule] : std::vector<refused>{
         {R"({"run":{"maxCostUsd":-1}})", "run.maxCostUsd", "non-negative"},
         {R"({"run":{"maxCostUsd":"5"}})", "run.maxCostUsd", "non-negative"},
         {R"({"run":{"maxCostUsd":1e400}})", "run.maxCostUsd", "1e400"},
         {R"({"run":{"maxTokens":1.5}})", "run.maxTokens", "safe integer"},
         {R"({"run":{"maxTokens":9007199254740992}})", "run.maxTokens",
          "safe integer"},
         {R"({"run":{"workerModel":"sonnet"}})", "run.workerModel",
          "provider/model"},
         {R"({"run":{"fallbackModels":["openai/"]}})", "run.fallbackModels",
          "provider/model"},
         {R"({"run":{"roleModels":{"reviewer":"x y/z"}}})", "run.roleModels",
          "reviewer"},
         {R"({"run":{"roleModels":["a/b"]}})", "run.roleModels", "object"},
         {R"({"run":{"workerContract":"strict"}})", "run.workerContract",
          "\"generic\" or \"none\""},
         {R"({"run":{"detectCompletion":"auto"}})", "run.detectCompletion",
          "\"report\" or \"checkboxes\""},
         {R"({"run":{"coChangeMinCount":0}})", "run.coChangeMinCount",
          "positive safe integer"},
         {R"({"run":{"workerSkills":[""]}})", "run.workerSkills", "strings"},
         {R"({"run":{"verifyMerged":1}})", "run.verifyMerged", "true or false"},
       }) {
    auto message = refusal(text);
    CAF_CHECK(contains(message, key));
    if (!contains(message, rule))
      CAF_FAIL(message << " does not say " << rule);
  }
}
