#define CAF_SUITE unit.protocol
#include <caf/test/unit_test.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "src/protocol/encode.hpp"
#include "src/protocol/ordering.hpp"
#include "src/protocol/request.hpp"

using namespace taskforce;
using namespace taskforce::protocol;
using json = nlohmann::json;

namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// The problem of `line`; fails the test when the line is well-formed.
std::string refusal(const std::string& line) {
  auto d = decode(line);
  CAF_CHECK(!d.blank);
  CAF_CHECK(!d.problem.empty());
  return d.problem;
}

/// `out` split into parsed lines.
std::vector<json> lines(const std::string& out) {
  std::vector<json> result;
  size_t at = 0;
  while (at < out.size()) {
    auto nl = out.find('\n', at);
    CAF_REQUIRE(nl != std::string::npos);
    result.push_back(json::parse(out.substr(at, nl - at)));
    at = nl + 1;
  }
  return result;
}

} // namespace

// -- decoding -----------------------------------------------------------------

CAF_TEST(blank lines carry no request) {
  CAF_CHECK(decode("").blank);
  CAF_CHECK(decode(" \t\r").blank);
}

CAF_TEST(an acquire decodes into its typed fields) {
  auto d = decode(R"({"id":7,"op":"acquire","session":"s","holder":"h",)"
                  R"("kind":"background","child_session":"c","tool":"Agent",)"
                  R"("detach":true})");
  CAF_REQUIRE(d.problem.empty());
  CAF_CHECK_EQUAL(d.id, "7");
  CAF_CHECK(d.op == op_kind::acquire);
  CAF_CHECK(d.acquire);
  CAF_CHECK_EQUAL(d.holder, "h");
  CAF_CHECK_EQUAL(d.acquire_req.session, "s");
  CAF_CHECK_EQUAL(d.acquire_req.holder, "h");
  CAF_CHECK(d.acquire_req.kind == holder_kind::background);
  CAF_CHECK_EQUAL(d.acquire_req.child_session, "c");
  CAF_CHECK_EQUAL(d.acquire_req.tool, "Agent");
  CAF_CHECK(d.acquire_req.detach);
  // detach is optional and false by default; adopt takes it too.
  auto plain
    = decode(R"({"id":1,"op":"acquire","session":"s","holder":"h","kind":)"
             R"("foreground"})");
  CAF_CHECK(!plain.acquire_req.detach);
  auto adopt = decode(R"({"id":2,"op":"adopt","session":"s","holder":"h",)"
                      R"("child_session":"c","detach":true})");
  CAF_REQUIRE(adopt.problem.empty());
  CAF_CHECK(adopt.adopt_req.detach);
}

CAF_TEST(a detach that is not a boolean is refused naming the field) {
  auto d = decode(R"({"id":"x","op":"acquire","session":"s","holder":"h",)"
                  R"("kind":"foreground","detach":"yes"})");
  CAF_CHECK_EQUAL(d.id, "\"x\"");
  CAF_CHECK(contains(d.problem, "\"detach\""));
  CAF_CHECK(contains(d.problem, "\"yes\""));
  // The ordering still knows it is an acquire of h.
  CAF_CHECK(d.acquire);
  CAF_CHECK_EQUAL(d.holder, "h");
}

CAF_TEST(the other pool operations decode their fields) {
  auto r = decode(R"({"id":1,"op":"release","holder":"h","reason":"error"})");
  CAF_CHECK(r.op == op_kind::release);
  CAF_CHECK_EQUAL(r.holder, "h");
  CAF_CHECK(r.reason == release_reason::error);
  CAF_CHECK(!r.acquire);
  auto b = decode(R"({"id":2,"op":"bind","holder":"h","child_session":"c"})");
  CAF_CHECK(b.op == op_kind::bind);
  CAF_CHECK_EQUAL(b.child_session, "c");
  auto e = decode(R"({"id":3,"op":"end","session":"s"})");
  CAF_CHECK(e.op == op_kind::end);
  CAF_CHECK_EQUAL(e.session, "s");
  CAF_CHECK(decode(R"({"id":4,"op":"status"})").op == op_kind::status);
  auto c = decode(R"({"id":7,"op":"child_started","session":"s",)"
                  R"("child_session":"a1"})");
  CAF_CHECK(c.op == op_kind::child_started);
  CAF_CHECK_EQUAL(c.session, "s");
  CAF_CHECK_EQUAL(c.child_session, "a1");
  CAF_CHECK(contains(refusal(R"({"id":8,"op":"child_started","session":"s"})"),
                     "child_session"));
  CAF_CHECK(contains(refusal(R"({"id":5,"op":"release","holder":"h",)"
                             R"("reason":"idle"})"),
                     "\"reason\" must be"));
  CAF_CHECK(contains(refusal(R"({"id":6,"op":"acquire","session":"s",)"
                             R"("holder":"h","kind":"sideways"})"),
                     "\"kind\" must be"));
}

CAF_TEST(a control plane operation decodes or keeps its op when refused) {
  auto d = decode(R"({"id":1,"op":"bg.cancel"})");
  CAF_CHECK(d.known_op);
  CAF_CHECK(d.op == op_kind::control);
  CAF_CHECK(d.control.op == control::control_op::bg_cancel);
  CAF_CHECK(contains(d.problem, "\"task\""));
}

CAF_TEST(unreadable lines are refused with the id where one could be read) {
  CAF_CHECK(contains(refusal("{nope"), "not JSON"));
  CAF_CHECK_EQUAL(decode("{nope").id, "null");
  CAF_CHECK(contains(refusal("[1,2]"), "must be a JSON object"));
  CAF_CHECK(contains(refusal(R"({"op":"hello"})"), "missing field \"id\""));
  CAF_CHECK(contains(refusal(R"({"id":[1],"op":"hello"})"),
                     "\"id\" must be a number or a string"));
  CAF_CHECK(contains(refusal(R"({"id":1})"), "missing field \"op\""));
  CAF_CHECK_EQUAL(decode(R"({"id":1})").id, "1");
  CAF_CHECK(contains(refusal(R"({"id":1,"op":3})"), "\"op\" must be a string"));
  CAF_CHECK(contains(refusal(R"({"id":1e999,"op":"hello"})"), "out of range"));
}

CAF_TEST(a floating point id is echoed as it was sent) {
  auto d = decode(R"({"id":1.50,"op":"hello"})");
  CAF_CHECK(d.problem.empty());
  CAF_CHECK_EQUAL(d.id, "1.50");
}

CAF_TEST(nesting deeper than the limit is refused without being read) {
  std::string deep(max_nesting + 1, '[');
  deep += std::string(max_nesting + 1, ']');
  auto d = decode(R"({"id":9,"op":"hello","x":)" + deep + "}");
  CAF_CHECK_EQUAL(d.id, "9");
  CAF_CHECK(contains(d.problem, "nested deeper than"));
  CAF_CHECK(contains(d.problem, "field \"x\""));
}

CAF_TEST(an unknown op is refused with the nearest known name) {
  CAF_CHECK(
    contains(refusal(R"({"id":1,"op":"aquire"})"), "did you mean \"acquire\""));
  CAF_CHECK(contains(refusal(R"({"id":1,"op":"bg.statu"})"),
                     "did you mean \"bg.status\""));
  CAF_CHECK(contains(refusal(R"({"id":1,"op":"zzzzzzzzzzzz"})"), "known:"));
}

CAF_TEST(a trailing carriage return is not part of the request) {
  auto d = decode("{\"id\":1,\"op\":\"status\"}\r");
  CAF_CHECK(d.problem.empty());
  CAF_CHECK(d.op == op_kind::status);
}

// -- encoding -----------------------------------------------------------------

CAF_TEST(grants encode their permit or null when not counted) {
  auto g = json::parse(grant_line("3", grant{true, 2, 40, true}));
  CAF_CHECK_EQUAL(g["id"], 3);
  CAF_CHECK_EQUAL(g["ok"], true);
  CAF_CHECK_EQUAL(g["permit"], 2);
  CAF_CHECK_EQUAL(g["queued_ms"], 40);
  CAF_CHECK_EQUAL(g["lent"], true);
  auto n = json::parse(grant_line("\"a\"", grant{false, 0, 0, false}));
  CAF_CHECK_EQUAL(n["id"], "a");
  CAF_CHECK(n["permit"].is_null());
}

CAF_TEST(events carry only the fields of their kind and escape names) {
  pool_event ev;
  ev.kind = pool_event_kind::queued;
  ev.holder = "h\"\n\x01";
  ev.session = "s";
  ev.position = 1;
  ev.of = 2;
  ev.running = 3;
  ev.background = true;
  auto q = json::parse(event_line(ev));
  CAF_CHECK_EQUAL(q["event"], "queued");
  CAF_CHECK_EQUAL(q["holder"], "h\"\n\x01");
  CAF_CHECK_EQUAL(q["position"], 1);
  CAF_CHECK_EQUAL(q["of"], 2);
  CAF_CHECK_EQUAL(q["running"], 3);
  CAF_CHECK_EQUAL(q["background"], true);
  ev.kind = pool_event_kind::released;
  ev.reason = release_reason::idle;
  auto r = json::parse(event_line(ev));
  CAF_CHECK_EQUAL(r["reason"], "idle");
  CAF_CHECK(!r.contains("session"));
  CAF_CHECK(!r.contains("position"));
}

CAF_TEST(status lists running holders with detached and queued holders) {
  pool_status st;
  st.mode = "global";
  st.max_parallel = 1;
  pool_view view;
  view.key = "global";
  view.running.push_back({"a", "s", holder_kind::background, 5, false, true});
  view.queued.push_back({"b", "s", 1, 2});
  st.pools.push_back(view);
  auto x = json::parse(status_line("1", st));
  CAF_CHECK_EQUAL(x["mode"], "global");
  CAF_CHECK_EQUAL(x["max_parallel"], 1);
  auto running = x["pools"][0]["running"][0];
  CAF_CHECK_EQUAL(running["holder"], "a");
  CAF_CHECK_EQUAL(running["kind"], "background");
  CAF_CHECK_EQUAL(running["detached"], true);
  CAF_CHECK_EQUAL(x["pools"][0]["queued"][0]["position"], 1);
}

CAF_TEST(errors and control answers keep their shape) {
  auto e = json::parse(error_line("null", "bad_request", "bad \"x\""));
  CAF_CHECK(e["id"].is_null());
  CAF_CHECK_EQUAL(e["ok"], false);
  CAF_CHECK_EQUAL(e["error"]["code"], "bad_request");
  CAF_CHECK_EQUAL(e["error"]["message"], "bad \"x\"");
  control_answer ok;
  ok.fields = R"({"task":{"id":"t1"},"n":2})";
  auto c = json::parse(control_line("4", ok));
  CAF_CHECK_EQUAL(c["ok"], true);
  CAF_CHECK_EQUAL(c["task"]["id"], "t1");
  CAF_CHECK_EQUAL(c["n"], 2);
  control_answer empty;
  CAF_CHECK_EQUAL(control_line("4", empty), R"({"id":4,"ok":true})");
  control_answer no;
  no.ok = false;
  no.code = "not_found";
  no.message = "no task t9";
  auto n = json::parse(control_line("5", no));
  CAF_CHECK_EQUAL(n["error"]["code"], "not_found");
  auto ev = json::parse(control_event_line({"bg.changed", R"({"to":"done"})"}));
  CAF_CHECK_EQUAL(ev["event"], "bg.changed");
  CAF_CHECK_EQUAL(ev["to"], "done");
}

CAF_TEST(hello names the protocol version and the effective config) {
  pool_config cfg;
  cfg.max_parallel = 5;
  auto h = json::parse(hello_line("1", cfg));
  CAF_CHECK_EQUAL(h["protocol"], version);
  CAF_CHECK_EQUAL(h["config"]["maxParallel"], 5);
  CAF_CHECK_EQUAL(h["config"]["subagentToolNames"],
                  json::array({"Task", "Agent", "task"}));
}

// -- ordering -----------------------------------------------------------------

CAF_TEST(responses leave in arrival order) {
  response_order order;
  std::string out;
  auto a = order.open("1");
  auto b = order.open("2");
  CAF_CHECK(!order.answer(b, R"({"id":2})", out));
  CAF_CHECK(out.empty());
  CAF_CHECK(order.unanswered(a));
  CAF_CHECK(!order.unanswered(b));
  CAF_CHECK(order.answer(a, R"({"id":1})", out));
  CAF_CHECK_EQUAL(out, "{\"id\":1}\n{\"id\":2}\n");
  CAF_CHECK_EQUAL(order.open_count(), 0u);
}

CAF_TEST(a queued acquire lets later answers pass and its grant waits only for
           earlier ones) {
  response_order order;
  std::string out;
  auto before = order.open("0");
  auto acq = order.open("1", "h", true);
  auto after = order.open("2");
  order.answer(after, R"({"id":2})", out);
  CAF_CHECK(out.empty()); // behind the acquire, not yet queued
  // The acquire queued: the later answer may pass it, but not the earlier
  // unanswered one.
  CAF_CHECK(order.queued("h", out));
  CAF_CHECK(out.empty());
  CAF_CHECK(!order.queued("h", out));
  CAF_CHECK_EQUAL(order.open_count(), 2u);
  // Granted before the earlier request is answered: it waits behind it.
  order.answer(acq, R"({"id":1})", out);
  CAF_CHECK(out.empty());
  order.answer(before, R"({"id":0})", out);
  auto x = lines(out);
  CAF_REQUIRE_EQUAL(x.size(), 3u);
  CAF_CHECK_EQUAL(x[0]["id"], 0);
  CAF_CHECK_EQUAL(x[1]["id"], 1);
  CAF_CHECK_EQUAL(x[2]["id"], 2);
  CAF_CHECK_EQUAL(order.open_count(), 0u);
}

CAF_TEST(a granted queued acquire with nothing open before it leaves at once) {
  response_order order;
  std::string out;
  auto acq = order.open("1", "h", true);
  order.queued("h", out);
  auto later = order.open("2");
  order.answer(later, R"({"id":2})", out);
  CAF_CHECK_EQUAL(out, "{\"id\":2}\n");
  out.clear();
  CAF_CHECK(order.answer(acq, R"({"id":1})", out));
  CAF_CHECK_EQUAL(out, "{\"id\":1}\n");
}

CAF_TEST(unanswered slots are listed oldest first for a pool that goes away) {
  response_order order;
  std::string out;
  order.open("1");
  auto b = order.open("2");
  order.open("3", "h", true);
  order.answer(b, R"({"id":2})", out);
  auto open = order.unanswered_slots();
  CAF_REQUIRE_EQUAL(open.size(), 2u);
  CAF_CHECK_EQUAL(open[0].second, "1");
  CAF_CHECK_EQUAL(open[1].second, "3");
  CAF_CHECK_EQUAL(order.id_of(b), "2");
  CAF_CHECK_EQUAL(order.id_of(99), "null");
}
