#define CAF_SUITE unit.headings
#include <caf/test/unit_test.hpp>

#include "src/taskfile/parse.hpp"

using namespace taskforce;
using namespace taskforce::taskfile;

namespace {

parse_result read(const std::string& text, parse_options opts = {}) {
  opts.format = "headings";
  return parse(text, "tasks.md", opts);
}

bool has_error(const parse_result& r, size_t line, const std::string& part) {
  for (const auto& e : r.errors)
    if (e.line == line && e.message.find(part) != std::string::npos)
      return true;
  return false;
}

const char* seed_example
  = "# Feature\n"                                                  // 1
    "\n"                                                           // 2
    "### 1. [ ] Add the cache layer\n"                             // 3
    "- **Stories:** 1, 3\n"                                        // 4
    "- **TDD:** yes\n"                                             // 5
    "- **Risk:** \xF0\x9F\x9F\xA0\n"                               // 6
    "- **Files:** `src/auth/cache.ts`, `src/auth/cache.test.ts`\n" // 7
    "- **Spec & identifiers in scope:** none\n"                    // 8
    "- **What to build:** a small cache keyed by token.\n"         // 9
    "- **How verified (end-to-end):** `npm test -- auth`\n"        // 10
    "- **Acceptance criteria:**\n"                                 // 11
    "  - [ ] a hit avoids the slow path\n"                         // 12
    "  - [ ] a miss re-fetches\n";                                 // 13

} // namespace

CAF_TEST(the seed example parses and how verified is never a gate) {
  auto r = read(seed_example);
  CAF_REQUIRE(r.ok());
  CAF_REQUIRE_EQUAL(r.tasks.size(), 1u);
  const auto& t = r.tasks[0];
  CAF_CHECK_EQUAL(t.id, "1");
  CAF_CHECK_EQUAL(t.line, 3u);
  CAF_CHECK_EQUAL(t.title, "Add the cache layer");
  CAF_CHECK_EQUAL(t.files, (std::vector<std::string>{
                             "src/auth/cache.ts", "src/auth/cache.test.ts"}));
  CAF_CHECK_EQUAL(t.risk.value_or(""), "\xF0\x9F\x9F\xA0");
  CAF_CHECK(!t.verify);
  // Prose labels and the acceptance checklist stay in the prompt; the
  // scheduling labels leave it.
  CAF_CHECK(t.body.find("**What to build:** a small cache")
            != std::string::npos);
  CAF_CHECK(t.body.find("- [ ] a miss re-fetches") != std::string::npos);
  CAF_CHECK(t.body.find("**How verified") != std::string::npos);
  CAF_CHECK(t.body.find("**Files:**") == std::string::npos);
  CAF_CHECK(t.body.find("**Risk:**") == std::string::npos);
}

CAF_TEST(every scheduling label is read and backticks are stripped) {
  auto r = read("### 1. [x] Done already\n"
                "**Files:** `a.txt`\n"
                "### 2. [ ] [design] Build the page\n"
                "- **Locks:** staging\n"
                "- **Priority:** 5\n"
                "- **Agent:** designer\n"
                "- **Model:** openai/gpt-4o\n"
                "- **Verify:** `npm run e2e`\n"
                "- **Timeout:** 30s\n"
                "- **Depends on:** 1\n"
                "- **Risk:** \xF0\x9F\x94\xB4\n"
                "- **Files:**\n"
                "  - `web/page.tsx`\n"
                "  - `web/styles/`\n",
                [] {
                  parse_options o;
                  o.approval_risks = {"\xF0\x9F\x94\xB4"};
                  return o;
                }());
  CAF_REQUIRE(r.ok());
  CAF_REQUIRE_EQUAL(r.tasks.size(), 2u);
  CAF_CHECK(r.tasks[0].done);
  const auto& t = r.tasks[1];
  CAF_CHECK(t.design);
  CAF_CHECK_EQUAL(t.title, "Build the page");
  CAF_CHECK_EQUAL(t.locks, (std::vector<std::string>{"staging"}));
  CAF_CHECK_EQUAL(t.priority, 5);
  CAF_CHECK_EQUAL(t.agent.value_or(""), "designer");
  CAF_CHECK_EQUAL(t.model.value_or(""), "openai/gpt-4o");
  CAF_CHECK_EQUAL(t.verify.value_or(""), "npm run e2e");
  CAF_CHECK_EQUAL(t.timeout_ms.value_or(0), 30000);
  CAF_CHECK_EQUAL(t.deps, (std::vector<std::string>{"1"}));
  CAF_CHECK(t.needs_approval);
  CAF_CHECK_EQUAL(t.files,
                  (std::vector<std::string>{"web/page.tsx", "web/styles/"}));
}

CAF_TEST(labels can be remapped through config) {
  parse_options o;
  o.fields = {{"Scope", "files"}, {"Gate", "verify"}};
  auto r = read("### 7. [ ] Remapped\n"
                "- **Scope:** lib/x.c\n"
                "- **Gate:** make test\n",
                o);
  CAF_REQUIRE(r.ok());
  CAF_CHECK_EQUAL(r.tasks[0].id, "7");
  CAF_CHECK_EQUAL(r.tasks[0].files, (std::vector<std::string>{"lib/x.c"}));
  CAF_CHECK_EQUAL(r.tasks[0].verify.value_or(""), "make test");
  o.fields = {{"Scope", "filez"}};
  CAF_CHECK(has_error(read("### 1. [ ] X\n", o), 0, "unknown field \"filez\""));
}

CAF_TEST(sequential deps make file order the chain) {
  parse_options o;
  o.sequential_deps = true;
  auto r = read("### 1. [ ] A\n**Files:** a\n"
                "### 2. [ ] B\n**Files:** b\n"
                "### 3. [ ] C\n**Files:** c\n",
                o);
  CAF_REQUIRE(r.ok());
  CAF_CHECK(r.tasks[0].deps.empty());
  CAF_CHECK_EQUAL(r.tasks[1].deps, (std::vector<std::string>{"1"}));
  CAF_CHECK_EQUAL(r.tasks[2].deps, (std::vector<std::string>{"2"}));
}

CAF_TEST(a heading at the task level ends the task and deeper ones stay) {
  auto r = read("## Phase 1\n"
                "### 1. [ ] A\n"
                "#### Notes\n"
                "keep\n"
                "## Phase 2\n"
                "dropped\n"
                "### 2. [ ] B\n");
  CAF_REQUIRE(r.ok());
  CAF_CHECK_EQUAL(r.tasks[0].body, "#### Notes\nkeep");
  CAF_CHECK_EQUAL(r.tasks[1].body, "");
}

CAF_TEST(holds apply to headings tasks too) {
  auto r = read("### 1. [ ] Choose\n**Files:** a\n[NEEDS DECISION] which db\n");
  CAF_REQUIRE(r.ok());
  CAF_CHECK(r.tasks[0].held);
  CAF_CHECK_EQUAL(r.tasks[0].hold_reason.value_or(""),
                  "[NEEDS DECISION] which db");
}

CAF_TEST(headings errors carry their lines) {
  auto r = read("### 1. [ ] A\n"          // 1
                "- **Fles:** a\n"         // 2
                "- **Priority:** soon\n"  // 3
                "### 1. [ ] Again\n"      // 4
                "- **Deps:** 9\n"         // 5
                "### 3 [ ] no dot\n"      // 6
                "### 4. [] empty box\n"   // 7
                "### 5. [ ]\n"            // 8
                "- **Files:** `/abs`\n"); // 9
  CAF_CHECK(!r.ok());
  CAF_CHECK(has_error(r, 2, "did you mean \"files\""));
  CAF_CHECK(has_error(r, 3, "not an integer"));
  CAF_CHECK(has_error(r, 4, "duplicate id \"1\""));
  CAF_CHECK(has_error(r, 5, "unknown task \"9\""));
  CAF_CHECK(has_error(r, 6, "malformed task heading"));
  CAF_CHECK(has_error(r, 7, "malformed task heading"));
  CAF_CHECK(has_error(r, 8, "needs a title"));
  CAF_CHECK(has_error(r, 9, "absolute"));
}

CAF_TEST(ordinary numbered headings are not tasks) {
  auto r = read("### 1. Background\ntext\n### 2. [ ] Real\n");
  CAF_REQUIRE(r.ok());
  CAF_REQUIRE_EQUAL(r.tasks.size(), 1u);
  CAF_CHECK_EQUAL(r.tasks[0].id, "2");
}

CAF_TEST(run and verify labels take an indented block) {
  auto r = read("### 1. [ ] Build\n"
                "- **Files:** out/\n"
                "- **Run:** |\n"
                "    mkdir -p out\n"
                "    echo built > out/x\n"
                "- **Verify:** |\n"
                "- **Risk:** low\n");
  CAF_CHECK(has_error(r, 6, "Verify") || has_error(r, 6, "verify: \"|\""));
  auto ok = read("### 1. [ ] Build\n"
                 "- **Files:** out/\n"
                 "- **Run:** |\n"
                 "    mkdir -p out\n"
                 "    echo built > out/x\n"
                 "- **Risk:** low\n");
  CAF_REQUIRE(ok.errors.empty());
  CAF_CHECK_EQUAL(*ok.tasks[0].run, "mkdir -p out\necho built > out/x");
  CAF_CHECK_EQUAL(*ok.tasks[0].risk, "low");
}
