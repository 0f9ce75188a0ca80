#define CAF_SUITE unit.report
#include <caf/test/unit_test.hpp>

#include <random>
#include <string>
#include <vector>

#include "src/report/report.hpp"

using namespace taskforce;

namespace {

enum class expect { none, error, done, blocked };

struct report_case {
  const char* name;
  std::string output;
  expect outcome;
  /// The summary, or a substring of the error.
  std::string text;
  report_source source = report_source::json;
  std::vector<std::string> files = {};
};

const std::vector<report_case> report_cases = {
  {"empty output", "", expect::none, ""},
  {"prose only", "I changed the cache.\nAll good.\n", expect::none, ""},
  {"done marker", "work work\n[task:done]\n", expect::done, "",
   report_source::marker},
  {"blocked marker with reason", "hmm\n[task:blocked] need the API key\n",
   expect::blocked, "need the API key", report_source::marker},
  {"the last marker wins (blocked)", "[task:done]\nthen\n[task:blocked] no",
   expect::blocked, "no", report_source::marker},
  {"the last marker wins (done)", "[task:blocked] x\n[task:done] fixed it",
   expect::done, "fixed it", report_source::marker},
  {"marker reason spans the rest of the output",
   "[task:blocked]\n  first line\n  second line  \n", expect::blocked,
   "first line\n  second line", report_source::marker},
  {"marker inside a line", "result: [task:done] all tests pass", expect::done,
   "all tests pass", report_source::marker},
  {"full json report",
   "Did it.\n```json\n{\"status\": \"done\", \"summary\": \"added cache\", "
   "\"files\": [\"src/a.cpp\", \"src/a.hpp\"], \"usage\": {\"input_tokens\": "
   "1200, \"output_tokens\": 300, \"cost_usd\": 0.042}}\n```\n",
   expect::done,
   "added cache",
   report_source::json,
   {"src/a.cpp", "src/a.hpp"}},
  {"json with status only", "```json\n{\"status\":\"blocked\"}\n```",
   expect::blocked, ""},
  {"json wins over a later marker",
   "```json\n{\"status\":\"blocked\",\"summary\":\"no key\"}\n```\n"
   "[task:done]\n",
   expect::blocked, "no key"},
  {"json wins over an earlier marker",
   "[task:blocked] stuck\n```json\n{\"status\":\"done\",\"summary\":\"ok\"}"
   "\n```\n",
   expect::done, "ok"},
  {"the last json block wins",
   "```json\n{\"status\":\"blocked\"}\n```\nlater\n```json\n"
   "{\"status\":\"done\",\"summary\":\"second\"}\n```\n",
   expect::done, "second"},
  {"uppercase language and an indented fence",
   "  ```JSON\n  {\"status\": \"done\", \"summary\": \"s\"}\n  ```\n",
   expect::done, "s"},
  {"longer fences", "````json\n{\"status\":\"done\"}\n````\n", expect::done,
   ""},
  {"null summary and files are allowed",
   "```json\n{\"status\":\"done\",\"summary\":null,\"files\":null}\n```",
   expect::done, ""},
  {"unknown keys are ignored",
   "```json\n{\"status\":\"done\",\"notes\":[1,2]}\n```", expect::done, ""},
  {"a json block without status is data, the marker decides",
   "```json\n{\"name\": \"pkg\", \"version\": \"1.0\"}\n```\n[task:done] ok",
   expect::done, "ok", report_source::marker},
  {"a json array is data", "```json\n[1, 2]\n```\n", expect::none, ""},
  {"an unlabelled block is not a report", "```\n{\"status\":\"done\"}\n```\n",
   expect::none, ""},
  {"a json fence inside another block is content",
   "````markdown\n```json\n{\"status\":\"done\"}\n```\n````\n", expect::none,
   ""},
  {"malformed json", "```json\n{\"status\": \"done\",}\n```\n[task:done]",
   expect::error,
   "(output line 1) is not valid JSON: "
   "[json.exception.parse_error.101]"},
  {"bad status value", "text\n```json\n{\"status\": \"ok\"}\n```",
   expect::error,
   "block (output line 2): \"status\" must be \"done\" or \"blocked\", not "
   "\"ok\""},
  {"status of the wrong type", "```json\n{\"status\": true}\n```",
   expect::error, "\"status\" must be \"done\" or \"blocked\", not true"},
  {"files not an array",
   "```json\n{\"status\": \"done\", \"files\": \"a.cpp\"}\n```", expect::error,
   "\"files\" must be an array of paths"},
  {"a file that is no string",
   "```json\n{\"status\": \"done\", \"files\": [\"a\", 3]}\n```", expect::error,
   "\"files\" must be an array of paths, found 3"},
  {"summary not a string",
   "```json\n{\"status\": \"done\", \"summary\": 5}\n```", expect::error,
   "\"summary\" must be a string"},
  {"negative tokens",
   "```json\n{\"status\": \"done\", \"usage\": {\"input_tokens\": -1}}\n```",
   expect::error, "\"usage.input_tokens\" must be a non-negative integer"},
  {"cost as a string",
   "```json\n{\"status\":\"done\",\"usage\":{\"cost_usd\":\"1\"}}\n```",
   expect::error, "\"usage.cost_usd\" must be a non-negative number"},
  {"unclosed block at the end", "```json\n{\"status\": \"done\"}\n",
   expect::error, "block (output line 1) is not closed"},
};

} // namespace

CAF_TEST(the report parser reads its table of inputs) {
  for (auto& c : report_cases) {
    CAF_MESSAGE("case: " << c.name);
    auto r = read_report(c.output);
    switch (c.outcome) {
      case expect::none: CAF_CHECK(r.none()); break;
      case expect::error:
        CAF_CHECK(!r.report);
        CAF_CHECK(r.error.find(c.text) != std::string::npos);
        if (r.error.find(c.text) == std::string::npos)
          CAF_MESSAGE("got error: " << r.error);
        break;
      default:
        CAF_REQUIRE(r.report);
        CAF_CHECK(r.error.empty());
        CAF_CHECK_EQUAL(
          to_string(r.report->status),
          std::string{c.outcome == expect::done ? "done" : "blocked"});
        CAF_CHECK_EQUAL(r.report->summary, c.text);
        CAF_CHECK_EQUAL(to_string(r.report->source),
                        std::string{to_string(c.source)});
        CAF_CHECK_EQUAL(r.report->files, c.files);
    }
  }
}

CAF_TEST(usage is read when present) {
  auto r = read_report("```json\n{\"status\":\"done\",\"usage\":{"
                       "\"input_tokens\":10,\"output_tokens\":20,"
                       "\"cost_usd\":0.5}}\n```");
  CAF_REQUIRE(r.report && r.report->usage);
  CAF_CHECK_EQUAL(r.report->usage->input_tokens, 10u);
  CAF_CHECK_EQUAL(r.report->usage->output_tokens, 20u);
  CAF_CHECK_EQUAL(r.report->usage->cost_usd, 0.5);
  auto none = read_report("```json\n{\"status\":\"done\"}\n```");
  CAF_REQUIRE(none.report);
  CAF_CHECK(!none.report->usage);
}

CAF_TEST(absurd usage is kept to a ceiling with a warning) {
  // 9223372036855 tokens: a million of them would overflow a 64-bit sum.
  auto r = read_report("```json\n{\"status\":\"done\",\"usage\":{"
                       "\"input_tokens\":9223372036855,\"output_tokens\":7,"
                       "\"cost_usd\":1e300}}\n```");
  CAF_REQUIRE(r.report && r.report->usage);
  CAF_CHECK_EQUAL(r.report->usage->input_tokens, max_report_tokens);
  CAF_CHECK_EQUAL(r.report->usage->output_tokens, 7u);
  CAF_CHECK_EQUAL(r.report->usage->cost_usd, max_report_cost_usd);
  CAF_REQUIRE_EQUAL(r.report->warnings.size(), 2u);
  CAF_CHECK(r.report->warnings[0].find("usage.input_tokens 9223372036855")
            != std::string::npos);
  CAF_CHECK(r.report->warnings[1].find("usage.cost_usd") != std::string::npos);
  // Beyond int64: huge, not negative.
  auto huge = read_report("```json\n{\"status\":\"done\",\"usage\":{"
                          "\"input_tokens\":18446744073709551615}}\n```");
  CAF_REQUIRE(huge.report && huge.report->usage);
  CAF_CHECK_EQUAL(huge.report->usage->input_tokens, max_report_tokens);
  CAF_CHECK_EQUAL(huge.report->warnings.size(), 1u);
  auto negative = read_report("```json\n{\"status\":\"done\",\"usage\":{"
                              "\"input_tokens\":-1}}\n```");
  CAF_CHECK(!negative.report);
  auto fine = read_report("```json\n{\"status\":\"done\",\"usage\":{"
                          "\"input_tokens\":3}}\n```");
  CAF_REQUIRE(fine.report);
  CAF_CHECK(fine.report->warnings.empty());
}

CAF_TEST(a number beyond a double is a malformed report not a crash) {
  // nlohmann's parser throws out_of_range (not parse_error) for 1e400.
  auto r = read_report("```json\n{\"status\":\"done\",\"usage\":{"
                       "\"cost_usd\":1e400}}\n```");
  CAF_CHECK(!r.report);
  CAF_CHECK(r.error.find("is not valid JSON") != std::string::npos);
  auto text = read_report("```json\n{\"status\":\"done\",\"usage\":{"
                          "\"input_tokens\":\"120\"}}\n```");
  CAF_CHECK(!text.report);
  CAF_CHECK(text.error.find("\"usage.input_tokens\"") != std::string::npos);
}

namespace {

struct judge_case {
  const char* name;
  worker_backend backend;
  int exit_code;
  int signal;
  bool timed_out;
  bool cancelled;
  std::string output;
  verdict_kind kind;
  std::string reason;
};

const std::vector<judge_case> judge_cases = {
  {"shell exit 0 is done", worker_backend::shell, 0, 0, false, false, "built\n",
   verdict_kind::done, ""},
  {"shell exit 1 fails", worker_backend::shell, 1, 0, false, false, "oops",
   verdict_kind::failed, "exit 1"},
  {"shell exit 0 with a blocked marker blocks", worker_backend::shell, 0, 0,
   false, false, "[task:blocked] needs a decision\non the schema",
   verdict_kind::blocked, "needs a decision on the schema"},
  {"shell blocked json blocks even on a failing exit", worker_backend::shell, 2,
   0, false, false, "```json\n{\"status\":\"blocked\"}\n```",
   verdict_kind::blocked, "blocked (no reason given)"},
  {"shell done marker with a failing exit fails", worker_backend::shell, 1, 0,
   false, false, "[task:done]", verdict_kind::failed,
   "exit 1 after reporting done"},
  {"shell done summary becomes the reason", worker_backend::shell, 0, 0, false,
   false, "[task:done]   two\n files  ", verdict_kind::done, "two files"},
  {"shell malformed report fails", worker_backend::shell, 0, 0, false, false,
   "```json\n{oops}\n```", verdict_kind::failed, "malformed report"},
  {"agent without a report fails", worker_backend::agent, 0, 0, false, false,
   "I did everything!", verdict_kind::failed, "no report (exit 0)"},
  {"agent done report is done", worker_backend::agent, 0, 0, false, false,
   "```json\n{\"status\":\"done\",\"summary\":\"cache added\"}\n```",
   verdict_kind::done, "cache added"},
  {"agent blocked marker blocks", worker_backend::agent, 0, 0, false, false,
   "[task:blocked] which database?", verdict_kind::blocked, "which database?"},
  {"agent crash without a report", worker_backend::agent, -1, 6, false, false,
   "partial", verdict_kind::failed, "no report (signal 6 (Aborted))"},
  {"scripted done marker with exit 3 fails", worker_backend::scripted, 3, 0,
   false, false, "[task:done]", verdict_kind::failed,
   "exit 3 after reporting done"},
  {"a timeout fails whatever the output", worker_backend::shell, -1, 9, true,
   false, "[task:done]", verdict_kind::failed, "timed out after 1500 ms"},
  {"a cancel fails", worker_backend::agent, -1, 15, false, true, "[task:done]",
   verdict_kind::failed, "cancelled"},
};

} // namespace

CAF_TEST(the verdict combines the report and the exit by backend) {
  for (auto& c : judge_cases) {
    CAF_MESSAGE("case: " << c.name);
    proc::run_result r;
    r.exit_code = c.exit_code;
    r.signal = c.signal;
    r.timed_out = c.timed_out;
    r.cancelled = c.cancelled;
    r.duration = std::chrono::milliseconds(1500);
    auto v = judge_worker(c.backend, r, read_report(c.output));
    CAF_CHECK_EQUAL(to_string(v.kind), std::string{to_string(c.kind)});
    if (c.kind == verdict_kind::failed && c.reason == "malformed report")
      CAF_CHECK_EQUAL(v.reason.rfind(c.reason, 0), 0u);
    else
      CAF_CHECK_EQUAL(v.reason, c.reason);
  }
}

CAF_TEST(backend names parse and print) {
  for (auto b :
       {worker_backend::shell, worker_backend::agent, worker_backend::scripted})
    CAF_CHECK(parse_worker_backend(to_string(b)) == b);
  CAF_CHECK(!parse_worker_backend("robot"));
}

CAF_TEST(mangled outputs never throw and always give one answer) {
  // Random cuts, splices and byte flips of the table's inputs: the parser
  // must answer with a report, an error or nothing, and never throw.
  std::mt19937 rng{42};
  const std::string alphabet = "`{}[]\":,\n json[task:done][task:blocked]";
  size_t reports = 0, errors = 0, nothing = 0;
  for (int i = 0; i < 20000; ++i) {
    auto text = report_cases[rng() % report_cases.size()].output;
    auto other = report_cases[rng() % report_cases.size()].output;
    switch (rng() % 4) {
      case 0:
        text = text.substr(0, text.empty() ? 0 : rng() % text.size());
        break;
      case 1:
        text += other.substr(other.empty() ? 0 : rng() % other.size());
        break;
      case 2:
        for (int k = 0; k < 3 && !text.empty(); ++k)
          text[rng() % text.size()] = alphabet[rng() % alphabet.size()];
        break;
      default: text.insert(text.empty() ? 0 : rng() % text.size(), other);
    }
    report_reading r;
    try {
      r = read_report(text);
    } catch (const std::exception& e) {
      CAF_FAIL("read_report threw on " << text << ": " << e.what());
    }
    CAF_CHECK(!(r.report && !r.error.empty()));
    if (r.report)
      ++reports;
    else if (!r.error.empty())
      ++errors;
    else
      ++nothing;
  }
  CAF_CHECK_GREATER(reports, 0u);
  CAF_CHECK_GREATER(errors, 0u);
  CAF_CHECK_GREATER(nothing, 0u);
}
