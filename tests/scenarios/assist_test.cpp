// Assist mode's details: the run checks the boxes of done tasks in the task
// file (run.flipCheckboxes), appends a block per finished task to a
// progress file (run.progressFile), and can take a box the worker checked
// as its done signal (run.detectCompletion "checkboxes").
#define CAF_SUITE scenarios.assist
#include <caf/test/unit_test.hpp>

#include <thread>

#include "scenarios/scenario.hpp"

using namespace taskforce;
using namespace taskforce::test;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos;
       at = text.find(part, at + 1))
    ++n;
  return n;
}

} // namespace

CAF_TEST(flipCheckboxes checks the box of each done task and nothing else) {
  scenario s;
  s.tasks("# Plan\n\nSome notes with a box: - [ ] not a task line\n\n"
          "- [ ] Write one\n  - files: one.txt\n  - run: echo 1 > one.txt\n"
          "- [ ] Write two\n  - files: two.txt\n  - run: echo 2 > two.txt\n"
          "- [ ] Fail three\n  - files: three.txt\n  - run: exit 3\n");
  s.set_config(R"({"run": {"flipCheckboxes": true, "maxAttempts": 1,
                  "continueOnError": true}})");
  auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  CAF_CHECK_EQUAL(to_string(s.task("t3").state), std::string{"failed"});
  auto text = read_file(s.root / "TASKS.md");
  CAF_CHECK_EQUAL(text,
                  "# Plan\n\nSome notes with a box: - [ ] not a task line\n\n"
                  "- [x] Write one\n  - files: one.txt\n  - run: echo 1 > "
                  "one.txt\n"
                  "- [x] Write two\n  - files: two.txt\n  - run: echo 2 > "
                  "two.txt\n"
                  "- [ ] Fail three\n  - files: three.txt\n  - run: exit 3\n");
  // Both tasks ran in place side by side: the run's own writes to the task
  // file failed neither of them.
  CAF_CHECK(!contains(s.task("t2").reason.value_or(""), "TASKS.md"));
  (void)r;
}

CAF_TEST(an edit a person made to the task file meanwhile is kept) {
  scenario s;
  auto go = (s.dir.path() / "go.flag").string();
  s.tasks("- [ ] Wait for the person\n  - files: w.txt\n"
          "  - run: until test -f "
          + go + "; do sleep 0.05; done; echo w > w.txt\n");
  s.set_config(R"({"run": {"flipCheckboxes": true}})");
  std::thread person([&] {
    // Once the task runs, the person adds a note above it and lets it go.
    for (int i = 0;
         i < 2000
         && !std::filesystem::exists(s.root / ".taskforce" / "ledger.sqlite");
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto text = read_file(s.root / "TASKS.md");
    s.write("TASKS.md", "# Added by a person\n\n" + text + "\nA footnote.\n");
    std::ofstream{go} << "go\n";
  });
  auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
  person.join();
  CAF_CHECK_EQUAL(r.code, 0);
  auto text = read_file(s.root / "TASKS.md");
  CAF_CHECK(contains(text, "# Added by a person\n\n- [x] Wait for the person"));
  CAF_CHECK(contains(text, "\nA footnote.\n"));
}

CAF_TEST(progressFile gets one block per finished task) {
  scenario s;
  s.tasks("- [ ] Write one\n  - files: one.txt\n  - run: echo 1 > one.txt\n"
          "- [ ] Write two\n  - files: two.txt\n  - deps: 1\n"
          "  - run: echo 2 > two.txt\n");
  s.set_config(R"({"run": {"progressFile": "features/x/progress.md"}})");
  auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
  CAF_CHECK_EQUAL(r.code, 0);
  auto text = read_file(s.root / "features/x/progress.md");
  CAF_CHECK_EQUAL(count(text, "## "), 2u);
  CAF_CHECK(contains(text, "## t1: Write one\n\n- state: done\n"));
  CAF_CHECK(contains(text, "## t2: Write two\n\n- state: done\n"));
  CAF_CHECK(contains(text, "- run: " + s.run().id + "\n"));
  CAF_CHECK_LESS(text.find("## t1"), text.find("## t2"));
  // The task file is left alone (flipCheckboxes is off).
  CAF_CHECK(contains(read_file(s.root / "TASKS.md"), "- [ ] Write one"));
}

CAF_TEST(a progressFile outside the repository is refused before anything) {
  for (auto bad : {"../progress.md", ".git/progress.md",
                   ".taskforce/progress.md", "/tmp/elsewhere.md"}) {
    scenario s;
    s.tasks("- [ ] One\n  - files: one.txt\n  - run: echo 1 > one.txt\n");
    s.set_config(std::string{R"({"run": {"progressFile": ")"} + bad + "\"}}");
    auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
    CAF_CHECK_EQUAL(r.code, 2);
    CAF_CHECK(contains(r.output, "progressFile"));
    // Nothing ran, nothing was created.
    CAF_CHECK(!std::filesystem::exists(s.root / "one.txt"));
    CAF_CHECK(
      !std::filesystem::exists(s.root / ".taskforce" / "ledger.sqlite"));
  }
  // A symlink that leads out is refused as well.
  scenario s;
  std::filesystem::create_symlink(s.dir.path(), s.root / "out");
  s.tasks("- [ ] One\n  - files: one.txt\n  - run: echo 1 > one.txt\n");
  s.set_config(R"({"run": {"progressFile": "out/progress.md"}})");
  auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
  CAF_CHECK_EQUAL(r.code, 2);
  CAF_CHECK(!std::filesystem::exists(s.dir.path() / "progress.md"));
}

CAF_TEST(detectCompletion checkboxes takes the box the worker checked) {
  scenario s;
  // t1's worker checks its box (and reports nothing); t2's worker does its
  // work and says done, but leaves its box open.
  s.tasks("- [ ] Check my box\n  - files: one.txt\n"
          "  - run: echo 1 > one.txt && sed -i 's/- \\[ \\] Check my box/- "
          "[x] Check my box/' TASKS.md\n"
          "- [ ] Forget my box\n  - files: two.txt\n"
          "  - run: echo 2 > two.txt\n");
  s.set_config(R"({"run": {"detectCompletion": "checkboxes", "maxAttempts": 1,
                  "continueOnError": true}})");
  auto r = s.tf({"run", "TASKS.md", "--mode", "assist"});
  CAF_CHECK_EQUAL(to_string(s.task("t1").state), std::string{"done"});
  auto t2 = s.task("t2");
  CAF_CHECK_EQUAL(to_string(t2.state), std::string{"failed"});
  CAF_CHECK(contains(t2.reason.value_or(""), "not checked"));
  auto text = read_file(s.root / "TASKS.md");
  CAF_CHECK(contains(text, "- [x] Check my box"));
  CAF_CHECK(contains(text, "- [ ] Forget my box"));
  (void)r;
}

CAF_TEST(the progress file the run wrote does not stop a resume) {
  scenario s;
  auto flag = (s.dir.path() / "fixed.flag").string();
  s.write("progress.md", "# Progress\n\n");
  s.tasks("- [ ] One\n  - files: one.txt\n  - run: echo 1 > one.txt\n"
          "- [ ] Two\n  - files: two.txt\n  - run: echo 2 > two.txt\n"
          "  - verify: test -f "
          + flag + "\n");
  git_ok(s.root, {"add", "progress.md"});
  git_ok(s.root, {"commit", "-q", "-m", "progress"});
  s.set_config(R"({"run": {"progressFile": "progress.md", "maxAttempts": 1}})");
  auto r = s.tf({"run", "TASKS.md"});
  CAF_CHECK_EQUAL(r.code, 1);
  auto text = read_file(s.root / "progress.md");
  CAF_CHECK(contains(text, "## t1: One\n\n- state: done\n"));
  CAF_CHECK(contains(text, "## t2: Two\n\n- state: failed\n"));
  // progress.md is tracked and now changed: still the run's own file.
  { std::ofstream{flag} << "ok\n"; }
  auto again = s.tf({"resume"});
  CAF_CHECK_EQUAL(again.code, 0);
  CAF_CHECK_EQUAL(to_string(s.task("t2").state), std::string{"done"});
  CAF_CHECK(contains(read_file(s.root / "progress.md"),
                     "## t2: Two\n\n- state: done\n"));
}
