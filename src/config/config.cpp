#include "src/config/config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "src/text/edit_distance.hpp"
#include "src/text/file.hpp"

namespace taskforce {

namespace {

using json = nlohmann::json;

constexpr int64_t max_safe_integer = (int64_t{1} << 53) - 1;

/// A violated rule; the caller adds the file and the key.
struct rule_violation {
  std::string rule;
};

/// Reads a JSON number as an integer when it is a safe integer: no
/// fractional part, |x| <= 2^53-1 (`2.0` is 2). Returns false otherwise.
bool as_safe_integer(const json& value, int64_t& out) {
  if (value.is_number_unsigned()) {
    auto x = value.get<uint64_t>();
    if (x > static_cast<uint64_t>(max_safe_integer))
      return false;
    out = static_cast<int64_t>(x);
    return true;
  }
  if (value.is_number_integer()) {
    out = value.get<int64_t>();
    return out >= -max_safe_integer && out <= max_safe_integer;
  }
  if (value.is_number_float()) {
    auto x = value.get<double>();
    if (!std::isfinite(x) || std::trunc(x) != x
        || std::fabs(x) > static_cast<double>(max_safe_integer))
      return false;
    out = static_cast<int64_t>(x);
    return true;
  }
  return false;
}

using setter = std::function<void(const json&)>;

struct key_rule {
  std::string name;
  setter apply;
};

setter positive_integer(uint64_t& out) {
  return [&out](const json& value) {
    int64_t x = 0;
    if (!as_safe_integer(value, x) || x < 1)
      throw rule_violation{"a positive safe integer (1 ... 2^53-1)"};
    out = static_cast<uint64_t>(x);
  };
}

setter positive_integer(int64_t& out) {
  return [&out](const json& value) {
    int64_t x = 0;
    if (!as_safe_integer(value, x) || x < 1)
      throw rule_violation{"a positive safe integer (1 ... 2^53-1)"};
    out = x;
  };
}

setter non_negative_integer(int64_t& out) {
  return [&out](const json& value) {
    int64_t x = 0;
    if (!as_safe_integer(value, x) || x < 0)
      throw rule_violation{"a non-negative safe integer (0 ... 2^53-1)"};
    out = x;
  };
}

setter boolean(bool& out) {
  return [&out](const json& value) {
    if (!value.is_boolean())
      throw rule_violation{"true or false"};
    out = value.get<bool>();
  };
}

setter text(std::string& out) {
  return [&out](const json& value) {
    if (!value.is_string())
      throw rule_violation{"a string"};
    out = value.get<std::string>();
  };
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string result;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      result += i + 1 == names.size() ? " or " : ", ";
    result += '"' + names[i] + '"';
  }
  return result;
}

setter one_of(std::string& out, std::vector<std::string> allowed) {
  return [&out, allowed](const json& value) {
    if (value.is_string()) {
      for (const auto& name : allowed) {
        if (value.get<std::string>() == name) {
          out = name;
          return;
        }
      }
    }
    throw rule_violation{"one of " + quoted_list(allowed)};
  };
}

template <class Enum>
setter one_of_enum(Enum& out, std::vector<std::pair<std::string, Enum>> map) {
  return [&out, map](const json& value) {
    std::vector<std::string> names;
    for (const auto& [name, x] : map) {
      if (value.is_string() && value.get<std::string>() == name) {
        out = x;
        return;
      }
      names.push_back(name);
    }
    throw rule_violation{"one of " + quoted_list(names)};
  };
}

setter strings(std::vector<std::string>& out, bool need_one,
               bool allow_empty_items) {
  return [&out, need_one, allow_empty_items](const json& value) {
    std::string rule = need_one ? "a list of at least one non-empty string"
                                : "a list of strings";
    if (!value.is_array() || (need_one && value.empty()))
      throw rule_violation{rule};
    std::vector<std::string> result;
    for (const auto& item : value) {
      if (!item.is_string()
          || (!allow_empty_items && item.get<std::string>().empty()))
        throw rule_violation{rule};
      result.push_back(item.get<std::string>());
    }
    out = std::move(result);
  };
}

setter regexes(std::vector<std::string>& out) {
  return [&out](const json& value) {
    std::string rule = "a list of regular expressions (ECMAScript syntax)";
    if (!value.is_array())
      throw rule_violation{rule};
    std::vector<std::string> result;
    for (const auto& item : value) {
      if (!item.is_string() || item.get<std::string>().empty())
        throw rule_violation{rule};
      try {
        std::regex check(item.get<std::string>());
      } catch (const std::regex_error& e) {
        throw rule_violation{rule + "; " + item.dump() + " does not compile ("
                             + e.what() + ")"};
      }
      result.push_back(item.get<std::string>());
    }
    out = std::move(result);
  };
}

setter string_map(std::map<std::string, std::string>& out) {
  return [&out](const json& value) {
    std::string rule = "an object mapping labels to field names (strings)";
    if (!value.is_object())
      throw rule_violation{rule};
    std::map<std::string, std::string> result;
    for (const auto& [key, item] : value.items()) {
      if (!item.is_string() || key.empty())
        throw rule_violation{rule};
      result[key] = item.get<std::string>();
    }
    out = std::move(result);
  };
}

std::vector<key_rule> pool_rules(pool_config& c) {
  return {
    {"maxParallel", positive_integer(c.max_parallel)},
    {"mode", one_of_enum(c.mode, {{"session", pool_mode::session},
                                  {"global", pool_mode::global}})},
    {"queueTimeoutMs", non_negative_integer(c.queue_timeout_ms)},
    {"maxHoldMs", positive_integer(c.max_hold_ms)},
    {"nested", one_of_enum(c.nested, {{"lend", nested_policy::lend},
                                      {"fail_fast", nested_policy::fail_fast}})},
    {"subagentToolNames", strings(c.subagent_tool_names, true, false)},
    {"idleMemoryMs", non_negative_integer(c.idle_memory_ms)},
  };
}

std::vector<key_rule> run_rules(run_config& c) {
  return {
    {"taskFormat", one_of(c.task_format, {"checklist", "headings"})},
    {"sequentialDeps", boolean(c.sequential_deps)},
    {"parserCommand", text(c.parser_command)},
    {"fields", string_map(c.fields)},
    {"holdPattern", regexes(c.hold_pattern)},
    {"approvalRisks", strings(c.approval_risks, false, false)},
    {"maxConcurrency", positive_integer(c.max_concurrency)},
    {"worker", one_of(c.worker, {"shell", "agent", "scripted"})},
    {"agentPreset", text(c.agent_preset)},
    {"workerModel", text(c.worker_model)},
    {"scriptFile", text(c.script_file)},
    {"taskTimeoutMs", positive_integer(c.task_timeout_ms)},
    {"verifyTimeoutMs", positive_integer(c.verify_timeout_ms)},
    {"maxAttempts", positive_integer(c.max_attempts)},
    {"maxRepairs", positive_integer(c.max_repairs)},
    {"repairOnFailure", boolean(c.repair_on_failure)},
    {"freshWorktreeOnRetry", boolean(c.fresh_worktree_on_retry)},
    {"continueOnError", boolean(c.continue_on_error)},
    {"useWorktrees", boolean(c.use_worktrees)},
    {"requireWorktrees", boolean(c.require_worktrees)},
    {"autoMerge", boolean(c.auto_merge)},
    {"cleanupWorktrees", boolean(c.cleanup_worktrees)},
    {"enforceDiffScope", boolean(c.enforce_diff_scope)},
    {"mode", one_of(c.mode, {"integrate", "assist"})},
    {"baseBranch", text(c.base_branch)},
    {"workerInstructions", text(c.worker_instructions)},
    {"workerInstructionsFile", text(c.worker_instructions_file)},
  };
}

std::vector<key_rule> server_rules(server_config& c) {
  return {
    {"listen", text(c.listen)},
  };
}

std::vector<std::string> names_of(const std::vector<key_rule>& rules) {
  std::vector<std::string> names;
  for (const auto& rule : rules)
    names.push_back(rule.name);
  return names;
}

std::string unknown_key_message(const std::string& origin,
                                const std::string& key,
                                const std::vector<std::string>& known,
                                const std::string& prefix) {
  std::string message = origin + ": unknown key \"" + prefix + key + "\"";
  auto lower = [](std::string s) {
    for (auto& c : s)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  std::string suggestion;
  for (const auto& name : known)
    if (lower(name) == lower(key))
      suggestion = name;
  if (suggestion.empty())
    suggestion = nearest(key, known, std::max<size_t>(2, key.size() / 3));
  if (!suggestion.empty())
    message += " (did you mean \"" + prefix + suggestion + "\"?)";
  return message;
}

void apply_section(const json& section, const std::string& section_name,
                   std::vector<key_rule> rules, const std::string& origin) {
  if (!section.is_object())
    throw config_error(origin + ": \"" + section_name
                       + "\" must be an object of settings, got "
                       + section.dump());
  auto known = names_of(rules);
  for (const auto& [key, value] : section.items()) {
    auto rule = std::find_if(rules.begin(), rules.end(),
                             [&](const key_rule& r) { return r.name == key; });
    if (rule == rules.end())
      throw config_error(
        unknown_key_message(origin, key, known, section_name + "."));
    try {
      rule->apply(value);
    } catch (const rule_violation& violation) {
      throw config_error(origin + ": " + section_name + "." + key + " = "
                         + value.dump() + " is refused: must be "
                         + violation.rule);
    }
  }
}

} // namespace

const char* to_string(pool_mode x) {
  return x == pool_mode::session ? "session" : "global";
}

const char* to_string(nested_policy x) {
  return x == nested_policy::lend ? "lend" : "fail_fast";
}

config parse_config(const std::string& text, const std::string& origin) {
  json document;
  try {
    document = json::parse(text);
  } catch (const json::parse_error& e) {
    throw config_error(origin + ": not valid JSON (" + e.what() + ")");
  }
  if (!document.is_object())
    throw config_error(origin + ": the config must be a JSON object");
  config result;
  const std::vector<std::string> sections{"pool", "run", "server"};
  for (const auto& [key, value] : document.items()) {
    if (key == "$schema" || key == "//")
      continue;
    if (key == "pool")
      apply_section(value, key, pool_rules(result.pool), origin);
    else if (key == "run")
      apply_section(value, key, run_rules(result.run), origin);
    else if (key == "server")
      apply_section(value, key, server_rules(result.server), origin);
    else
      throw config_error(unknown_key_message(origin, key, sections, ""));
  }
  return result;
}

config load_config(const std::string& path) {
  auto text = read_file(path);
  if (!text)
    throw config_error(path + ": cannot read the config file");
  return parse_config(*text, path);
}

namespace {

json pool_to_json(const pool_config& c) {
  return json{
    {"maxParallel", c.max_parallel},
    {"mode", to_string(c.mode)},
    {"queueTimeoutMs", c.queue_timeout_ms},
    {"maxHoldMs", c.max_hold_ms},
    {"nested", to_string(c.nested)},
    {"subagentToolNames", c.subagent_tool_names},
    {"idleMemoryMs", c.idle_memory_ms},
  };
}

json run_to_json(const run_config& c) {
  return json{
    {"taskFormat", c.task_format},
    {"sequentialDeps", c.sequential_deps},
    {"parserCommand", c.parser_command},
    {"fields", c.fields},
    {"holdPattern", c.hold_pattern},
    {"approvalRisks", c.approval_risks},
    {"maxConcurrency", c.max_concurrency},
    {"worker", c.worker},
    {"agentPreset", c.agent_preset},
    {"workerModel", c.worker_model},
    {"scriptFile", c.script_file},
    {"taskTimeoutMs", c.task_timeout_ms},
    {"verifyTimeoutMs", c.verify_timeout_ms},
    {"maxAttempts", c.max_attempts},
    {"maxRepairs", c.max_repairs},
    {"repairOnFailure", c.repair_on_failure},
    {"freshWorktreeOnRetry", c.fresh_worktree_on_retry},
    {"continueOnError", c.continue_on_error},
    {"useWorktrees", c.use_worktrees},
    {"requireWorktrees", c.require_worktrees},
    {"autoMerge", c.auto_merge},
    {"cleanupWorktrees", c.cleanup_worktrees},
    {"enforceDiffScope", c.enforce_diff_scope},
    {"mode", c.mode},
    {"baseBranch", c.base_branch},
    {"workerInstructions", c.worker_instructions},
    {"workerInstructionsFile", c.worker_instructions_file},
  };
}

} // namespace

std::string pool_config_json(const pool_config& cfg) {
  return pool_to_json(cfg).dump();
}

std::string config_json(const config& cfg) {
  json document{{"pool", pool_to_json(cfg.pool)},
                {"run", run_to_json(cfg.run)},
                {"server", json{{"listen", cfg.server.listen}}}};
  return document.dump(2);
}

} // namespace taskforce
