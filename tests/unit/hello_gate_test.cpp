#define CAF_SUITE unit.hello_gate
#include <caf/test/unit_test.hpp>

#include <string>

#include <nlohmann/json.hpp>

#include "src/net/hello_gate.hpp"

using namespace taskforce;
using json = nlohmann::json;

namespace {

const std::string token(64, 'a');
const std::string hint = "/repo/.taskforce/endpoint.json";

/// The refusal of `line`, parsed; fails the test when the line is admitted.
json refused(const std::string& line) {
  auto v = net::check_hello(line, token, hint);
  CAF_REQUIRE(!v.admitted);
  CAF_REQUIRE(!v.refusal.empty());
  CAF_CHECK_EQUAL(v.refusal.back(), '\n');
  auto r = json::parse(v.refusal);
  CAF_CHECK_EQUAL(r["ok"], false);
  CAF_CHECK_EQUAL(r["error"]["code"], "unauthorized");
  auto message = r["error"]["message"].get<std::string>();
  CAF_CHECK(message.find(hint) != std::string::npos);
  CAF_CHECK(message.find(token) == std::string::npos);
  return r;
}

} // namespace

CAF_TEST(hello with the right token is admitted) {
  auto line = R"({"id":1,"op":"hello","token":")" + token + "\"}";
  CAF_CHECK(net::check_hello(line, token, hint).admitted);
  CAF_CHECK(net::check_hello(line + "\r", token, hint).admitted);
}

CAF_TEST(any other first request is refused echoing its id) {
  auto r = refused(R"({"id":7,"op":"status"})");
  CAF_CHECK_EQUAL(r["id"], 7);
  auto x = refused(R"({"id":"x","op":"acquire","token":")" + token + "\"}");
  CAF_CHECK_EQUAL(x["id"], "x");
  auto none = refused(R"({"op":"hello"})");
  CAF_CHECK(none["id"].is_null());
}

CAF_TEST(hello without a token or with a wrong one is refused) {
  auto none = refused(R"({"id":1,"op":"hello"})");
  CAF_CHECK(none["error"]["message"].get<std::string>().find("\"token\"")
            != std::string::npos);
  auto wrong = token;
  wrong.back() = 'b';
  auto w = refused(R"({"id":2,"op":"hello","token":")" + wrong + "\"}");
  CAF_CHECK(w["error"]["message"].get<std::string>().find("wrong token")
            != std::string::npos);
  refused(R"({"id":3,"op":"hello","token":")" + token.substr(1) + "\"}");
  refused(R"({"id":4,"op":"hello","token":""})");
  refused(R"({"id":5,"op":"hello","token":42})");
  refused(R"({"id":6,"op":"hello","token":[")" + token + "\"]}");
}

CAF_TEST(lines that are not a request are refused) {
  for (auto line : {"", "garbage", "[1,2]", "\"hello\"", "{\"id\":1,",
                    "{\"id\":1,\"op\":[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]}"}) {
    auto r = refused(line);
    CAF_CHECK(r["id"].is_null());
  }
}

CAF_TEST(the refusals of a line too long or too late name the token file) {
  for (auto& line : {net::hello_too_long(hint), net::hello_too_slow(hint)}) {
    auto r = json::parse(line);
    CAF_CHECK_EQUAL(r["error"]["code"], "unauthorized");
    CAF_CHECK(r["error"]["message"].get<std::string>().find(hint)
              != std::string::npos);
  }
}
