// A custom parser's output: `{"tasks":[...],"errors":[...]}` in the plan
// JSON's task shape, checked as strictly as a file the built-in readers see.
#include <nlohmann/json.hpp>

#include "src/taskfile/raw_task.hpp"

namespace taskforce::taskfile {

namespace {

using nlohmann::json;

const std::vector<std::string>& task_keys() {
  static const std::vector<std::string> keys{
    "id",    "index", "line",       "title",  "done",        "deps",
    "files", "locks", "priority",   "verify", "run",         "agent",
    "model", "risk",  "timeout_ms", "held",   "hold_reason", "body"};
  return keys;
}

} // namespace

std::vector<raw_task> read_parser_output(std::string_view json_text,
                                         std::vector<parse_error>& errors) {
  std::vector<raw_task> tasks;
  json doc;
  try {
    doc = json::parse(json_text.begin(), json_text.end());
  } catch (const json::exception& e) {
    errors.push_back({0, std::string{"the parser command printed invalid "
                                     "JSON: "}
                           + e.what()});
    return tasks;
  }
  if (!doc.is_object() || !doc.contains("tasks") || !doc["tasks"].is_array()) {
    errors.push_back({0, "the parser command must print an object with a "
                         "\"tasks\" array (and an \"errors\" array)"});
    return tasks;
  }
  if (doc.contains("errors")) {
    const auto& reported = doc["errors"];
    if (!reported.is_array()) {
      errors.push_back({0, "the parser command's \"errors\" is not an array"});
    } else {
      for (const auto& e : reported) {
        if (e.is_object() && e.contains("message") && e["message"].is_string()
            && (!e.contains("line") || e["line"].is_number_unsigned()))
          errors.push_back(
            {e.value("line", size_t{0}), e["message"].get<std::string>()});
        else
          errors.push_back({0, "the parser command reported a malformed "
                               "error (want {\"line\": N, \"message\": "
                               "\"...\"}): "
                                 + e.dump()});
      }
    }
  }
  size_t position = 0;
  for (const auto& item : doc["tasks"]) {
    ++position;
    std::string where = "task " + std::to_string(position) + ": ";
    if (!item.is_object()) {
      errors.push_back({0, where + "is not an object"});
      continue;
    }
    raw_task task;
    task.default_id = "t" + std::to_string(position);
    if (item.contains("line")) {
      if (item["line"].is_number_unsigned())
        task.line = item["line"].get<size_t>();
      else if (!item["line"].is_null())
        errors.push_back({0, where + "\"line\" must be a positive integer"});
    }
    auto fail = [&](const std::string& message) {
      errors.push_back({task.line, where + message});
    };
    for (const auto& [key, value] : item.items()) {
      const auto& keys = task_keys();
      if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
        auto suggestion = near_miss(key, keys);
        fail("unknown field \"" + key + "\""
             + (suggestion.empty() ? ""
                                   : "; did you mean \"" + suggestion + "\"?"));
        continue;
      }
      if (key == "line" || key == "index")
        continue; // recomputed from the position
      if (key == "title" || key == "body" || key == "hold_reason") {
        if (!value.is_string() && !(key != "title" && value.is_null())) {
          fail("\"" + key + "\" must be a string");
          continue;
        }
        if (key == "title")
          task.title = value.get<std::string>();
        else if (key == "body")
          task.body = value.get<std::string>();
        else if (value.is_string())
          task.hold_reason = value.get<std::string>();
        continue;
      }
      if (key == "done" || key == "held") {
        if (!value.is_boolean()) {
          fail("\"" + key + "\" must be true or false");
          continue;
        }
        (key == "done" ? task.done : task.held) = value.get<bool>();
        continue;
      }
      raw_field field;
      field.line = task.line;
      if (key == "deps" || key == "files" || key == "locks") {
        if (!value.is_array()) {
          fail("\"" + key + "\" must be an array");
          continue;
        }
        bool ok = true;
        for (const auto& element : value) {
          if (element.is_string())
            field.items.push_back(element.get<std::string>());
          else if (key == "deps" && element.is_number_unsigned())
            field.items.push_back(std::to_string(element.get<uint64_t>()));
          else
            ok = false;
        }
        if (!ok) {
          fail("\"" + key + "\" must hold only strings");
          continue;
        }
        field.is_list = true;
      } else if (key == "priority") {
        if (!value.is_number_integer()) {
          fail("\"priority\" must be an integer");
          continue;
        }
        field.text = std::to_string(value.get<int64_t>());
      } else if (key == "timeout_ms") {
        if (value.is_null())
          continue;
        if (!value.is_number_unsigned() || value.get<uint64_t>() == 0) {
          fail("\"timeout_ms\" must be a positive integer or null");
          continue;
        }
        field.text = std::to_string(value.get<uint64_t>());
      } else {
        // id, verify, run, agent, model, risk: a string or null.
        if (value.is_null())
          continue;
        if (!value.is_string()) {
          fail("\"" + key + "\" must be a string or null");
          continue;
        }
        field.text = value.get<std::string>();
        if (key == "verify" && field.text.empty())
          continue;
      }
      task.fields.emplace(key == "timeout_ms" ? "timeout" : key,
                          std::move(field));
    }
    if (!item.contains("title") || !item["title"].is_string())
      fail("\"title\" (a string) is required");
    tasks.push_back(std::move(task));
  }
  return tasks;
}

} // namespace taskforce::taskfile
