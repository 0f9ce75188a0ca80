#include "src/taskfile/task_json.hpp"

#include <nlohmann/json.hpp>

namespace taskforce::taskfile {

namespace {

template<class T>
nlohmann::ordered_json or_null(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value)
               : nlohmann::ordered_json(nullptr);
}

} // namespace

nlohmann::ordered_json task_to_json(const task_spec& task) {
  // Ordered, so the fields read in the documented order.
  nlohmann::ordered_json object;
  object["id"] = task.id;
  object["index"] = task.index;
  object["line"] = task.line;
  object["title"] = task.title;
  object["done"] = task.done;
  object["deps"] = task.deps;
  object["files"] = task.files;
  object["locks"] = task.locks;
  object["priority"] = task.priority;
  object["verify"] = or_null(task.verify);
  object["run"] = or_null(task.run);
  object["agent"] = or_null(task.agent);
  object["model"] = or_null(task.model);
  object["risk"] = or_null(task.risk);
  object["timeout_ms"] = or_null(task.timeout_ms);
  object["held"] = task.held;
  object["hold_reason"] = or_null(task.hold_reason);
  return object;
}

} // namespace taskforce::taskfile
