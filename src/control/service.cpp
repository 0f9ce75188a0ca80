#include "src/control/service.hpp"

#include <nlohmann/json.hpp>

#include "src/run/run_setup.hpp"
#include "src/store/error.hpp"
#include "src/store/ledger.hpp"

namespace taskforce::control {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

namespace {

template<class T>
json optional_json(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

json task_json(const bg_task& t) {
  std::vector<std::string> leases = t.leased_roots;
  for (const auto& lock : t.leased_locks)
    leases.push_back("lock:" + lock);
  return json{
    {"id", t.id},
    {"title", t.title},
    {"agent", t.agent},
    {"state", to_string(t.state)},
    {"reason", optional_json(t.reason)},
    {"session", optional_json(t.session)},
    {"child_session", optional_json(t.child_session)},
    {"roots", t.roots},
    {"locks", t.locks},
    {"deps", t.deps},
    {"validations", t.validations},
    {"leases", leases},
    {"token", t.token ? json(to_string(*t.token)) : json(nullptr)},
    {"token_expires_ms", optional_json(t.token_expires_ms)},
    {"cancel_requested", t.cancel_requested},
    {"attempts", t.attempts},
    {"continuation", optional_json(t.continuation)},
    {"result", optional_json(t.result)},
    {"files", t.files},
    {"output_tail", optional_json(t.output_tail)},
    {"prompt", t.prompt},
    {"created_ms", t.created_ms},
    {"updated_ms", t.updated_ms},
  };
}

json dispatch_json(const std::optional<dispatch>& d) {
  if (!d)
    return nullptr;
  return json{
    {"task", d->task_id},         {"token", d->token},
    {"kind", to_string(d->kind)}, {"expires_ms", d->expires_ms},
    {"title", d->title},          {"agent", d->agent},
    {"prompt", d->prompt},
  };
}

json validation_json(const validation_result& r) {
  return json{
    {"command", r.command},
    {"status", to_string(r.status)},
    {"exit_code", r.exit_code},
    {"duration_ms", r.duration_ms},
    {"description", r.description},
    {"output", r.output},
    {"output_truncated", r.output_truncated},
    {"log_file", r.log_file},
  };
}

service_reply refusal(const std::string& code, const std::string& message) {
  service_reply r;
  r.ok = false;
  r.code = code;
  r.message = message;
  return r;
}

service_reply answer(const json& fields, std::vector<bg_change> changes) {
  service_reply r;
  r.fields = fields.dump(-1, ' ', false, json::error_handler_t::replace);
  r.changes = std::move(changes);
  return r;
}

} // namespace

validation_outcome outcome_of(const validation_report& report) {
  validation_outcome outcome;
  outcome.passed = report.passed();
  outcome.reason = report.reason();
  outcome.tail = report.tail();
  return outcome;
}

std::string validation_results_json(const validation_report& report) {
  json results = json::array();
  for (const auto& r : report.results)
    results.push_back(validation_json(r));
  return results.dump(-1, ' ', false, json::error_handler_t::replace);
}

struct bg_service::impl {
  fs::path top;
  control_config cfg;
  store::ledger db;
  bg_store bg;

  impl(const fs::path& repo_top, const control_config& config)
    : top(repo_top), cfg(config),
      db(store::ledger::open(run::state_dir(repo_top)
                             / store::ledger_file_name)),
      bg(db, repo_top) {}

  bg_limits limits() const {
    bg_limits l;
    l.max_concurrent = cfg.max_concurrent;
    l.enforce_write_roots = cfg.enforce_write_roots;
    return l;
  }

  validation_options validation_setup(const std::string& task_id) const {
    validation_options o;
    o.repository = top;
    o.task_id = task_id;
    o.timeout = std::chrono::milliseconds{cfg.validation_timeout_ms};
    o.max_output_bytes = static_cast<size_t>(cfg.max_output_bytes);
    return o;
  }

  service_reply handle(const control_request& req, int64_t now) {
    switch (req.op) {
      case control_op::bg_prepare: {
        bg_contract c;
        c.title = req.title;
        c.agent = req.agent;
        c.prompt = req.prompt;
        if (!req.session.empty())
          c.session = req.session;
        c.roots = req.roots;
        c.locks = req.locks;
        c.deps = req.deps;
        c.validations = req.validations;
        auto r = bg.prepare(c, limits(), now);
        return answer({{"task", task_json(r.task)},
                       {"dispatch", dispatch_json(r.dispatch)}},
                      std::move(r.changes));
      }
      case control_op::bg_link: {
        auto r = bg.link(req.token, req.child_session, now);
        return answer(
          {{"task", task_json(r.task)}, {"abort_child", r.abort_child}},
          std::move(r.changes));
      }
      case control_op::bg_start: {
        std::optional<std::string> id;
        if (!req.task.empty())
          id = req.task;
        auto r = bg.start(id, limits(), now);
        json fields{{"task", r.task ? task_json(*r.task) : json(nullptr)},
                    {"dispatch", dispatch_json(r.dispatch)}};
        if (!r.reason.empty())
          fields["reason"] = r.reason;
        return answer(fields, std::move(r.changes));
      }
      case control_op::bg_status: {
        std::optional<std::string> id;
        if (!req.task.empty())
          id = req.task;
        json tasks = json::array();
        for (const auto& t : bg.status(id))
          tasks.push_back(task_json(t));
        json leases = json::array();
        for (const auto& l : bg.leases())
          leases.push_back({{"holder", l.holder},
                            {"kind", to_string(l.kind)},
                            {"name", l.name}});
        return answer({{"tasks", tasks}, {"leases", leases}}, {});
      }
      case control_op::bg_may_write: {
        auto v
          = bg.may_write(req.child_session, req.path, cfg.enforce_write_roots);
        return answer(
          {{"allowed", v.allowed},
           {"task", optional_json(v.task_id)},
           {"state", v.state ? json(to_string(*v.state)) : json(nullptr)},
           {"path", v.path},
           {"reason", v.reason}},
          {});
      }
      case control_op::bg_complete: {
        completion_claim claim;
        claim.task_id = req.task;
        claim.status = req.status == "blocked" ? completion_status::blocked
                                               : completion_status::done;
        claim.result = req.text;
        claim.files = req.files;
        auto check = bg.begin_completion(claim, limits(), now);
        if (check.accepted && !check.validations.empty()) {
          service_reply r;
          r.changes = std::move(check.changes);
          r.validate = pending_validation{req.task, check.validations,
                                          validation_setup(req.task)};
          return r;
        }
        return answer({{"accepted", check.accepted},
                       {"reason", check.reason},
                       {"outside", check.outside},
                       {"unclaimed", check.unclaimed},
                       {"unchanged", check.unchanged},
                       {"validations", json::array()},
                       {"task", task_json(check.task)}},
                      std::move(check.changes));
      }
      case control_op::bg_continue: {
        auto r = bg.continue_task(req.task, req.text, limits(), now);
        return answer({{"task", task_json(r.task)},
                       {"dispatch", dispatch_json(r.dispatch)}},
                      std::move(r.changes));
      }
      case control_op::bg_cancel: {
        auto r = bg.cancel(req.task, now);
        return answer({{"task", task_json(r.task)},
                       {"released", r.released},
                       {"abort_child", optional_json(r.abort_child)},
                       {"message", r.message}},
                      std::move(r.changes));
      }
      case control_op::bg_reconcile: {
        auto changes = bg.reconcile(req.sessions, now);
        json interrupted = json::array();
        for (const auto& c : changes)
          if (c.to == bg_state::interrupted)
            interrupted.push_back(c.task_id);
        return answer({{"interrupted", interrupted}}, std::move(changes));
      }
      default:
        return refusal("bad_request", std::string{to_string(req.op)}
                                        + " is not a bg operation");
    }
  }
};

bg_service::bg_service(const fs::path& repo_top, const control_config& cfg)
  : impl_(std::make_unique<impl>(repo_top, cfg)) {}

bg_service::~bg_service() = default;

service_reply bg_service::handle(const control_request& req, int64_t now_ms) {
  try {
    return impl_->handle(req, now_ms);
  } catch (const control_error& e) {
    return refusal(to_string(e.code()), e.what());
  } catch (const store::ledger_error& e) {
    return refusal("unavailable",
                   std::string{"the ledger failed: "} + e.what());
  }
}

service_reply bg_service::finish(const pending_validation& pending,
                                 const validation_outcome& outcome,
                                 const std::string& results_json,
                                 int64_t now_ms) {
  try {
    auto r = impl_->bg.finish_completion(pending.task_id, outcome, now_ms);
    return answer({{"accepted", outcome.passed},
                   {"reason", outcome.reason},
                   {"outside", json::array()},
                   {"unclaimed", json::array()},
                   {"unchanged", json::array()},
                   {"validations", json::parse(results_json)},
                   {"task", task_json(r.task)}},
                  std::move(r.changes));
  } catch (const control_error& e) {
    return refusal(to_string(e.code()), e.what());
  } catch (const store::ledger_error& e) {
    return refusal("unavailable",
                   std::string{"the ledger failed: "} + e.what());
  }
}

std::vector<bg_change> bg_service::end_session(const std::string& session,
                                               int64_t now_ms) {
  return impl_->bg.end_session(session, now_ms);
}

std::vector<bg_change> bg_service::expire(int64_t now_ms) {
  return impl_->bg.expire(now_ms);
}

std::vector<bg_change> bg_service::recover(int64_t now_ms) {
  return impl_->bg.recover(now_ms);
}

std::string bg_service::event_fields(const bg_change& change) {
  json fields{
    {"kind", change.kind},
    {"from", change.from ? json(to_string(*change.from)) : json(nullptr)},
    {"to", to_string(change.to)},
    {"task", task_json(change.task)}};
  return fields.dump(-1, ' ', false, json::error_handler_t::replace);
}

} // namespace taskforce::control
