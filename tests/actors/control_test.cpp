// The mailbox actor over a real ledger (each mail handed out exactly once,
// durable before it is acknowledged) and the control actor's routing: the
// token, the run, approve to the orchestrator, send only to a working task
// and then through the mailbox. On the deterministic scheduler.
#define CAF_SUITE actors.control
#define FAIL(m) CAF_FAIL(m)
#include <caf/test/dsl.hpp>

#include "actors/control.hpp"
#include "actors/mailbox.hpp"
#include "actors/run_fakes.hpp"
#include "src/run/control_wire.hpp"
#include "src/store/ledger.hpp"
#include "src/store/mailbox.hpp"
#include "test.hpp"

using namespace taskforce;
using namespace taskforce::test;

namespace {

store::new_run sample_run() {
  store::new_run r;
  r.id = "r1";
  r.file = "TASKS.md";
  r.file_hash = store::content_hash("- [ ] a\n");
  r.base_branch = "main";
  for (auto name : {"a", "b"})
    r.tasks.push_back(store::new_task{name,
                                      static_cast<int>(r.tasks.size() + 1),
                                      name, task_state::pending, std::nullopt});
  return r;
}

/// An orchestrator played by the test: the run's tasks as `views` says,
/// and every approve it accepts recorded in `approved`.
struct orchestrator_book {
  std::vector<task_view> views;
  std::vector<std::string> approved;
  /// "task:text" of every answer it got.
  std::vector<std::string> answered;
};

caf::behavior fake_orchestrator(caf::event_based_actor*,
                                std::shared_ptr<orchestrator_book> book) {
  return {
    [book](approve_atom, std::string& task) -> caf::result<steer_reply> {
      for (auto& v : book->views)
        if (v.id == task) {
          if (v.state != task_state::review)
            return caf::make_error(run_errc::wrong_state,
                                   "task " + task + " is "
                                     + to_string(v.state));
          book->approved.push_back(task);
          v.state = task_state::merging;
          return steer_reply{{v}};
        }
      return caf::make_error(run_errc::unknown_task, "no task " + task);
    },
    [book](caf::get_atom) {
      return steer_reply{book->views};
    },
    [book](answer_atom, std::string& task,
           std::string& text) -> caf::result<steer_reply> {
      book->answered.push_back(task + ":" + text);
      return steer_reply{{task_view{task, task_state::ready, ""}}};
    },
  };
}

struct fixture : test_coordinator_fixture<run_test_config> {
  temp_dir dir;
  std::filesystem::path file = dir.path() / "ledger.sqlite";
  std::shared_ptr<orchestrator_book> book
    = std::make_shared<orchestrator_book>();
  mailbox_actor mail;
  control_actor control;

  fixture() {
    store::ledger::open(file).create_run(sample_run(), 1000);
    mail = spawn_mailbox(sys, file, false);
    control_setup cs;
    cs.run_id = "r1";
    cs.token = "secret";
    cs.orchestrator
      = caf::actor_cast<orchestrator_actor>(sys.spawn(fake_orchestrator, book));
    cs.mailbox = mail;
    control = spawn_control(sys, cs);
    run();
  }

  /// The verdict of `req` carrying `token`.
  std::pair<run::control_answer, std::string>
  ask(run::steer_request req, std::string token = "secret") {
    auto line = run::encode_request({token, req});
    line.pop_back();
    self->send(control, steer_atom::value, line);
    run();
    std::string reply;
    self->receive([&](std::string& r) {
      reply = r;
    });
    auto v = run::decode_verdict(reply);
    CAF_REQUIRE(v);
    return *v;
  }

  run::steer_request request(run::steer_verb verb, std::string task,
                             std::string text = {}) {
    run::steer_request r;
    r.verb = verb;
    r.task = std::move(task);
    r.text = std::move(text);
    return r;
  }

  std::vector<store::mail_row> stored() {
    auto db = store::ledger::open(file);
    return store::mailbox{db}.list("r1");
  }
};

using strings = std::vector<std::string>;

} // namespace

CAF_TEST_FIXTURE_SCOPE(control_tests, fixture)

CAF_TEST(the mailbox hands each mail out exactly once) {
  self->send(mail, post_atom::value, std::string{"r1"}, std::string{"a"},
             turn_kind::message, std::string{"look at the cache"});
  self->send(mail, post_atom::value, std::string{"r1"}, std::string{"a"},
             turn_kind::answer, std::string{"use plan B"});
  run();
  int64_t first = 0, second = 0;
  self->receive([&](int64_t id) {
    first = id;
  });
  self->receive([&](int64_t id) {
    second = id;
  });
  CAF_CHECK_LESS(first, second);
  // Durable before acknowledged: another connection sees both.
  CAF_CHECK_EQUAL(stored().size(), 2u);
  self->send(mail, take_atom::value, std::string{"r1"}, std::string{"a"});
  run();
  self->receive([&](strings& answers, strings& messages) {
    CAF_CHECK_EQUAL(answers, strings{"use plan B"});
    CAF_CHECK_EQUAL(messages, strings{"look at the cache"});
  });
  self->send(mail, take_atom::value, std::string{"r1"}, std::string{"a"});
  run();
  self->receive([&](strings& answers, strings& messages) {
    CAF_CHECK(answers.empty());
    CAF_CHECK(messages.empty());
  });
  // Another task's mail is its own.
  self->send(mail, take_atom::value, std::string{"r1"}, std::string{"b"});
  run();
  self->receive([&](strings& answers, strings& messages) {
    CAF_CHECK(answers.empty() && messages.empty());
  });
}

CAF_TEST(mail to a task the run does not have is refused) {
  self->send(mail, post_atom::value, std::string{"r1"}, std::string{"zz"},
             turn_kind::message, std::string{"hello"});
  run();
  bool refused = false;
  self->receive([](int64_t) {},
                [&](caf::error& err) {
                  refused = err.code()
                            == static_cast<uint8_t>(run_errc::unknown_task);
                });
  CAF_CHECK(refused);
  CAF_CHECK(stored().empty());
}

CAF_TEST(a wrong token or another run is not this driver) {
  book->views = {{"a", task_state::review, ""}};
  auto v = ask(request(run::steer_verb::approve, "a"), "guess");
  CAF_CHECK(v.first == run::control_answer::unauthorized);
  auto other = request(run::steer_verb::approve, "a");
  other.run_id = "r2";
  CAF_CHECK(ask(other).first == run::control_answer::elsewhere);
  // Nothing reached the orchestrator.
  CAF_CHECK(book->approved.empty());
  auto bad = std::string{"{\"token\": \"secret\", \"verb\": [1,2]}"};
  self->send(control, steer_atom::value, bad);
  run();
  self->receive([&](std::string& r) {
    auto d = run::decode_verdict(r);
    CAF_REQUIRE(d);
    CAF_CHECK(d->first == run::control_answer::failed);
  });
}

CAF_TEST(approve goes to the orchestrator and its refusal names the state) {
  book->views = {{"a", task_state::review, ""}, {"b", task_state::running, ""}};
  auto v = ask(request(run::steer_verb::approve, "a"));
  CAF_CHECK(v.first == run::control_answer::accepted);
  CAF_CHECK_EQUAL(book->approved, strings{"a"});
  CAF_CHECK_NOT_EQUAL(v.second.find("merging"), std::string::npos);
  auto again = ask(request(run::steer_verb::approve, "b"));
  CAF_CHECK(again.first == run::control_answer::refused);
  CAF_CHECK_NOT_EQUAL(again.second.find("running"), std::string::npos);
  auto unknown = ask(request(run::steer_verb::approve, "zz"));
  CAF_CHECK(unknown.first == run::control_answer::refused);
}

CAF_TEST(send reaches only a working task and is stored before it is accepted) {
  book->views = {{"a", task_state::review, ""}, {"b", task_state::running, ""}};
  auto refused = ask(request(run::steer_verb::send, "a", "hi"));
  CAF_CHECK(refused.first == run::control_answer::refused);
  CAF_CHECK_NOT_EQUAL(refused.second.find("review"), std::string::npos);
  CAF_CHECK(stored().empty());
  auto sent = ask(request(run::steer_verb::send, "b", "hi b"));
  CAF_CHECK(sent.first == run::control_answer::accepted);
  auto rows = stored();
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK_EQUAL(rows[0].task_id.value_or(""), "b");
  CAF_CHECK_EQUAL(rows[0].text, "hi b");
}

CAF_TEST(broadcast reaches every working task and needs one) {
  book->views
    = {{"a", task_state::verifying, ""}, {"b", task_state::running, ""}};
  auto v = ask(request(run::steer_verb::broadcast, "", "all hands"));
  CAF_CHECK(v.first == run::control_answer::accepted);
  CAF_CHECK_EQUAL(stored().size(), 2u);
  book->views = {{"a", task_state::done, ""}, {"b", task_state::review, ""}};
  auto none = ask(request(run::steer_verb::broadcast, "", "anyone?"));
  CAF_CHECK(none.first == run::control_answer::refused);
  CAF_CHECK_EQUAL(stored().size(), 2u);
}

CAF_TEST(an answer is stored for the task before the task leaves blocked) {
  book->views
    = {{"a", task_state::blocked, ""}, {"b", task_state::running, ""}};
  auto refused = ask(request(run::steer_verb::answer, "b", "no"));
  CAF_CHECK(refused.first == run::control_answer::refused);
  CAF_CHECK_NOT_EQUAL(refused.second.find("running"), std::string::npos);
  CAF_CHECK(stored().empty());
  CAF_CHECK(book->answered.empty());
  auto v = ask(request(run::steer_verb::answer, "a", "use plan B"));
  CAF_CHECK(v.first == run::control_answer::accepted);
  auto rows = stored();
  CAF_REQUIRE_EQUAL(rows.size(), 1u);
  CAF_CHECK(rows[0].kind == store::mail_kind::answer);
  CAF_CHECK_EQUAL(rows[0].text, "use plan B");
  // The orchestrator moves the task; the text travels by the mailbox only.
  CAF_CHECK_EQUAL(book->answered, strings{"a:"});
}

CAF_TEST_FIXTURE_SCOPE_END()
