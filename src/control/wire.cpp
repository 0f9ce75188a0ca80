#include "src/control/wire.hpp"

#include <array>

#include <nlohmann/json.hpp>

#include "src/protocol/fields.hpp"

namespace taskforce::control {

using json = nlohmann::json;
using namespace protocol;

namespace {

constexpr std::array<const char*, 14> names{
  "bg.prepare",   "bg.link",      "bg.start",       "bg.status",
  "bg.may_write", "bg.complete",  "bg.continue",    "bg.cancel",
  "bg.reconcile", "monitor.run",  "monitor.status", "monitor.read",
  "monitor.wait", "monitor.kill",
};

} // namespace

const char* to_string(control_op op) {
  return names[static_cast<size_t>(op)];
}

std::optional<control_op> control_op_named(std::string_view name) {
  for (size_t i = 0; i < names.size(); ++i)
    if (name == names[i])
      return static_cast<control_op>(i);
  return std::nullopt;
}

const std::string& control_op_names() {
  static const std::string joined = [] {
    std::string out;
    for (auto* name : names)
      out += (out.empty() ? "" : ", ") + std::string{name};
    return out;
  }();
  return joined;
}

control_request decode_request(control_op op, const json& req) {
  control_request x;
  x.op = op;
  switch (op) {
    case control_op::bg_prepare:
      x.title = need_string(req, "title");
      x.agent = need_string(req, "agent");
      x.prompt = need_string(req, "prompt");
      x.session = opt_string(req, "session");
      x.roots = opt_strings(req, "roots");
      x.locks = opt_strings(req, "locks");
      x.deps = opt_strings(req, "deps");
      x.validations = opt_strings(req, "validations");
      break;
    case control_op::bg_link:
      x.token = need_string(req, "token");
      x.child_session = need_string(req, "child_session");
      break;
    case control_op::bg_start:
    case control_op::bg_status: x.task = opt_string(req, "task"); break;
    case control_op::bg_may_write:
      x.child_session = need_string(req, "child_session");
      x.path = need_string(req, "path");
      break;
    case control_op::bg_complete:
      x.task = need_string(req, "task");
      x.status = need_string(req, "status");
      if (x.status != "done" && x.status != "blocked")
        throw bad_field("field \"status\" must be \"done\" or \"blocked\", "
                        "got "
                        + quote_text(x.status));
      x.text = opt_text(req, "result");
      x.files = opt_strings(req, "files");
      break;
    case control_op::bg_continue:
      x.task = need_string(req, "task");
      x.text = opt_text(req, "text");
      break;
    case control_op::bg_cancel: x.task = need_string(req, "task"); break;
    case control_op::bg_reconcile: {
      auto i = req.find("sessions");
      if (i == req.end() || i->is_null())
        throw bad_field("missing field \"sessions\" (the child sessions "
                        "still alive; [] for none)");
      x.sessions = opt_strings(req, "sessions");
      break;
    }
    case control_op::monitor_run:
      x.command = need_string(req, "command");
      x.cwd = opt_string(req, "cwd");
      x.wake_pattern = opt_string(req, "wake_pattern");
      x.timeout_ms = opt_count(req, "timeout_ms", 0);
      x.session = opt_string(req, "session");
      break;
    case control_op::monitor_status:
      x.monitor = opt_string(req, "monitor");
      break;
    case control_op::monitor_read:
      x.monitor = need_string(req, "monitor");
      x.offset = opt_count(req, "offset", 0);
      x.max_bytes = opt_count(req, "max_bytes", 0);
      break;
    case control_op::monitor_wait:
      x.monitor = need_string(req, "monitor");
      x.timeout_ms = opt_count(req, "timeout_ms", 0);
      break;
    case control_op::monitor_kill:
      x.monitor = need_string(req, "monitor");
      break;
  }
  return x;
}

} // namespace taskforce::control
