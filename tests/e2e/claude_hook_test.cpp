// `taskforce hook claude-code` fed the events Claude Code sends (their
// recorded shapes), against a real per-user server: a subagent waits for
// its permit, a launched background agent keeps it until it stops, a
// failure gives it back, a wait past the queue's limit is denied in words
// the model reads. Also `taskforce acquire` / `release` as a script uses
// them.
#define CAF_SUITE e2e.claude_hook
#include <caf/test/unit_test.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "e2e/protocol_client.hpp"
#include "e2e/user_server.hpp"

using namespace taskforce::test;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

const char* session = "121f0c3e-0d4b-4f7a-9c55-7f1e2b3a4c5d";

json base(const char* event) {
  return {{"session_id", session},
          {"transcript_path",
           std::string{"/root/.claude/projects/p/"} + session + ".jsonl"},
          {"cwd", "/work/project"},
          {"prompt_id", "f026aa11"},
          {"permission_mode", "acceptEdits"},
          {"hook_event_name", event}};
}

/// PreToolUse of the Agent tool; `background` unset leaves the field out
/// (Claude Code's default: background).
json pre(const std::string& id, std::optional<bool> background = {}) {
  auto e = base("PreToolUse");
  e["tool_name"] = "Agent";
  e["tool_input"] = {{"description", id},
                     {"prompt", "Do the part " + id},
                     {"subagent_type", "general-purpose"}};
  if (background)
    e["tool_input"]["run_in_background"] = *background;
  e["tool_use_id"] = id;
  return e;
}

json post_completed(const std::string& id, const std::string& agent) {
  auto e = base("PostToolUse");
  e["tool_name"] = "Agent";
  e["tool_input"] = {{"description", id}, {"prompt", "x"}};
  e["tool_use_id"] = id;
  e["tool_response"]
    = {{"status", "completed"},
       {"agentId", agent},
       {"agentType", "general-purpose"},
       {"content", json::array({{{"type", "text"}, {"text", "done"}}})},
       {"totalDurationMs", 5481},
       {"canContinueAgent", true}};
  e["duration_ms"] = 5482;
  return e;
}

json post_launched(const std::string& id, const std::string& agent) {
  auto e = base("PostToolUse");
  e["tool_name"] = "Agent";
  e["tool_input"] = {{"description", id}, {"prompt", "x"}};
  e["tool_use_id"] = id;
  e["tool_response"]
    = {{"isAsync", true},
       {"status", "async_launched"},
       {"agentId", agent},
       {"description", id},
       {"outputFile", "/tmp/claude-0/p/s/tasks/" + agent + ".output"},
       {"canReadOutputFile", true}};
  e["duration_ms"] = 45;
  return e;
}

json post_failure(const std::string& id) {
  auto e = base("PostToolUseFailure");
  e["tool_name"] = "Agent";
  e["tool_input"] = {{"description", id}, {"prompt", "x"}};
  e["tool_use_id"] = id;
  e["error"] = "Agent terminated early due to an API error: 400";
  e["is_interrupt"] = false;
  e["duration_ms"] = 7129;
  return e;
}

json agent_event(const char* name, const std::string& agent) {
  auto e = base(name);
  e["agent_id"] = agent;
  e["agent_type"] = "general-purpose";
  if (std::string{name} == "SubagentStop") {
    e["stop_hook_active"] = false;
    e["last_assistant_message"] = "SUB RESULT: done";
  } else {
    e["error"] = "unknown";
    e["last_assistant_message"] = "API Error: 400";
  }
  return e;
}

/// An event of a call made inside subagent `agent` (Claude Code adds the
/// caller's agent_id and agent_type to the main session's fields).
json inside(json e, const std::string& agent) {
  e["agent_id"] = agent;
  e["agent_type"] = "general-purpose";
  return e;
}

json agent_start(const std::string& agent) {
  auto e = base("SubagentStart");
  e.erase("permission_mode");
  e["agent_id"] = agent;
  e["agent_type"] = "general-purpose";
  return e;
}

/// Whether the hook let its call run: exit 0 and nothing on standard
/// output (no decision: Claude Code's own permission rules apply).
bool admitted(const user_world::result& r) {
  return r.code == 0 && r.out.empty();
}

/// Whether `holder` runs on a lent permit, as `pool status` says; null when
/// it holds nothing.
json lent_of(user_world& w, const std::string& holder) {
  auto status = w.status();
  for (auto& p : status["pools"])
    for (auto& h : p["running"])
      if (h["holder"] == holder)
        return h.value("lent", json{});
  return nullptr;
}

/// The deny reason a hook printed, "" when it printed none.
std::string denial(const std::string& out) {
  auto j = json::parse(out, nullptr, false);
  if (!j.is_object() || !j.contains("hookSpecificOutput"))
    return {};
  auto& h = j["hookSpecificOutput"];
  if (h.value("permissionDecision", "") != "deny")
    return {};
  return h.value("permissionDecisionReason", "");
}

bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

/// A per-user server that never grants in time: it answers an acquire only
/// once the client sends anything after it (a client that gave up), and
/// then first with the grant, as a pool that granted just as the client
/// gave up. Records every line it got.
struct late_granting_server {
  int listen_fd = -1;
  std::thread thread;
  std::vector<json> received;

  explicit late_granting_server(const user_world& w) {
    std::filesystem::create_directories(w.folder());
    ::chmod(w.folder().c_str(), 0700);
    listen_fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s",
                  w.socket().c_str());
    if (::bind(listen_fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0
        || ::listen(listen_fd, 4) != 0)
      throw std::runtime_error("the fake server cannot listen");
    thread = std::thread([this] {
      serve();
    });
  }

  ~late_granting_server() {
    stop();
    ::close(listen_fd);
  }

  /// Stops listening and waits for the connection being served to end.
  void stop() {
    ::shutdown(listen_fd, SHUT_RDWR);
    if (thread.joinable())
      thread.join();
  }

  void serve() {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0)
      return;
    protocol_peer peer{fd, fd};
    json acquire;
    try {
      for (;;) {
        auto x = peer.next(30s);
        received.push_back(x);
        if (x.value("op", "") == "acquire") {
          acquire = x;
          continue;
        }
        if (!acquire.is_null()) {
          peer.send({{"id", acquire["id"]},
                     {"ok", true},
                     {"permit", 1},
                     {"queued_ms", 1000},
                     {"lent", false}});
          acquire = nullptr;
        }
        peer.send({{"id", x["id"]}, {"ok", true}, {"released", true}});
      }
    } catch (const std::exception&) {
      // the client closed
    }
    ::close(fd);
  }
};

struct fixture {
  user_world w;
  fixture() {
    w.set_config(R"({"pool": {"maxParallel": 1, "queueTimeoutMs": 60000}})");
  }
};

} // namespace

CAF_TEST_FIXTURE_SCOPE(claude_hook, fixture)

CAF_TEST(a foreground and a background call at once run one after the other) {
  CAF_REQUIRE(admitted(w.hook(pre("toolu_sub1", false))));
  // The permit outlived the hook that took it.
  CAF_CHECK(has(w.running(), "toolu_sub1"));
  auto second = w.start({"hook", "claude-code"}, pre("toolu_sub2").dump());
  CAF_REQUIRE(eventually(
    [&] {
      return has(w.queued(), "toolu_sub2");
    },
    20s));
  CAF_CHECK(!second->ended());
  // The foreground call ends: the waiting one goes on.
  CAF_CHECK(admitted(w.hook(post_completed("toolu_sub1", "ae34d611"))));
  CAF_REQUIRE_EQUAL(second->finish(), 0);
  CAF_CHECK_EQUAL(second->out, "");
  CAF_CHECK_EQUAL(w.running(), std::vector<std::string>{"toolu_sub2"});
  // Launched in the background: the permit stays until the agent stops.
  CAF_CHECK(admitted(w.hook(post_launched("toolu_sub2", "a3fd0e2b"))));
  CAF_CHECK(has(w.running(), "toolu_sub2"));
  CAF_CHECK(admitted(w.hook(agent_event("SubagentStop", "a3fd0e2b"))));
  CAF_CHECK(w.running().empty());
}

CAF_TEST(a failed foreground subagent releases its permit) {
  CAF_REQUIRE(admitted(w.hook(pre("toolu_f1", false))));
  CAF_CHECK(admitted(w.hook(post_failure("toolu_f1"))));
  CAF_CHECK(w.running().empty());
}

CAF_TEST(a failed background subagent releases its permit) {
  CAF_REQUIRE(admitted(w.hook(pre("toolu_b1"))));
  CAF_CHECK(admitted(w.hook(post_launched("toolu_b1", "ac20aa"))));
  CAF_CHECK(has(w.running(), "toolu_b1"));
  CAF_CHECK(admitted(w.hook(agent_event("StopFailure", "ac20aa"))));
  CAF_CHECK(w.running().empty());
}

CAF_TEST(an agent that stops before its launch is reported still releases) {
  CAF_REQUIRE(admitted(w.hook(pre("toolu_quick"))));
  CAF_CHECK(admitted(w.hook(agent_event("SubagentStop", "a0quick"))));
  CAF_CHECK(admitted(w.hook(post_launched("toolu_quick", "a0quick"))));
  CAF_CHECK(w.running().empty());
}

CAF_TEST(a wait past queueTimeoutMs is denied with a reason for the model) {
  w.set_config(R"({"pool": {"maxParallel": 1, "queueTimeoutMs": 400}})");
  CAF_REQUIRE(admitted(w.hook(pre("toolu_t1", false))));
  auto r = w.hook(pre("toolu_t2", false));
  CAF_CHECK_EQUAL(r.code, 0);
  auto why = denial(r.out);
  CAF_CHECK(why.find("queue_timeout") != std::string::npos);
  CAF_CHECK(why.find("taskforce") != std::string::npos);
  CAF_CHECK(!has(w.queued(), "toolu_t2"));
  CAF_CHECK_EQUAL(w.running(), std::vector<std::string>{"toolu_t1"});
}

CAF_TEST(the hook denies before its own deadline and cancels the wait) {
  CAF_REQUIRE(admitted(w.hook(pre("toolu_d1", false))));
  auto r = w.run({"hook", "claude-code", "--wait", "1"},
                 pre("toolu_d2", false).dump());
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK(denial(r.out).find("within 1 s") != std::string::npos);
  CAF_CHECK(eventually(
    [&] {
      return !has(w.queued(), "toolu_d2");
    },
    20s));
  // Releasing the first leaves the pool empty: the denied call holds
  // nothing.
  CAF_CHECK(admitted(w.hook(post_completed("toolu_d1", "a1"))));
  CAF_CHECK(w.running().empty());
}

CAF_TEST(a permit granted just as the hook gives up is released) {
  late_granting_server fake{w};
  auto r = w.run({"hook", "claude-code", "--wait", "1"},
                 pre("toolu_race", false).dump());
  fake.stop();
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK(denial(r.out).find("within 1 s") != std::string::npos);
  // The grant came after the deadline: the hook gave it back.
  auto released = std::count_if(
    fake.received.begin(), fake.received.end(), [](const json& x) {
      return x.value("op", "") == "release"
             && x.value("holder", "") == "toolu_race";
    });
  CAF_CHECK_EQUAL(released, 1);
}

CAF_TEST(an event over the size limit exits 1 not 2) {
  // Exit 2 would be a blocking error to Claude Code.
  auto r = w.run({"hook", "claude-code"}, std::string((64 << 20) + 10, ' '));
  CAF_CHECK_EQUAL(r.code, 1);
  CAF_CHECK(r.err.find("larger than") != std::string::npos);
}

CAF_TEST(a wait of up to 2 to the 53 minus 1 is taken) {
  auto r = w.run({"acquire", "--session", "s", "--holder", "long", "--timeout",
                  "9007199254740991"});
  CAF_CHECK_EQUAL(r.code, 0);
  auto over = w.run({"acquire", "--session", "s", "--holder", "longer",
                     "--timeout", "9007199254740992"});
  CAF_CHECK_EQUAL(over.code, 2);
}

CAF_TEST(session end releases everything the session holds and awaits) {
  CAF_REQUIRE(admitted(w.hook(pre("toolu_e1"))));
  CAF_CHECK(admitted(w.hook(post_launched("toolu_e1", "ae1"))));
  auto waiting = w.start({"hook", "claude-code"}, pre("toolu_e2").dump());
  CAF_REQUIRE(eventually(
    [&] {
      return has(w.queued(), "toolu_e2");
    },
    20s));
  auto end = base("SessionEnd");
  end["reason"] = "other";
  CAF_CHECK(admitted(w.hook(end)));
  CAF_CHECK(w.running().empty());
  CAF_CHECK(w.queued().empty());
  CAF_CHECK_EQUAL(waiting->finish(), 0);
  CAF_CHECK(!denial(waiting->out).empty());
}

CAF_TEST(a workflow subagent waits at its start for a permit) {
  CAF_REQUIRE(admitted(w.hook(pre("toolu_w0", false))));
  auto start = base("SubagentStart");
  start["agent_id"] = "wf01";
  start["agent_type"] = "workflow-subagent";
  auto waiting = w.start({"hook", "claude-code"}, start.dump());
  CAF_REQUIRE(eventually(
    [&] {
      return has(w.queued(), "workflow:wf01");
    },
    20s));
  CAF_CHECK(admitted(w.hook(post_completed("toolu_w0", "a0"))));
  CAF_CHECK_EQUAL(waiting->finish(), 0);
  CAF_CHECK(has(w.running(), "workflow:wf01"));
  auto stop = agent_event("SubagentStop", "wf01");
  stop["agent_type"] = "workflow-subagent";
  CAF_CHECK(admitted(w.hook(stop)));
  CAF_CHECK(w.running().empty());
}

CAF_TEST(a held permit keeps an idle server up) {
  w.set_config(
    R"({"pool": {"maxParallel": 1}, "server": {"idleExitMs": 200}})");
  CAF_REQUIRE(admitted(w.hook(pre("toolu_k1", false))));
  auto pid = w.server_pid();
  CAF_REQUIRE(pid > 0);
  // Well past idleExitMs, with no connection open, the server stays.
  std::this_thread::sleep_for(1500ms);
  CAF_CHECK(user_world::alive(pid));
  CAF_CHECK(has(w.running(), "toolu_k1"));
  CAF_CHECK(admitted(w.hook(post_completed("toolu_k1", "a1"))));
  CAF_CHECK(eventually(
    [&] {
      return !user_world::alive(pid);
    },
    20s));
}

CAF_TEST(a nested call of a foreground subagent borrows its permit) {
  // The pool of one is taken by the outer subagent, and a root call waits.
  CAF_REQUIRE(admitted(w.hook(pre("toolu_outer", false))));
  CAF_REQUIRE(admitted(w.hook(agent_start("ae34d611"))));
  auto root
    = w.start({"hook", "claude-code"}, pre("toolu_root2", false).dump());
  CAF_REQUIRE(eventually(
    [&] {
      return has(w.queued(), "toolu_root2");
    },
    20s));
  // The subagent calls a subagent of its own and waits for it: admitted on
  // the subagent's permit, at once, while the root call still waits.
  auto r = w.hook(inside(pre("toolu_inner", false), "ae34d611"));
  CAF_REQUIRE(admitted(r));
  CAF_CHECK_EQUAL(lent_of(w, "toolu_inner"), true);
  CAF_CHECK_EQUAL(lent_of(w, "toolu_outer"), false);
  CAF_CHECK(has(w.queued(), "toolu_root2"));
  // Its own agent starts, runs and returns.
  CAF_CHECK(admitted(w.hook(agent_start("a1nner00"))));
  CAF_CHECK(admitted(w.hook(agent_event("SubagentStop", "a1nner00"))));
  CAF_CHECK(admitted(
    w.hook(inside(post_completed("toolu_inner", "a1nner00"), "ae34d611"))));
  CAF_CHECK_EQUAL(w.running(), std::vector<std::string>{"toolu_outer"});
  CAF_CHECK(!root->ended());
  // The outer subagent returns: only now the waiting root call goes on.
  CAF_CHECK(admitted(w.hook(agent_event("SubagentStop", "ae34d611"))));
  CAF_CHECK(admitted(w.hook(post_completed("toolu_outer", "ae34d611"))));
  CAF_REQUIRE_EQUAL(root->finish(), 0);
  CAF_CHECK_EQUAL(root->out, "");
  CAF_CHECK_EQUAL(w.running(), std::vector<std::string>{"toolu_root2"});
  CAF_CHECK(admitted(w.hook(post_completed("toolu_root2", "a2"))));
  CAF_CHECK(w.running().empty());
  CAF_CHECK(w.queued().empty());
}

CAF_TEST(a nested call of a background subagent borrows its bound permit) {
  CAF_REQUIRE(admitted(w.hook(pre("toolu_bg"))));
  // Launch and start race in Claude Code; here the start comes first.
  CAF_CHECK(admitted(w.hook(agent_start("a3fd0e2b"))));
  CAF_CHECK(admitted(w.hook(post_launched("toolu_bg", "a3fd0e2b"))));
  // A foreground call of the agent: it waits, so it borrows.
  CAF_REQUIRE(admitted(w.hook(inside(pre("toolu_n1", false), "a3fd0e2b"))));
  CAF_CHECK_EQUAL(lent_of(w, "toolu_n1"), true);
  // A second one at once cannot run in the same permit: denied, never
  // waiting, with the reason for the model.
  auto second = w.hook(inside(pre("toolu_n2", false), "a3fd0e2b"));
  CAF_CHECK_EQUAL(second.code, 0);
  CAF_CHECK(denial(second.out).find("already lends its permit")
            != std::string::npos);
  // A background call of the agent runs beside it: denied too.
  auto beside = w.hook(inside(pre("toolu_n3"), "a3fd0e2b"));
  CAF_CHECK(denial(beside.out).find("background call cannot borrow")
            != std::string::npos);
  CAF_CHECK(w.queued().empty());
  // The nested call returns, then the agent stops: nothing is held.
  CAF_CHECK(
    admitted(w.hook(inside(post_completed("toolu_n1", "a9"), "a3fd0e2b"))));
  CAF_CHECK_EQUAL(w.running(), std::vector<std::string>{"toolu_bg"});
  CAF_CHECK(admitted(w.hook(agent_event("SubagentStop", "a3fd0e2b"))));
  CAF_CHECK(w.running().empty());
  // The permit is free again: a new call takes it at once.
  CAF_CHECK(admitted(w.hook(pre("toolu_next", false))));
  CAF_CHECK(admitted(w.hook(post_completed("toolu_next", "a10"))));
  CAF_CHECK(w.running().empty());
}

CAF_TEST(a background agent that starts before or after its bind ties right) {
  w.set_config(R"({"pool": {"maxParallel": 2, "queueTimeoutMs": 60000}})");
  for (auto start_first : {true, false}) {
    auto n = std::string{start_first ? "1" : "2"};
    auto fg = "toolu_fg" + n, bg = "toolu_bg" + n;
    auto fg_agent = "af0" + n, bg_agent = "ab0" + n;
    // A foreground and a background call in one message, both admitted.
    CAF_REQUIRE(admitted(w.hook(pre(fg, false))));
    CAF_REQUIRE(admitted(w.hook(pre(bg))));
    // Claude Code reports the background agent's start and its launch in
    // either order; the foreground agent's start comes with them.
    if (start_first) {
      CAF_CHECK(admitted(w.hook(agent_start(bg_agent))));
      CAF_CHECK(admitted(w.hook(agent_start(fg_agent))));
      CAF_CHECK(admitted(w.hook(post_launched(bg, bg_agent))));
    } else {
      CAF_CHECK(admitted(w.hook(post_launched(bg, bg_agent))));
      CAF_CHECK(admitted(w.hook(agent_start(bg_agent))));
      CAF_CHECK(admitted(w.hook(agent_start(fg_agent))));
    }
    // The pool is full; each agent's foreground call borrows.
    auto nf = "toolu_nf" + n, nb = "toolu_nb" + n;
    CAF_CHECK(admitted(w.hook(inside(pre(nf, false), fg_agent))));
    CAF_CHECK(admitted(w.hook(inside(pre(nb, false), bg_agent))));
    CAF_CHECK_EQUAL(lent_of(w, nf), true);
    CAF_CHECK_EQUAL(lent_of(w, nb), true);
    CAF_CHECK(admitted(w.hook(inside(post_completed(nf, "an" + n), fg_agent))));
    CAF_CHECK(admitted(w.hook(inside(post_completed(nb, "am" + n), bg_agent))));
    // The background agent's stop releases its own permit, never the
    // foreground call's.
    CAF_CHECK(admitted(w.hook(agent_event("SubagentStop", bg_agent))));
    CAF_CHECK_EQUAL(w.running(), std::vector<std::string>{fg});
    CAF_CHECK(admitted(w.hook(agent_event("SubagentStop", fg_agent))));
    CAF_CHECK(admitted(w.hook(post_completed(fg, fg_agent))));
    CAF_CHECK(w.running().empty());
  }
}

CAF_TEST(acquire holds a permit until release from another process) {
  auto a = w.run({"acquire", "--session", "s", "--holder", "job-1"});
  CAF_REQUIRE_EQUAL(a.code, 0);
  CAF_CHECK(a.answer.contains("permit"));
  CAF_CHECK(has(w.running(), "job-1"));
  auto b = w.start({"acquire", "--session", "s", "--holder", "job-2"});
  CAF_REQUIRE(eventually(
    [&] {
      return has(w.queued(), "job-2");
    },
    20s));
  auto r = w.run({"release", "--holder", "job-1"});
  CAF_CHECK_EQUAL(r.code, 0);
  CAF_CHECK_EQUAL(r.answer["released"], true);
  CAF_REQUIRE_EQUAL(b->finish(), 0);
  CAF_CHECK(has(w.running(), "job-2"));
  auto again = w.run({"release", "--holder", "job-1"});
  CAF_CHECK_EQUAL(again.answer["released"], false);
}

CAF_TEST(acquire refused or timed out exits 1 with the protocol error) {
  CAF_REQUIRE_EQUAL(
    w.run({"acquire", "--session", "s", "--holder", "job-1"}).code, 0);
  auto dup = w.run({"acquire", "--session", "s", "--holder", "job-1"});
  CAF_CHECK_EQUAL(dup.code, 1);
  CAF_CHECK_EQUAL(dup.answer["error"]["code"], "duplicate_holder");
  auto late = w.run(
    {"acquire", "--session", "s", "--holder", "job-2", "--timeout", "300"});
  CAF_CHECK_EQUAL(late.code, 1);
  CAF_CHECK_EQUAL(late.answer["error"]["code"], "timeout");
  CAF_CHECK(eventually(
    [&] {
      return w.queued().empty();
    },
    20s));
  w.set_config(R"({"pool": {"maxParallel": 1, "queueTimeoutMs": 300}})");
  w.stop_server();
  CAF_REQUIRE_EQUAL(
    w.run({"acquire", "--session", "s", "--holder", "job-3"}).code, 0);
  auto timed_out = w.run({"acquire", "--session", "s", "--holder", "job-4"});
  CAF_CHECK_EQUAL(timed_out.code, 1);
  CAF_CHECK_EQUAL(timed_out.answer["error"]["code"], "queue_timeout");
  CAF_CHECK(timed_out.err.find("queue_timeout") != std::string::npos);
}

CAF_TEST_FIXTURE_SCOPE_END()
