#include "src/run/steer_paused.hpp"

#include <variant>

#include "src/store/mailbox.hpp"
#include "src/text/join.hpp"

namespace taskforce::run {

namespace {

steer_verdict refused(std::string why) {
  return {steer_outcome::refused, std::move(why), false};
}

steer_verdict accepted(std::string what) {
  return {steer_outcome::accepted, std::move(what), false};
}

/// Writes the task changes of `d` (its run change is the driver's business:
/// the run stays paused until `resume`). `lifted`: the task whose hold a
/// person lifted. Returns why a change was refused, or "".
std::string record(const scheduler& sched, store::ledger& db,
                   const std::string& run_id, const decision& d,
                   std::optional<size_t> lifted = std::nullopt) {
  std::vector<store::task_change_request> reqs;
  for (auto& c : d.changes) {
    store::task_change ch;
    ch.to = c.to;
    ch.expect = c.from;
    if (!c.reason.empty())
      ch.reason = c.reason;
    if (lifted && c.task == *lifted && c.event == task_event::release)
      ch.fields.hold_lifted = true;
    ch.data_json = R"({"by":"a person, while no process drove the run"})";
    reqs.push_back({run_id, sched.graph().task(c.task).id, std::move(ch)});
  }
  if (reqs.empty())
    return {};
  auto outcomes = db.transition_batch(reqs, store::wall_clock_ms());
  for (auto& o : outcomes)
    if (auto* e = std::get_if<store::ledger_error>(&o))
      return e->what();
  return {};
}

std::optional<size_t> find_task(const scheduler& sched,
                                const std::string& run_id,
                                const std::string& id, steer_verdict& out) {
  auto i = sched.find(id);
  if (!i)
    out = refused("run " + run_id + " has no task " + id);
  return i;
}

} // namespace

bool will_run_again(task_state x) {
  switch (x) {
    case task_state::done:
    case task_state::skipped:
    case task_state::merging:
    case task_state::review:
    case task_state::conflict: return false;
    default: return true;
  }
}

steer_verdict steer_paused(scheduler& sched, store::ledger& db,
                           const std::string& run_id,
                           const steer_request& request,
                           std::vector<task_spec> added,
                           const std::string& added_file) {
  steer_verdict out;
  const auto& id = request.task;
  auto failed = [&](const std::string& why) {
    return steer_verdict{steer_outcome::failed,
                         "the ledger refused the change: " + why, false};
  };
  auto mail = [&](const std::string& task, store::mail_kind kind) {
    store::new_mail m;
    m.run_id = run_id;
    m.task_id = task;
    m.kind = kind;
    m.text = request.text;
    store::mailbox{db}.post(m, store::wall_clock_ms());
  };
  try {
    switch (request.verb) {
      case steer_verb::approve: {
        auto i = find_task(sched, run_id, id, out);
        if (!i)
          return out;
        bool held = sched.state(*i) == task_state::held;
        auto r = sched.approve(*i);
        if (!r.ok)
          return refused(r.error);
        if (auto why = record(sched, db, run_id, r.changes, *i); !why.empty())
          return failed(why);
        return accepted(
          held ? id
                   + ": the hold is lifted; it starts when the run resumes "
                     "(taskforce resume)"
               : id
                   + " approved: it is merged when the run resumes "
                     "(taskforce resume)");
      }
      case steer_verb::reject: {
        auto i = find_task(sched, run_id, id, out);
        if (!i)
          return out;
        auto r = sched.reject(*i, request.text);
        if (!r.ok)
          return refused(r.error);
        if (auto why = record(sched, db, run_id, r.changes); !why.empty())
          return failed(why);
        return accepted(id + " rejected: blocked (" + request.text
                        + "); its worktree and branch are kept");
      }
      case steer_verb::answer: {
        auto i = find_task(sched, run_id, id, out);
        if (!i)
          return out;
        auto r = sched.answer(*i);
        if (!r.ok)
          return refused(r.error);
        // The answer first: a task that runs again finds it waiting.
        mail(id, store::mail_kind::answer);
        if (auto why = record(sched, db, run_id, r.changes); !why.empty())
          return failed(why);
        return accepted("answer recorded for " + id
                        + ": it runs again with the answer when the run "
                          "resumes (taskforce resume)");
      }
      case steer_verb::send: {
        auto i = find_task(sched, run_id, id, out);
        if (!i)
          return out;
        auto s = sched.state(*i);
        if (!will_run_again(s))
          return refused("task " + id + " is " + to_string(s)
                         + "; no worker of it runs again to read a message "
                           "(send applies to a task that still works)");
        mail(id, store::mail_kind::message);
        return accepted("message for " + id
                        + " recorded: no process drives the run, so its "
                          "worker gets it when the run resumes (taskforce "
                          "resume)");
      }
      case steer_verb::broadcast: {
        std::vector<std::string> to;
        for (size_t i = 0; i < sched.size(); ++i)
          if (will_run_again(sched.state(i)))
            to.push_back(sched.graph().task(i).id);
        if (to.empty())
          return refused("no task of run " + run_id
                         + " works any more (every one is done, skipped, "
                           "merging, in review or in conflict)");
        for (auto& t : to)
          mail(t, store::mail_kind::message);
        return accepted("message recorded for " + join(to)
                        + ": no process drives the run, so each worker "
                          "gets it when the run resumes (taskforce resume)");
      }
      case steer_verb::add: {
        std::vector<std::string> ids;
        for (auto& s : added)
          ids.push_back(s.id);
        auto first = sched.size();
        auto r = sched.add(std::move(added));
        if (!r.ok)
          return refused(r.error + "; nothing was added");
        store::added_tasks a;
        a.run_id = run_id;
        a.file = added_file;
        for (size_t i = first; i < sched.size(); ++i) {
          auto& spec = sched.graph().task(i);
          store::new_task t;
          t.id = spec.id;
          t.index = static_cast<int>(i - first + 1);
          t.title = spec.title;
          t.state = sched.state(i);
          if (!sched.reason(i).empty())
            t.reason = sched.reason(i);
          else if (spec.done)
            t.reason = "checked in the task file";
          a.tasks.push_back(std::move(t));
        }
        db.add_tasks(a, store::wall_clock_ms());
        return accepted("added " + join(ids) + " from " + added_file
                        + " to run " + run_id
                        + ": they start when the run resumes (taskforce "
                          "resume)");
      }
    }
  } catch (const store::ledger_error& e) {
    if (e.code() == store::ledger_errc::duplicate)
      return refused(std::string{e.what()} + "; nothing was added");
    return failed(e.what());
  }
  return failed("unknown command");
}

} // namespace taskforce::run
