#define CAF_SUITE unit.json_reader
#include <caf/test/unit_test.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "src/text/json_reader.hpp"

using namespace taskforce;
using json = nlohmann::json;
using problem = json_read_result::problem;

namespace {

json_read_result read(const std::string& text, json& out,
                      const json_read_options& opts = {}) {
  return read_json(text.data(), text.data() + text.size(), out, opts);
}

std::string nested(size_t depth) {
  return std::string(depth, '[') + std::string(depth, ']');
}

} // namespace

CAF_TEST(a document is read whole) {
  json out;
  auto r = read(R"({"a":[1,2.5,{"b":null}],"c":"x"})", out);
  CAF_CHECK(r.ok());
  CAF_CHECK_EQUAL(out.dump(), R"({"a":[1,2.5,{"b":null}],"c":"x"})");
}

CAF_TEST(nesting beyond the bound stops the reading without recursion) {
  json out;
  // 100,000 levels: the library's own builder and dump would recurse.
  auto r = read(R"({"x":)" + nested(100000) + "}", out);
  CAF_CHECK(r.kind == problem::too_deep);
  CAF_CHECK_EQUAL(r.path, std::vector<std::string>{"x"});
  CAF_CHECK(r.inside);
  CAF_CHECK(out.is_null());
}

CAF_TEST(a value too deep can be left out and its place noted) {
  json out;
  json_read_options opts;
  opts.max_depth = 3;
  opts.skip_too_deep = true;
  auto r = read(R"({"id":7,"deep":{"a":[[[1]]]},"op":"hello"})", out, opts);
  CAF_CHECK(r.ok());
  CAF_CHECK(r.skipped_any);
  CAF_CHECK_EQUAL(r.skipped, (std::vector<std::string>{"deep", "a"}));
  CAF_CHECK_EQUAL(out.dump(), R"({"deep":{"a":[]},"id":7,"op":"hello"})");
}

CAF_TEST(a number beyond a double is a problem with its keys not a throw) {
  json out;
  auto r = read(R"({"pool":{"maxHoldMs":1e400}})", out);
  CAF_CHECK(r.kind == problem::out_of_range);
  CAF_CHECK_EQUAL(r.token, "1e400");
  CAF_CHECK_EQUAL(r.path, (std::vector<std::string>{"pool", "maxHoldMs"}));
  CAF_CHECK(!r.inside);
}

CAF_TEST(syntax errors say where without the library prefix) {
  json out;
  auto r = read("{\"a\": tru}", out);
  CAF_CHECK(r.kind == problem::syntax);
  CAF_CHECK_EQUAL(r.detail.rfind("parse error at line 1", 0), 0u);
  CAF_CHECK(r.detail.find("[json.exception") == std::string::npos);
}

CAF_TEST(duplicate keys are refused only when asked) {
  json out;
  CAF_CHECK(read(R"({"a":1,"a":2})", out).ok());
  CAF_CHECK_EQUAL(out["a"], 2);
  json_read_options opts;
  opts.refuse_duplicate_keys = true;
  auto r = read(R"({"s":{"a":1,"a":2}})", out, opts);
  CAF_CHECK(r.kind == problem::duplicate_key);
  CAF_CHECK_EQUAL(r.token, "a");
  CAF_CHECK_EQUAL(r.path, std::vector<std::string>{"s"});
}

CAF_TEST(floats are seen as written and may be changed) {
  json out;
  json_read_options opts;
  std::string seen;
  opts.on_float = [&](double& x, const std::string& text,
                      const std::vector<std::string>& path) {
    if (path == std::vector<std::string>{"id"}) {
      seen = text;
      x = -1;
    }
  };
  CAF_CHECK(read(R"({"id":18446744073709551616.0,"v":[1.5]})", out, opts).ok());
  CAF_CHECK_EQUAL(seen, "18446744073709551616.0");
  CAF_CHECK_EQUAL(out["id"].get<double>(), -1.0);
  CAF_CHECK_EQUAL(out["v"][0].get<double>(), 1.5);
}
