// The OpenCode plugin (integrations/opencode/taskforce.ts) with OpenCode's
// background subagents (OPENCODE_EXPERIMENTAL_BACKGROUND_SUBAGENTS=1), in the
// real OpenCode, offline against the scripted model server, with a real
// `taskforce serve --listen`: a background `task` call returns as soon as its
// child is launched, so its permit is bound to the child and ends with the
// child's idle; the plugin loaded twice in one process admits and releases
// each call once; a child that goes idle before its call returns frees its
// permit; a child that `opencode run` aborts at its end gives its permit
// back once; a call that fails before it returns gives its permit back; and
// the model runs managed background work through the plugin's
// tools (orch_prepare, the exact task call it answers, orch_complete from the
// child), which the server's bg.status shows done.
#define CAF_SUITE e2e.real_opencode_bg
#include <caf/test/unit_test.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/opencode_plugin.hpp"

using namespace taskforce;
using namespace taskforce::test;
using json = nlohmann::json;

namespace {

/// The main turn launches two background subagents at once; the turn after
/// waits until the second is done, so `opencode run` (which aborts running
/// background children when the main session goes idle) lets both finish.
/// OpenCode tells the main session of each finished child in a message of
/// its own ("Background task completed"), answered by the rule `notice`.
std::string two_background(const std::string& sub1) {
  return R"({"rules": [
    {"name": "sub1", "when": "SUB-ONE-WORK", "steps": [)"
         + sub1 + R"(]},
    {"name": "sub2", "when": "SUB-TWO-WORK", "steps": [
      {"text": "sub two is done"}]},
    {"name": "notice", "when": "Background task completed", "steps": [
      {"text": "noted"}]},
    {"name": "main", "when": "PLUGIN-MAIN", "steps": [
      {"tools": [
        {"tool": "task", "input": {"description": "sub 1",
          "prompt": "SUB-ONE-WORK", "subagent_type": "general",
          "background": true}},
        {"tool": "task", "input": {"description": "sub 2",
          "prompt": "SUB-TWO-WORK", "subagent_type": "general",
          "background": true}}]},
      {"text": "both launched", "waitFor": "sub2"}]}]})";
}

/// Whether the rule answered at least once.
bool answered(const model_server& model, const std::string& rule) {
  for (auto& e : model_events(model))
    if (rule_of(e) == rule && e["event"] == "response")
      return true;
  return false;
}

/// The checks both background cases share: the first child held its permit
/// until its idle, the second call waited for that, each holder ended once,
/// both children ran one after the other, and nothing is held at the end.
void check_one_after_the_other(plugin_case& c, const model_server& model) {
  auto order = c.started();
  CAF_REQUIRE_EQUAL(order.size(), 2u);
  auto first = order[0], second = order[1];
  // Released by its child's idle, not when its call returned at launch.
  CAF_CHECK_EQUAL(c.event_of("released", first).value("reason", ""), "idle");
  CAF_CHECK(c.index_of("queued", second) >= 0);
  CAF_CHECK(c.index_of("started", second) > c.index_of("released", first));
  CAF_CHECK_EQUAL(c.terminal_events(first), 1);
  CAF_CHECK_EQUAL(c.terminal_events(second), 1);
  // The plugin released it, not the end of OpenCode's connection.
  CAF_CHECK_NOT_EQUAL(c.event_of("released", second).value("reason", ""),
                      "disconnected");
  CAF_CHECK(answered(model, "sub1"));
  CAF_CHECK(answered(model, "sub2"));
  CAF_CHECK(one_after_the_other(model_events(model), "sub1", "sub2"));
  CAF_CHECK(c.nothing_held());
  if (c.index_of("started", second) <= c.index_of("released", first))
    CAF_MESSAGE("events:\n" << c.dump());
}

} // namespace

CAF_TEST(a background child holds its permit until its idle even with the plugin
           loaded twice) {
  auto clis = find_harness_clis();
  if (clis.dir.empty()) {
    say_skipped(clis.why_not);
    return;
  }
  plugin_case c{clis};
  c.serve(R"({"maxParallel": 1, "queueTimeoutMs": 60000})");
  // A second copy of the plugin, as when it is listed in the global and the
  // project config: OpenCode runs every hook of both.
  auto copy = c.s.dir.path() / "copy" / "taskforce.ts";
  std::filesystem::create_directories(copy.parent_path());
  std::filesystem::copy_file(opencode_plugin, copy);
  model_server model{
    c.s.dir, two_background(R"({"text": "sub one is done", "delayMs": 1500})")};
  opencode_options opt;
  opt.background = true;
  opt.plugins = {opencode_plugin, copy.string()};
  auto r = c.run_opencode(model, opt);
  CAF_CHECK(r.success());
  check_one_after_the_other(c, model);
}

CAF_TEST(a child idle before its call returns still frees the permit) {
  auto clis = find_harness_clis();
  if (clis.dir.empty()) {
    say_skipped(clis.why_not);
    return;
  }
  plugin_case c{clis};
  c.serve(R"({"maxParallel": 1, "queueTimeoutMs": 60000})");
  // A plugin before ours holds up the return of each background task call
  // until its child is idle (as a busy machine or another plugin may): the
  // child's idle comes before the permit is bound to it.
  auto slow = c.s.dir.write("slow.ts", R"(
const idle = new Set<string>()
const waiting = new Map<string, () => void>()
export const Slow = async () => ({
  event: async ({ event }: any) => {
    if (event?.type !== "session.idle") return
    const session = String(event.properties?.sessionID)
    idle.add(session)
    waiting.get(session)?.()
  },
  "tool.execute.after": async (input: any, output: any) => {
    const child = output?.metadata?.jobId
    if (input.tool !== "task" || !child || idle.has(child)) return
    await new Promise<void>((done) => {
      waiting.set(child, done)
      setTimeout(done, 60000)
    })
  },
})
)");
  model_server model{c.s.dir, two_background(R"({"text": "sub one is done"})")};
  opencode_options opt;
  opt.background = true;
  opt.plugins = {slow.string(), opencode_plugin};
  auto r = c.run_opencode(model, opt);
  CAF_CHECK(r.success());
  check_one_after_the_other(c, model);
}

CAF_TEST(a child that opencode run aborts gives its permit back once) {
  auto clis = find_harness_clis();
  if (clis.dir.empty()) {
    say_skipped(clis.why_not);
    return;
  }
  plugin_case c{clis};
  c.serve(R"({"maxParallel": 1, "queueTimeoutMs": 60000})");
  // The main turn launches a background child that takes long and ends at
  // once: `opencode run` then aborts the child (its idle follows) and, in
  // this version, initializes the plugin a second time, which sees the
  // child's idle again.
  model_server model{c.s.dir, R"({"rules": [
    {"name": "slow", "when": "SLOW-WORK", "steps": [
      {"text": "never seen", "delayMs": 60000}]},
    {"name": "main", "when": "PLUGIN-MAIN", "steps": [
      {"tool": "task", "input": {"description": "slow one",
        "prompt": "SLOW-WORK", "subagent_type": "general",
        "background": true}},
      {"text": "launched"}]}]})"};
  opencode_options opt;
  opt.background = true;
  auto r = c.run_opencode(model, opt);
  CAF_CHECK(r.success());
  auto holders = c.started();
  CAF_REQUIRE_EQUAL(holders.size(), 1u);
  // The child began, and its permit ended with its idle, once.
  bool began = false;
  for (auto& e : model_events(model))
    began = began || (rule_of(e) == "slow" && e["event"] == "request");
  CAF_CHECK(began);
  CAF_CHECK_EQUAL(c.terminal_events(holders[0]), 1);
  CAF_CHECK_EQUAL(c.event_of("released", holders[0]).value("reason", ""),
                  "idle");
  CAF_CHECK(c.nothing_held());
}

CAF_TEST(the model runs managed background work through the plugin tools) {
  auto clis = find_harness_clis();
  if (clis.dir.empty()) {
    say_skipped(clis.why_not);
    return;
  }
  plugin_case c{clis};
  c.s.write("src/README", "the sources\n");
  c.serve(R"({"maxParallel": 2, "queueTimeoutMs": 60000})");
  // The main session prepares a task, starts it with the exact call
  // orch_prepare answered (twice at once: the second use is refused; and a
  // call for an agent that does not exist, which fails with no
  // tool.execute.after), and waits for it. The child at once tries a file
  // outside its roots (its write waits until the child is linked, then is
  // refused), writes one inside, and reports through orch_complete, whose
  // check passes.
  model_server model{c.s.dir, R"({"rules": [
    {"name": "child", "when": "FEATURE-WORK", "steps": [
      {"tool": "write", "input": {
        "filePath": "{cwd}/NOTES.md", "content": "not mine\n"}},
      {"tool": "write", "input": {
        "filePath": "{cwd}/src/feature.txt", "content": "the feature\n"}},
      {"tool": "orch_complete", "input": {"task": "", "status": "done",
        "result": "added the feature", "files": ["src/feature.txt"]}},
      {"text": "FEATURE DONE"}]},
    {"name": "notice", "when": "Background task completed", "steps": [
      {"text": "noted"}]},
    {"name": "main", "when": "BG-MAIN", "steps": [
      {"tool": "orch_prepare", "input": {"title": "Add the feature",
        "agent": "general", "prompt": "FEATURE-WORK: write src/feature.txt",
        "roots": ["src"], "deps": [],
        "validations": ["test -f src/feature.txt"]}},
      {"tools": [{"tool": "task", "input": "{result-json}"},
                 {"tool": "task", "input": "{result-json}"},
                 {"tool": "task", "input": {"description": "no such agent",
                   "prompt": "NOBODY", "subagent_type": "nobody",
                   "background": true}}]},
      {"tool": "orch_status", "input": {"task": ""}, "waitFor": "child"},
      {"text": "all done"}]}]})"};
  opencode_options opt;
  opt.background = true;
  opt.prompt = "BG-MAIN: add the feature in the background";
  auto r = c.run_opencode(model, opt);
  CAF_CHECK(r.success());
  // The server's ledger: the task is done, linked to its child.
  auto st = c.watcher->peer.call({{"id", "bg"}, {"op", "bg.status"}});
  CAF_REQUIRE_EQUAL(st["tasks"].size(), 1u);
  auto task = st["tasks"][0];
  CAF_CHECK_EQUAL(task["title"], "Add the feature");
  CAF_CHECK_EQUAL(task["state"], "done");
  CAF_CHECK(task["child_session"].is_string());
  CAF_CHECK_EQUAL(task["attempts"], 1);
  CAF_CHECK(st["leases"].empty());
  CAF_CHECK(std::filesystem::exists(c.s.root / "src" / "feature.txt"));
  // Outside its roots the child could not write.
  CAF_CHECK(!std::filesystem::exists(c.s.root / "NOTES.md"));
  // The task call the model made is the one orch_prepare answered: in the
  // background, with the dispatch token; one child ran, not two.
  int child_starts = 0;
  bool dispatched = false;
  for (auto& e : model_events(model)) {
    if (rule_of(e) == "child" && e["event"] == "request" && e["step"] == 0)
      ++child_starts;
    if (rule_of(e) == "main" && e["event"] == "response" && e["step"] == 1)
      for (auto& input : e["inputs"])
        dispatched
          = dispatched
            || (input.value("background", false)
                && input.value("command", "").rfind("taskforce:", 0) == 0);
  }
  CAF_CHECK_EQUAL(child_starts, 1);
  CAF_CHECK(dispatched);
  // The task call held a permit like any subagent, and gave it back when its
  // child was idle; the call that failed gave its permit back at once (not
  // when OpenCode's connection closed).
  auto holders = c.started();
  CAF_CHECK_EQUAL(holders.size(), 2u);
  for (auto& holder : holders) {
    CAF_CHECK_EQUAL(c.terminal_events(holder), 1);
    CAF_CHECK_NOT_EQUAL(c.event_of("released", holder).value("reason", ""),
                        "disconnected");
  }
  CAF_CHECK(c.nothing_held());
  if (task["state"] != "done") {
    std::string requests;
    for (auto& line : model.events())
      requests += line + "\n";
    CAF_MESSAGE("bg.status: " << st.dump() << "\nevents:\n"
                              << c.dump() << "\nmodel:\n"
                              << requests << "\nopencode:\n"
                              << read_file(c.s.dir.path() / "opencode.log"));
  }
}
