#define CAF_SUITE unit.live_layout
#include <caf/test/unit_test.hpp>

#include <sstream>

#include "src/cli/live_layout.hpp"
#include "src/cli/live_table.hpp"

using namespace taskforce;
using namespace taskforce::cli;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

view_task task(const std::string& id, const std::string& state,
               const std::string& title = "A task") {
  view_task t;
  t.id = id;
  t.title = title;
  t.state = state;
  return t;
}

/// Forty tasks: t1..t40, all pending but for the given states.
std::vector<view_task>
forty(const std::vector<std::pair<int, std::string>>& states) {
  std::vector<view_task> out;
  for (int i = 1; i <= 40; ++i)
    out.push_back(task("t" + std::to_string(i), "pending",
                       "Task number " + std::to_string(i)));
  for (auto& [i, s] : states)
    out[i - 1].state = s;
  return out;
}

bool has_row_of(const std::vector<frame_line>& frame, const std::string& id) {
  for (auto& l : frame)
    if (l.text.compare(0, id.size() + 1, id + " ") == 0)
      return true;
  return false;
}

} // namespace

CAF_TEST(no line of the table is as wide as the terminal in 80 or 60 columns) {
  std::vector<view_task> tasks;
  auto long_title = std::string(120, 'x');
  tasks.push_back(task("t1", "running", long_title));
  tasks.push_back(task("a-much-longer-task-id", "verifying",
                       "Übersetzung der Oberfläche ins Deutsche – 日本語も"));
  auto failed = task("t3", "failed", "Gate");
  failed.reason = "gate failed:\nline one\n\tline two " + std::string(90, 'y');
  failed.cost = "$0.0100";
  failed.elapsed = "59m59s";
  failed.attempt = 3;
  tasks.push_back(failed);
  auto waiting = task("t4", "review", "Review me");
  waiting.note = "awaiting approval: taskforce approve t4 " + long_title;
  tasks.push_back(waiting);
  // A title cannot move the cursor or clear the screen.
  tasks.push_back(task("t5", "pending", "evil\x1b[2J\x1b[10Atitle\r"));
  for (size_t cols : {160u, 80u, 60u, 50u, 30u, 12u}) {
    auto frame = layout_table(tasks, "4 tasks: " + long_title, {cols, 24});
    for (auto& l : frame) {
      CAF_CHECK_LESS(display_width(l.text), cols);
      CAF_CHECK(!contains(l.text, "\n"));
      CAF_CHECK(!contains(l.text, "\t"));
      CAF_CHECK(!contains(l.text, "\x1b"));
      CAF_CHECK(!contains(l.text, "\r"));
    }
  }
}

CAF_TEST(titles get the room a wide terminal has) {
  auto title = std::string{"Rewrite the configuration loader so that every "
                           "key has one reader"};
  std::vector<view_task> tasks{task("t1", "running", title)};
  auto wide = layout_table(tasks, "1 task", {160, 24});
  CAF_CHECK(contains(wide[1].text, title));
  auto narrow = layout_table(tasks, "1 task", {60, 24});
  CAF_CHECK(!contains(narrow[1].text, title));
  CAF_CHECK(contains(narrow[1].text, "Rewrite the"));
  CAF_CHECK(contains(narrow[1].text, "running"));
}

CAF_TEST(columns that matter least go first when the terminal is narrow) {
  auto t = task("t1", "running", "Title");
  t.cost = "$0.0100";
  t.attempt = 2;
  t.elapsed = "12.3s";
  auto wide = layout_table({t}, "", {80, 24});
  CAF_CHECK(contains(wide[0].text, "COST"));
  CAF_CHECK(contains(wide[1].text, "$0.0100"));
  auto narrow = layout_table({t}, "", {40, 24});
  CAF_CHECK(!contains(narrow[0].text, "COST"));
  CAF_CHECK(contains(narrow[1].text, "running"));
}

CAF_TEST(when rows run out running failed and waiting tasks stay on screen) {
  auto tasks = forty({{1, "done"},
                      {2, "done"},
                      {17, "running"},
                      {33, "failed"},
                      {38, "verifying"},
                      {40, "review"}});
  tasks[39].note = "awaiting approval: taskforce approve t40";
  auto frame = layout_table(tasks, "40 tasks", {60, 15});
  CAF_CHECK_LESS_OR_EQUAL(frame.size(), 14u);
  for (auto id : {"t17", "t33", "t38", "t40"})
    CAF_CHECK(has_row_of(frame, id));
  // The rest collapse into one line of counts, the summary stays last.
  CAF_CHECK_EQUAL(frame.back().text, "40 tasks");
  auto counts = frame[frame.size() - 2].text;
  CAF_CHECK(contains(counts, " more: "));
  CAF_CHECK(contains(counts, "pending"));
  size_t rows = 0;
  for (auto& l : frame)
    rows += l.text.compare(0, 1, "t") == 0 ? 1 : 0;
  CAF_CHECK(contains(counts, "+" + std::to_string(40 - rows) + " more"));
  // The file's order is kept among the rows shown.
  size_t at17 = 0, at33 = 0;
  for (size_t i = 0; i < frame.size(); ++i) {
    if (frame[i].text.compare(0, 4, "t17 ") == 0)
      at17 = i;
    if (frame[i].text.compare(0, 4, "t33 ") == 0)
      at33 = i;
  }
  CAF_CHECK_LESS(at17, at33);
}

CAF_TEST(a running task is shown even when only two rows are left) {
  auto tasks = forty({{29, "running"}});
  auto frame = layout_table(tasks, "40 tasks", {80, 6});
  CAF_CHECK_EQUAL(frame.size(), 5u);
  CAF_CHECK(has_row_of(frame, "t29"));
  CAF_CHECK(contains(frame[3].text, "+38 more: 38 pending"));
}

CAF_TEST(the last frame has every task whatever the height) {
  auto tasks = forty({{3, "done"}});
  auto frame = layout_table(tasks, "", {80, 10}, true);
  CAF_CHECK_EQUAL(frame.size(), 42u);
  for (auto& l : frame)
    CAF_CHECK(!contains(l.text, " more: "));
}

CAF_TEST(a waiting task keeps the line that says what to type) {
  auto t = task("t1", "review", "Review me");
  t.note = "awaiting approval: taskforce approve t1";
  auto frame = layout_table({t, task("t2", "done")}, "2 tasks", {80, 24});
  CAF_REQUIRE_EQUAL(frame.size(), 5u);
  CAF_CHECK(contains(frame[2].text, "-> awaiting approval: taskforce approve"));
}

CAF_TEST(the view mode follows the terminal) {
  CAF_CHECK(choose_mode(false, true, false, {80, 24}) == view_mode::plain);
  CAF_CHECK(choose_mode(true, true, true, {80, 24}) == view_mode::plain);
  CAF_CHECK(choose_mode(true, false, false, {80, 24})
            == view_mode::status_lines);
  CAF_CHECK(choose_mode(true, true, false, {80, 24}) == view_mode::table);
  CAF_CHECK(choose_mode(true, true, false, {60, 15}) == view_mode::table);
  CAF_CHECK(choose_mode(true, true, false, {40, 24}) == view_mode::status_line);
  CAF_CHECK(choose_mode(true, true, false, {120, 4}) == view_mode::status_line);
}

CAF_TEST(the status line names the running tasks and fits its width) {
  auto tasks = forty({{1, "done"},
                      {2, "done"},
                      {3, "failed"},
                      {10, "running"},
                      {11, "running"},
                      {12, "merging"}});
  auto wide = layout_status_line(tasks, "12.3s, ETA 40s", 120);
  CAF_CHECK_EQUAL(wide, "[3/40] running t10 t11 t12; 1 failed; 12.3s, ETA 40s");
  // Names go before the times, the times before the last name.
  CAF_CHECK_EQUAL(layout_status_line(tasks, "12.3s, ETA 40s", 40),
                  "[3/40] running t10 t11 t12; 1 failed");
  CAF_CHECK_EQUAL(layout_status_line(tasks, "12.3s, ETA 40s", 32),
                  "[3/40] running t10 +2; 1 failed");
  CAF_CHECK_EQUAL(layout_status_line(tasks, "12.3s, ETA 40s", 30),
                  "[3/40] 3 running; 1 failed");
  for (size_t w : {30u, 20u, 10u, 2u})
    CAF_CHECK_LESS(display_width(layout_status_line(tasks, "12.3s", w)),
                   std::max<size_t>(w, 2));
}

CAF_TEST(the eta comes from the tasks that finished) {
  std::vector<task_timing> none{{0, 0, false}, {0, 0, false}};
  CAF_CHECK(!estimate_eta(none, 10'000, 2));
  // Two tasks took 10 s each; one runs for 4 s now, two wait; two lanes.
  std::vector<task_timing> tasks{{1'000, 11'000, true},
                                 {2'000, 12'000, true},
                                 {16'000, 0, false},
                                 {0, 0, false},
                                 {0, 0, false}};
  auto eta = estimate_eta(tasks, 20'000, 2);
  CAF_REQUIRE(eta);
  CAF_CHECK_EQUAL(*eta, (6'000 + 10'000 + 10'000) / 2);
  CAF_CHECK_EQUAL(timing_text(65'000, eta), "1m05s, ETA 13.0s");
  CAF_CHECK_EQUAL(timing_text(1'200, std::nullopt), "1.2s");
  // What is left ran past the mean already: no ETA rather than "0s".
  CAF_CHECK(!estimate_eta(tasks, 40'000, 2)
            || *estimate_eta(tasks, 40'000, 2) > 0);
  CAF_CHECK(!estimate_eta({{1'000, 2'000, true}, {1'000, 0, false}}, 9'000, 2));
  // Nothing left: no ETA.
  CAF_CHECK(!estimate_eta({{1'000, 2'000, true}}, 3'000, 2));
}

CAF_TEST(lines a narrower terminal reflowed take more rows) {
  CAF_CHECK_EQUAL(physical_rows({79, 10, 0}, 80), 3u);
  CAF_CHECK_EQUAL(physical_rows({79, 10, 0}, 40), 4u);
  CAF_CHECK_EQUAL(physical_rows({79, 40, 41}, 20), 4u + 2u + 3u);
}

CAF_TEST(cells are cut at a character and counted as the terminal shows them) {
  CAF_CHECK_EQUAL(display_width("héllo"), 5u);
  CAF_CHECK_EQUAL(display_width("日本"), 4u);
  CAF_CHECK_EQUAL(fit_cell("abc", 5), "abc  ");
  CAF_CHECK_EQUAL(fit_cell("abcdef", 4), "abc~");
  CAF_CHECK_EQUAL(fit_cell("ééééé", 3), "éé~");
  CAF_CHECK_EQUAL(fit_cell("日本語", 4), "日~ ");
  CAF_CHECK_EQUAL(fit_cell("a\nb", 3), "a b");
  CAF_CHECK_EQUAL(fit_cell("abc", 0), "");
}

CAF_TEST(a long last line is broken at spaces before the terminal wraps it) {
  auto text = std::string{"run 20261202-051400-abcd completed (30 tasks: "
                          "29 done, 1 failed; 1500 tokens, $0.0100; 12.3s)"};
  CAF_CHECK_EQUAL(wrap_words(text, 120), std::vector<std::string>{text});
  auto lines = wrap_words(text, 40);
  CAF_REQUIRE_EQUAL(lines.size(), 3u);
  CAF_CHECK_EQUAL(lines[0], "run 20261202-051400-abcd completed (30");
  CAF_CHECK_EQUAL(lines[1], "  tasks: 29 done, 1 failed; 1500");
  CAF_CHECK_EQUAL(lines[2], "  tokens, $0.0100; 12.3s)");
  for (auto& l : wrap_words(std::string(50, 'x') + " y", 20))
    CAF_CHECK_LESS(display_width(l), 20u);
}

// -- drawing on a terminal
// -----------------------------------------------------

namespace {

run_event event_of(const std::string& id, task_state s, int64_t at) {
  run_event ev;
  ev.run_id = "r";
  ev.task_id = id;
  ev.state = s;
  ev.attempt = 1;
  ev.time_ms = at;
  return ev;
}

std::vector<table_row> rows_of(size_t n, const std::string& title) {
  std::vector<table_row> rows;
  for (size_t i = 1; i <= n; ++i) {
    table_row r;
    r.id = "t" + std::to_string(i);
    r.title = title;
    rows.push_back(r);
  }
  return rows;
}

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos;
       at = text.find(part, at + 1))
    ++n;
  return n;
}

} // namespace

CAF_TEST(a redraw after the terminal narrowed goes up over the reflowed rows) {
  std::ostringstream out;
  live_table table{out, view_mode::table, false};
  table.set_screen({80, 24});
  table.set_rows(rows_of(2, std::string(70, 'x')));
  table.redraw(0);
  // Header, two rows and the summary: four lines, each under 80 cells.
  CAF_CHECK(!contains(out.str(), "\x1b[4F"));
  out.str("");
  table.redraw(0);
  CAF_CHECK(contains(out.str(), "\r\x1b[4FTASK"));
  out.str("");
  // At 40 columns the header (78 cells) and the two rows (66) each take
  // two rows.
  table.set_screen({40, 24});
  table.redraw(0);
  CAF_CHECK(contains(out.str(), "\r\x1b[7FTASK"));
}

CAF_TEST(the table becomes a status line in a narrow terminal and back) {
  std::ostringstream out;
  live_table table{out, view_mode::table, false};
  table.set_screen({80, 24});
  table.set_rows(rows_of(3, "Title"));
  table.apply(event_of("t2", task_state::running, 1'000));
  table.redraw(2'000);
  out.str("");
  table.set_screen({40, 24});
  table.set_mode(choose_mode(true, true, false, {40, 24}));
  table.redraw(3'000);
  // The table's five lines are erased, one line without a newline is left.
  CAF_CHECK_EQUAL(out.str(), "\r\x1b[5F[0/3] running t2; 3.0s\x1b[K\x1b[J");
  CAF_CHECK_EQUAL(count_of(out.str(), "\n"), 0u);
  out.str("");
  table.set_screen({80, 24});
  table.set_mode(view_mode::table);
  table.redraw(3'000);
  CAF_CHECK_EQUAL(out.str().compare(0, 5, "\rTASK"), 0);
}

CAF_TEST(a terminal that cannot move the cursor gets a line per change) {
  std::ostringstream out;
  live_table table{out, view_mode::status_lines, false};
  table.set_screen({80, 24});
  table.set_rows(rows_of(2, "Title"));
  table.redraw(0);
  table.redraw(500);
  table.apply(event_of("t1", task_state::running, 600));
  table.redraw(700);
  table.redraw(900);
  table.finish(1'000);
  CAF_CHECK_EQUAL(out.str(), "[0/2] 0.0s\n[0/2] running t1; 0.7s\n");
}

CAF_TEST(the end shows every task once and one summary line) {
  std::ostringstream out;
  live_table table{out, view_mode::table, false};
  table.set_screen({80, 8});
  table.set_rows(rows_of(12, "Title"));
  for (int i = 1; i <= 12; ++i)
    table.apply(event_of("t" + std::to_string(i), task_state::done, 100 * i));
  table.redraw(2'000);
  CAF_CHECK(contains(out.str(), "+8 more: 8 done"));
  out.str("");
  table.finish(2'000);
  auto text = out.str();
  CAF_CHECK_EQUAL(count_of(text, "TASK"), 1u);
  CAF_CHECK(contains(text, "t12 "));
  CAF_CHECK(!contains(text, "more:"));
  CAF_CHECK(!contains(text, "12 tasks:"));
  CAF_CHECK_EQUAL(table.final_line(2'000), "12 tasks: 12 done; 2.0s");
  // Plain lines leave the run's end to that line too.
  std::ostringstream plain;
  live_table lines{plain, view_mode::plain, false};
  run_event end;
  end.run_id = "r";
  end.run = run_state::completed;
  lines.apply(end);
  CAF_CHECK_EQUAL(plain.str(), "");
}
