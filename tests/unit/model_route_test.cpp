#define CAF_SUITE unit.model_route
#include <caf/test/unit_test.hpp>

#include <string>

#include "src/worker/model_route.hpp"

using namespace taskforce;

namespace {

run_config agents() {
  run_config cfg;
  cfg.worker = "agent";
  cfg.agent_preset = "claude";
  return cfg;
}

} // namespace

CAF_TEST(without any model the agent keeps its own default) {
  auto cfg = agents();
  CAF_CHECK_EQUAL(route_model("", "", cfg, 0), "");
  CAF_CHECK_EQUAL(route_model("", "reviewer", cfg, 0), "");
}

CAF_TEST(each level of the chain wins over the ones after it) {
  auto cfg = agents();
  cfg.worker_model = "anthropic/sonnet";
  cfg.role_models = {{"reviewer", "openai/gpt-5"}};
  // workerModel for a task without agent: or with an agent not in the map
  CAF_CHECK_EQUAL(route_model("", "", cfg, 0), "anthropic/sonnet");
  CAF_CHECK_EQUAL(route_model("", "codex", cfg, 0), "anthropic/sonnet");
  // roleModels[agent] over workerModel
  CAF_CHECK_EQUAL(route_model("", "reviewer", cfg, 0), "openai/gpt-5");
  // the task's model: over both
  CAF_CHECK_EQUAL(route_model("google/gemini#fast", "reviewer", cfg, 0),
                  "google/gemini#fast");
  CAF_CHECK_EQUAL(route_model("google/gemini", "", cfg, 0), "google/gemini");
}

CAF_TEST(the role map is keyed by the task agent value only) {
  auto cfg = agents();
  cfg.role_models = {{"claude", "anthropic/opus"}};
  // run.agentPreset is claude, but a task without agent: is no role
  CAF_CHECK_EQUAL(route_model("", "", cfg, 0), "");
  CAF_CHECK_EQUAL(route_model("", "claude", cfg, 0), "anthropic/opus");
}

CAF_TEST(retries after failures walk the fallbacks and keep the last) {
  auto cfg = agents();
  cfg.worker_model = "a/primary";
  cfg.fallback_models = {"b/first", "c/second"};
  CAF_CHECK_EQUAL(route_model("", "", cfg, 0), "a/primary");
  CAF_CHECK_EQUAL(route_model("", "", cfg, 1), "b/first");
  CAF_CHECK_EQUAL(route_model("", "", cfg, 2), "c/second");
  CAF_CHECK_EQUAL(route_model("", "", cfg, 3), "c/second");
  CAF_CHECK_EQUAL(route_model("", "", cfg, 1000000), "c/second");
  // a task's own model is only the first try's
  CAF_CHECK_EQUAL(route_model("x/own", "", cfg, 0), "x/own");
  CAF_CHECK_EQUAL(route_model("x/own", "", cfg, 1), "b/first");
}

CAF_TEST(without fallbacks a retry stays on the chain model) {
  auto cfg = agents();
  cfg.worker_model = "a/primary";
  CAF_CHECK_EQUAL(route_model("", "", cfg, 5), "a/primary");
  CAF_CHECK_EQUAL(route_model("x/own", "", cfg, 5), "x/own");
}

CAF_TEST(shell and scripted tasks run on no model) {
  auto cfg = agents();
  cfg.worker_model = "a/primary";
  cfg.fallback_models = {"b/first"};
  CAF_CHECK_EQUAL(route_model("x/own", "shell", cfg, 0), "");
  CAF_CHECK_EQUAL(route_model("x/own", "scripted", cfg, 1), "");
  cfg.worker = "shell";
  CAF_CHECK_EQUAL(route_model("x/own", "", cfg, 0), "");
  // a task naming a preset runs the agent backend even in a shell run
  CAF_CHECK_EQUAL(route_model("x/own", "codex", cfg, 0), "x/own");
  CAF_CHECK_EQUAL(route_model("", "codex", cfg, 0), "a/primary");
}

CAF_TEST(the verifier uses its preset role model then the worker model) {
  auto cfg = agents();
  CAF_CHECK_EQUAL(verifier_preset_name(cfg), "claude");
  CAF_CHECK_EQUAL(verifier_model(cfg), "");
  cfg.worker_model = "a/primary";
  CAF_CHECK_EQUAL(verifier_model(cfg), "a/primary");
  cfg.verifier_preset = "reviewer";
  cfg.role_models = {{"reviewer", "r/strict"}};
  CAF_CHECK_EQUAL(verifier_preset_name(cfg), "reviewer");
  CAF_CHECK_EQUAL(verifier_model(cfg), "r/strict");
}
