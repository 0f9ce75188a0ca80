#define CAF_SUITE unit.agent_preset
#include <caf/test/unit_test.hpp>

#include <string>
#include <vector>

#include "src/worker/agent_preset.hpp"
#include "test.hpp"

using namespace taskforce;

namespace {

using strings = std::vector<std::string>;

agent_values sample_values() {
  agent_values v;
  v.prompt = "do the task";
  v.prompt_file = "/logs/prompt.md";
  v.model = "anthropic/claude-sonnet-4-5";
  v.worktree = "/repo/.taskforce/worktrees/r1/t1";
  v.task_id = "t1";
  v.title = "Add cache";
  v.files = {"src/cache.cpp", "src/auth/**", "docs/cache.md"};
  v.session = "5b0c1f9e-2d3a-4c4b-8e5f-6a7b8c9d0e1f";
  return v;
}

std::string error_of(const std::string& text) {
  try {
    parse_agent_preset(text, "p.json");
  } catch (const preset_error& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

CAF_TEST(the built in presets are the files shipped in config agents) {
  auto names = builtin_agent_presets();
  CAF_CHECK_EQUAL(names, (strings{"aider", "claude", "codex", "opencode"}));
  for (auto& name : names) {
    CAF_MESSAGE("preset " << name);
    auto file
      = std::string{TASKFORCE_SOURCE_DIR} + "/config/agents/" + name + ".json";
    CAF_CHECK_EQUAL(builtin_agent_preset_text(name), test::read_file(file));
    auto p = load_agent_preset(name, "");
    CAF_CHECK(!p.description.empty());
    CAF_CHECK_EQUAL(p.origin, "built-in preset '" + name + "'");
  }
}

CAF_TEST(presets expand into the argv each agent expects) {
  auto v = sample_values();
  auto claude = expand_agent_preset(load_agent_preset("claude", ""), v);
  CAF_CHECK_EQUAL(
    claude.argv,
    (strings{"claude", "-p", "do the task", "--model",
             "anthropic/claude-sonnet-4-5", "--session-id",
             "5b0c1f9e-2d3a-4c4b-8e5f-6a7b8c9d0e1f", "--permission-mode",
             "acceptEdits", "--output-format", "text"}));
  CAF_CHECK(claude.stdin_file.empty());
  auto opencode = expand_agent_preset(load_agent_preset("opencode", ""), v);
  CAF_CHECK_EQUAL(
    opencode.argv,
    (strings{"opencode", "run", "--dir", "/repo/.taskforce/worktrees/r1/t1",
             "--model", "anthropic/claude-sonnet-4-5", "do the task"}));
  auto codex = expand_agent_preset(load_agent_preset("codex", ""), v);
  CAF_CHECK_EQUAL(
    codex.argv,
    (strings{"codex", "exec", "--model", "anthropic/claude-sonnet-4-5",
             "--sandbox", "workspace-write", "--cd",
             "/repo/.taskforce/worktrees/r1/t1", "do the task"}));
  auto aider = expand_agent_preset(load_agent_preset("aider", ""), v);
  CAF_CHECK_EQUAL(
    aider.argv,
    (strings{"aider", "--message-file", "/logs/prompt.md", "--model",
             "anthropic/claude-sonnet-4-5", "--yes-always", "--no-auto-commits",
             "--no-stream", "--no-pretty", "--no-check-update", "src/cache.cpp",
             "docs/cache.md"}));
}

CAF_TEST(a later turn continues the session with the continue argv) {
  auto v = sample_values();
  v.prompt = "the answer";
  auto claude = expand_agent_preset(load_agent_preset("claude", ""), v, true);
  CAF_CHECK_EQUAL(claude.argv,
                  (strings{"claude", "-p", "the answer", "--resume",
                           "5b0c1f9e-2d3a-4c4b-8e5f-6a7b8c9d0e1f", "--model",
                           "anthropic/claude-sonnet-4-5", "--permission-mode",
                           "acceptEdits", "--output-format", "text"}));
  auto opencode
    = expand_agent_preset(load_agent_preset("opencode", ""), v, true);
  CAF_CHECK_EQUAL(
    opencode.argv,
    (strings{"opencode", "run", "--dir", "/repo/.taskforce/worktrees/r1/t1",
             "--continue", "--model", "anthropic/claude-sonnet-4-5",
             "the answer"}));
  v.session = "01a232de-04ac-7d61-89a3-f9d6644b03ab";
  auto codex = expand_agent_preset(load_agent_preset("codex", ""), v, true);
  CAF_CHECK_EQUAL(codex.argv, (strings{"codex", "exec", "resume", "--model",
                                       "anthropic/claude-sonnet-4-5", "-c",
                                       "sandbox_mode=\"workspace-write\"",
                                       "01a232de-04ac-7d61-89a3-f9d6644b03ab",
                                       "the answer"}));
  // aider cannot continue: asking for it is a clear error.
  auto aider = load_agent_preset("aider", "");
  CAF_CHECK(!aider.can_continue());
  try {
    expand_agent_preset(aider, v, true);
    CAF_FAIL("expected a preset_error");
  } catch (const preset_error& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "built-in preset 'aider': cannot continue a session (no "
                    "\"continue\" argv)");
  }
}

CAF_TEST(a session is found in the output and new ones are unique uuids) {
  auto codex = load_agent_preset("codex", "");
  CAF_CHECK_EQUAL(find_session(codex, "workdir: /wt\nsession id: "
                                      "01a232de-04ac-7d61-89a3-f9d6644b03ab\n"),
                  "01a232de-04ac-7d61-89a3-f9d6644b03ab");
  CAF_CHECK_EQUAL(find_session(codex, "no banner here"), "");
  // Only a preset that reads it from the output finds one there.
  CAF_CHECK_EQUAL(find_session(load_agent_preset("claude", ""),
                               "session id: "
                               "01a232de-04ac-7d61-89a3-f9d6644b03ab"),
                  "");
  auto a = new_session_uuid();
  auto b = new_session_uuid();
  CAF_CHECK_NOT_EQUAL(a, b);
  CAF_REQUIRE_EQUAL(a.size(), 36u);
  CAF_CHECK_EQUAL(a[14], '4');
  CAF_CHECK(a[19] == '8' || a[19] == '9' || a[19] == 'a' || a[19] == 'b');
  CAF_CHECK_EQUAL(a.find_first_not_of("0123456789abcdef-"), std::string::npos);
}

CAF_TEST(an optional group disappears when its placeholder is empty) {
  auto v = sample_values();
  v.model.clear();
  v.session.clear();
  auto claude = expand_agent_preset(load_agent_preset("claude", ""), v);
  CAF_CHECK_EQUAL(claude.argv,
                  (strings{"claude", "-p", "do the task", "--permission-mode",
                           "acceptEdits", "--output-format", "text"}));
}

CAF_TEST(env stdin braces and the other placeholders expand) {
  auto p = parse_agent_preset(
    R"({"argv": ["agent", "--id={task_id}", "{{literal}}", "{title}"],
        "env": {"AGENT_HOME": "{worktree}/.agent", "M": "{model}"},
        "stdin": "{prompt_file}"})",
    "p.json");
  auto cmd = expand_agent_preset(p, sample_values());
  CAF_CHECK_EQUAL(cmd.argv,
                  (strings{"agent", "--id=t1", "{literal}", "Add cache"}));
  CAF_REQUIRE_EQUAL(cmd.env.size(), 2u);
  CAF_CHECK_EQUAL(cmd.env[0].first, "AGENT_HOME");
  CAF_CHECK_EQUAL(cmd.env[0].second, "/repo/.taskforce/worktrees/r1/t1/.agent");
  CAF_CHECK_EQUAL(cmd.env[1].second, "anthropic/claude-sonnet-4-5");
  CAF_CHECK_EQUAL(cmd.stdin_file, "/logs/prompt.md");
}

CAF_TEST(a prompt too long for one argument is refused with advice) {
  auto v = sample_values();
  v.prompt.assign(200 * 1024, 'x');
  try {
    expand_agent_preset(load_agent_preset("claude", ""), v);
    CAF_FAIL("expected a preset_error");
  } catch (const preset_error& e) {
    std::string msg = e.what();
    CAF_CHECK(msg.find("built-in preset 'claude': argv[2] expands to 204800 "
                       "bytes")
              != std::string::npos);
    CAF_CHECK(msg.find("{prompt_file}") != std::string::npos);
  }
  // The same prompt through a file is fine.
  auto aider = expand_agent_preset(load_agent_preset("aider", ""), v);
  CAF_CHECK_EQUAL(aider.argv[2], "/logs/prompt.md");
}

CAF_TEST(bad presets are refused naming the file the key and the rule) {
  struct bad_case {
    std::string text;
    std::string error;
  };
  std::vector<bad_case> cases = {
    {"{\"argv\": [\"a\",]}",
     "p.json:1:15: [json.exception.parse_error.101] parse error"},
    {"[1]", "p.json: a preset must be a JSON object"},
    {"{\"argvs\": [\"a\"]}", "p.json: unknown key \"argvs\" (did you mean "
                             "\"argv\"?)"},
    {"{\"description\": \"x\"}", "p.json: \"argv\" is required"},
    {"{\"argv\": []}", "p.json: \"argv\" must be a non-empty array"},
    {"{\"argv\": [\"{prompt}\"]}",
     "p.json: argv[0] must be the program, a plain non-empty string"},
    {"{\"argv\": [[\"a\"]]}",
     "p.json: argv[0] must be the program, a plain non-empty string"},
    {"{\"argv\": [\"a\", \"{promt}\"]}",
     "p.json: argv[1]: unknown placeholder {promt} (did you mean "
     "{prompt}?)"},
    {"{\"argv\": [\"a\", \"{zzzzzzzz}\"]}",
     "p.json: argv[1]: unknown placeholder {zzzzzzzz} (known: {prompt}"},
    {"{\"argv\": [\"a\", \"x}\"]}", "p.json: argv[1]: a lone '}'"},
    {"{\"argv\": [\"a\", \"{prompt\"]}", "p.json: argv[1]: '{' without '}'"},
    {"{\"argv\": [\"a\", \"--files={files}\"]}",
     "p.json: argv[1]: {files} must be a whole argument of its own"},
    {"{\"argv\": [\"a\", [\"--f\", \"{files}\"]]}",
     "p.json: argv[1][1]: {files} must be a whole argument of its own"},
    {"{\"argv\": [\"a\", [\"--m\", 3]]}", "p.json: argv[1][1]: must be a "
                                          "string"},
    {"{\"argv\": [\"a\", 3]}", "p.json: argv[1]: must be a string or a "
                               "non-empty array"},
    {"{\"argv\": [\"a\"], \"env\": {\"K\": 1}}", "p.json: env.K: must be a "
                                                 "string"},
    {"{\"argv\": [\"a\"], \"env\": {\"A=B\": \"x\"}}",
     "p.json: env.A=B: a variable name may not be empty or contain '='"},
    {"{\"argv\": [\"a\"], \"env\": []}", "p.json: \"env\" must be an object"},
    {"{\"argv\": [\"a\"], \"stdin\": true}", "p.json: \"stdin\" must be a "
                                             "string"},
    {"{\"argv\": [\"a\"], \"stdin\": \"{file}\"}",
     "p.json: stdin: unknown placeholder {file} (did you mean {files}?)"},
    {"{\"argv\": [\"a\"], \"continue\": [\"a\", \"{session}\"]}",
     "p.json: \"continue\" needs \"session\", how the session to continue "
     "is known: \"uuid\", \"directory\" or {\"pattern\""},
    {"{\"argv\": [\"a\"], \"session\": \"uuid\"}",
     "p.json: \"session\" without \"continue\" continues nothing"},
    {"{\"argv\": [\"a\"], \"continue\": [\"a\"], \"session\": \"uuid\"}",
     "p.json: \"continue\" must name the session with {session}"},
    {"{\"argv\": [\"a\"], \"continue\": [\"a\", \"{session}\"], "
     "\"session\": \"directory\"}",
     "p.json: with \"session\": \"directory\" the CLI finds its session "
     "itself"},
    {"{\"argv\": [\"a\", \"{session}\"], \"continue\": [\"a\", "
     "\"{session}\"], \"session\": {\"pattern\": \"id (\\\\S+)\"}}",
     "p.json: {session} in \"argv\" needs \"session\": \"uuid\""},
    {"{\"argv\": [\"a\"], \"continue\": [\"a\", \"{session}\"], "
     "\"session\": {\"pattern\": \"id \\\\S+\"}}",
     "p.json: session.pattern needs a group"},
    {"{\"argv\": [\"a\"], \"continue\": [\"a\", \"{session}\"], "
     "\"session\": {\"pattern\": \"(\"}}",
     "p.json: session.pattern is not a valid regular expression"},
    {"{\"argv\": [\"a\"], \"continue\": [\"a\", \"{session}\"], "
     "\"session\": \"last\"}",
     "p.json: \"session\" must be \"uuid\", \"directory\" or"},
    {"{\"argv\": [\"a\"], \"continue\": [\"{prompt}\"], "
     "\"session\": \"directory\"}",
     "p.json: continue[0] must be the program"},
  };
  for (auto& c : cases) {
    auto got = error_of(c.text);
    CAF_MESSAGE("case " << c.text << " -> " << got);
    CAF_CHECK_EQUAL(got.rfind(c.error, 0), 0u);
  }
}

CAF_TEST(presets are found by name in the repository or by path) {
  test::temp_dir repo;
  repo.write(".taskforce/agents/claude.json",
             R"({"argv": ["my-claude", "{prompt}"]})");
  repo.write("agents/custom.json", R"({"argv": ["custom"]})");
  auto local = load_agent_preset("claude", repo.path().string());
  CAF_CHECK_EQUAL(local.argv[0][0], "my-claude");
  CAF_CHECK_EQUAL(local.origin,
                  (repo.path() / ".taskforce/agents/claude.json").string());
  auto by_path = load_agent_preset("agents/custom.json", repo.path().string());
  CAF_CHECK_EQUAL(by_path.argv[0][0], "custom");
  auto builtin = load_agent_preset("codex", repo.path().string());
  CAF_CHECK_EQUAL(builtin.argv[0][0], "codex");
  try {
    load_agent_preset("cluade", repo.path().string());
    CAF_FAIL("expected a preset_error");
  } catch (const preset_error& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    "unknown agent preset \"cluade\" (did you mean "
                    "\"claude\"?); built in: aider claude codex opencode; "
                    "or add .taskforce/agents/cluade.json");
  }
  try {
    load_agent_preset("agents/missing.json", repo.path().string());
    CAF_FAIL("expected a preset_error");
  } catch (const preset_error& e) {
    CAF_CHECK_EQUAL(std::string{e.what()},
                    (repo.path() / "agents/missing.json").string()
                      + ": cannot read the agent preset");
  }
}
