#include "src/config/config.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "src/config/model.hpp"
#include "src/net/listen_address.hpp"
#include "src/text/edit_distance.hpp"
#include "src/text/file.hpp"
#include "src/text/json_reader.hpp"
#include "src/text/strings.hpp"

namespace taskforce {

namespace {

using json = nlohmann::json;

constexpr int64_t max_safe_integer = (int64_t{1} << 53) - 1;

/// Containers nest at most this deep; taskforce.json needs three levels.
constexpr size_t max_depth = 32;

/// The longest value text an error message shows.
constexpr size_t shown_chars = 60;

/// `text` made fit for a one-line message: bytes outside printable ASCII as
/// \xNN, at most `limit` characters of it.
std::string shortened(const std::string& text, size_t limit = shown_chars) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string result;
  for (unsigned char c : text) {
    if (result.size() >= limit) {
      result += "...";
      break;
    }
    if (c >= 0x20 && c < 0x7f) {
      result += static_cast<char>(c);
    } else {
      result += "\\x";
      result += hex[c >> 4];
      result += hex[c & 0xf];
    }
  }
  return result;
}

/// A parsed value as a message shows it: compact and bounded.
std::string shown(const json& value) {
  return shortened(value.dump(-1, ' ', false, json::error_handler_t::replace));
}

/// Whether the JSON number `text` has no fractional part, exactly as written
/// (`1e-400` and `2.0000000000000001` do, though a double rounds them to an
/// integer).
bool integral_text(const std::string& text) {
  std::string digits;
  size_t i = 0;
  if (i < text.size() && text[i] == '-')
    ++i;
  long long point = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
       ++i, ++point)
    digits += text[i];
  if (i < text.size() && text[i] == '.')
    for (++i;
         i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
         ++i)
      digits += text[i];
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool negative = i < text.size() && text[i] == '-';
    if (i < text.size() && (text[i] == '-' || text[i] == '+'))
      ++i;
    long long exponent = 0;
    for (; i < text.size(); ++i)
      exponent
        = std::min<long long>(exponent * 10 + (text[i] - '0'), 1'000'000'000);
    point += negative ? -exponent : exponent;
  }
  // Every digit right of the decimal point must be zero.
  for (auto k = static_cast<size_t>(std::max<long long>(point, 0));
       k < digits.size(); ++k)
    if (digits[k] != '0')
      return false;
  return true;
}

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

template<class Enum>
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

/// The longest regular expression accepted: std::regex compiles (and
/// matches) recursively, and a pattern of 100,000 characters overflowed the
/// stack.
constexpr size_t max_regex_chars = 1000;

setter regexes(std::vector<std::string>& out) {
  return [&out](const json& value) {
    std::string rule = "a list of regular expressions (ECMAScript syntax, "
                       "at most "
                       + std::to_string(max_regex_chars) + " characters each)";
    if (!value.is_array())
      throw rule_violation{rule};
    std::vector<std::string> result;
    for (const auto& item : value) {
      if (!item.is_string() || item.get<std::string>().empty()
          || item.get<std::string>().size() > max_regex_chars)
        throw rule_violation{rule};
      try {
        std::regex check(item.get<std::string>());
      } catch (const std::regex_error& e) {
        throw rule_violation{rule + "; " + shown(item) + " does not compile ("
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

setter non_negative_number(double& out) {
  return [&out](const json& value) {
    if (!value.is_number() || !std::isfinite(value.get<double>())
        || value.get<double>() < 0)
      throw rule_violation{"a non-negative number"};
    out = value.get<double>();
  };
}

setter model_text(std::string& out) {
  return [&out](const json& value) {
    std::string rule = std::string{"empty or "} + model_rule;
    if (!value.is_string())
      throw rule_violation{rule};
    auto text = value.get<std::string>();
    if (!text.empty() && !is_model(text))
      throw rule_violation{rule + "; " + shown(value) + " is not"};
    out = text;
  };
}

setter models(std::vector<std::string>& out) {
  return [&out](const json& value) {
    std::string rule = std::string{"a list of models ("} + model_rule + ")";
    if (!value.is_array())
      throw rule_violation{rule};
    std::vector<std::string> result;
    for (const auto& item : value) {
      if (!item.is_string() || !is_model(item.get<std::string>()))
        throw rule_violation{rule + "; " + shown(item) + " is not one"};
      result.push_back(item.get<std::string>());
    }
    out = std::move(result);
  };
}

setter model_map(std::map<std::string, std::string>& out) {
  return [&out](const json& value) {
    std::string rule = std::string{"an object mapping agent names to models ("}
                       + model_rule + ")";
    if (!value.is_object())
      throw rule_violation{rule};
    std::map<std::string, std::string> result;
    for (const auto& [key, item] : value.items()) {
      if (key.empty())
        throw rule_violation{rule + "; an agent name is empty"};
      if (!item.is_string() || !is_model(item.get<std::string>()))
        throw rule_violation{rule + "; " + shown(item) + " (for \"" + key
                             + "\") is not one"};
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
    {"nested",
     one_of_enum(c.nested, {{"lend", nested_policy::lend},
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
    {"workerModel", model_text(c.worker_model)},
    {"scriptFile", text(c.script_file)},
    {"taskTimeoutMs", positive_integer(c.task_timeout_ms)},
    {"verifyTimeoutMs", positive_integer(c.verify_timeout_ms)},
    {"maxAttempts", positive_integer(c.max_attempts)},
    {"maxRepairs", positive_integer(c.max_repairs)},
    {"repairOnFailure", boolean(c.repair_on_failure)},
    {"freshWorktreeOnRetry", boolean(c.fresh_worktree_on_retry)},
    {"continueOnError", boolean(c.continue_on_error)},
    {"askUserOnBlocked", boolean(c.ask_user_on_blocked)},
    {"useWorktrees", boolean(c.use_worktrees)},
    {"requireWorktrees", boolean(c.require_worktrees)},
    {"autoMerge", boolean(c.auto_merge)},
    {"cleanupWorktrees", boolean(c.cleanup_worktrees)},
    {"enforceDiffScope", boolean(c.enforce_diff_scope)},
    {"mode", one_of(c.mode, {"integrate", "assist"})},
    {"baseBranch", text(c.base_branch)},
    {"workerInstructions", text(c.worker_instructions)},
    {"workerInstructionsFile", text(c.worker_instructions_file)},
    {"workerSkills", strings(c.worker_skills, false, false)},
    {"workerContract", one_of(c.worker_contract, {"generic", "none"})},
    {"roleModels", model_map(c.role_models)},
    {"fallbackModels", models(c.fallback_models)},
    {"maxCostUsd", non_negative_number(c.max_cost_usd)},
    {"maxTokens", non_negative_integer(c.max_tokens)},
    {"verifierEnabled", boolean(c.verifier_enabled)},
    {"verifierPreset", text(c.verifier_preset)},
    {"verifierPrompt", text(c.verifier_prompt)},
    {"verifyMerged", boolean(c.verify_merged)},
    {"flipCheckboxes", boolean(c.flip_checkboxes)},
    {"progressFile", text(c.progress_file)},
    {"detectCompletion", one_of(c.detect_completion, {"report", "checkboxes"})},
    {"coChangeLearning", boolean(c.co_change_learning)},
    {"coChangeMinCount", positive_integer(c.co_change_min_count)},
  };
}

setter listen_address_text(std::string& out) {
  return [&out](const json& value) {
    std::string rule = "an address " + std::string{listen_address_forms};
    if (!value.is_string())
      throw rule_violation{rule};
    auto text = value.get<std::string>();
    if (auto why = listen_address_problem(text); !why.empty())
      throw rule_violation{rule + " (" + why + ")"};
    out = text;
  };
}

std::vector<key_rule> server_rules(server_config& c) {
  return {
    {"listen", listen_address_text(c.listen)},
    {"idleExitMs", positive_integer(c.idle_exit_ms)},
  };
}

std::vector<key_rule> control_rules(control_config& c) {
  return {
    {"maxConcurrent", positive_integer(c.max_concurrent)},
    {"maxMonitors", positive_integer(c.max_monitors)},
    {"enforceWriteRoots", boolean(c.enforce_write_roots)},
    {"requireCompletion", boolean(c.require_completion)},
    {"validationTimeoutMs", positive_integer(c.validation_timeout_ms)},
    {"maxOutputBytes", positive_integer(c.max_output_bytes)},
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

/// How a message shows the value of `name` ("section.key"): as written when
/// it is a number with a fraction or exponent, else its compact JSON.
std::string shown_value(const std::map<std::string, std::string>& written,
                        const std::string& name, const json& value) {
  auto i = written.find(name);
  return i != written.end() ? shortened(i->second) : shown(value);
}

void apply_section(const json& section, const std::string& section_name,
                   std::vector<key_rule> rules, const std::string& origin,
                   const std::map<std::string, std::string>& written) {
  if (!section.is_object())
    throw config_error(origin + ": \"" + section_name
                       + "\" must be an object of settings, got "
                       + shown(section));
  auto known = names_of(rules);
  for (const auto& [key, value] : section.items()) {
    auto rule
      = std::find_if(rules.begin(), rules.end(), [&](const key_rule& r) {
          return r.name == key;
        });
    if (rule == rules.end())
      throw config_error(
        unknown_key_message(origin, key, known, section_name + "."));
    try {
      rule->apply(value);
    } catch (const rule_violation& violation) {
      auto name = section_name + "." + key;
      throw config_error(origin + ": " + name + " = "
                         + shown_value(written, name, value)
                         + " is refused: must be " + violation.rule);
    }
  }
}

const std::vector<std::string> section_names{"pool", "run", "server",
                                             "control"};

/// The rules of a section, bound to a scratch config; empty if unknown.
std::vector<key_rule> rules_of(const std::string& section, config& scratch) {
  if (section == "pool")
    return pool_rules(scratch.pool);
  if (section == "run")
    return run_rules(scratch.run);
  if (section == "server")
    return server_rules(scratch.server);
  if (section == "control")
    return control_rules(scratch.control);
  return {};
}

/// The rule of `section.key` as a refusal states it, found by offering the
/// rule `probe` (a value every rule refuses); empty if there is none.
std::string rule_text(const std::string& section, const std::string& key,
                      const json& probe) {
  config scratch;
  for (auto& rule : rules_of(section, scratch)) {
    if (rule.name != key)
      continue;
    try {
      rule.apply(probe);
    } catch (const rule_violation& violation) {
      return violation.rule;
    }
  }
  return {};
}

/// The message for a file whose reading stopped at `p`: the key and its
/// rule where a key was being read, else the place in the file.
std::string describe(const json_read_result& p, const std::string& origin) {
  auto where = [&] {
    std::string result;
    for (auto& key : p.path)
      result += (result.empty() ? "" : ".") + key;
    return result;
  }();
  std::string what;
  json probe;
  switch (p.kind) {
    case json_read_result::problem::out_of_range:
      what = shortened(p.token);
      probe = std::numeric_limits<double>::infinity();
      break;
    case json_read_result::problem::too_deep:
      what = "(a value nested deeper than " + std::to_string(max_depth)
             + " levels)";
      probe = json::array({json::array()});
      break;
    case json_read_result::problem::duplicate_key: {
      auto name = where.empty() ? p.token : where + "." + p.token;
      return origin + ": key \"" + shortened(name)
             + "\" appears twice; each key may be set once";
    }
    default: {
      // "line L, column C: syntax error while parsing value - invalid
      // string: ...; last read: '...'": keep the place and the reason, and
      // only the end of what was read.
      auto detail = p.detail;
      if (auto at = detail.find("parse error at "); at != std::string::npos)
        detail = detail.substr(at + 15);
      std::string last_read;
      if (auto at = detail.find("; last read: "); at != std::string::npos) {
        last_read = detail.substr(at + 13);
        detail.erase(at);
      }
      for (auto noise : {"syntax error while parsing value - ",
                         "syntax error while parsing "})
        if (auto at = detail.find(noise); at != std::string::npos) {
          detail.erase(at, std::string{noise}.size());
          break;
        }
      if (last_read.size() > shown_chars)
        last_read = "'..." + last_read.substr(last_read.size() - shown_chars);
      auto prefix = origin + ": " + (where.empty() ? "" : where + ": ");
      return prefix + "not valid JSON at " + shortened(detail, 200)
             + (last_read.empty() ? ""
                                  : "; last read: " + shortened(last_read));
    }
  }
  if (p.path.empty())
    return origin + ": the config must be a JSON object, got " + what;
  auto& section = p.path[0];
  bool is_section
    = std::find(section_names.begin(), section_names.end(), section)
      != section_names.end();
  if (!is_section && section != "$schema" && section != "//")
    return unknown_key_message(origin, section, section_names, "");
  if (!is_section) // a comment or the schema: anything valid goes
    return origin + ": \"" + section + "\" holds " + what
           + ", a number too large to read";
  if (p.path.size() == 1)
    return origin + ": \"" + shortened(section)
           + "\" must be an object of settings, got " + what;
  auto& key = p.path[1];
  auto rule = rule_text(section, key, probe);
  config scratch;
  if (rule.empty())
    return unknown_key_message(
      origin, key, names_of(rules_of(section, scratch)), section + ".");
  auto name = section + "." + key;
  if (p.kind == json_read_result::problem::too_deep
      || (p.path.size() == 2 && !p.inside))
    return origin + ": " + name + " = " + what + " is refused: must be " + rule;
  return origin + ": " + name + " holds " + what + ", which is refused: " + name
         + " must be " + rule;
}

} // namespace

const char* to_string(pool_mode x) {
  return x == pool_mode::session ? "session" : "global";
}

const char* to_string(nested_policy x) {
  return x == nested_policy::lend ? "lend" : "fail_fast";
}

config parse_config(const std::string& text, const std::string& origin) {
  // Numbers with a fraction or an exponent, by "section.key", as written;
  // a fraction the double lost (1e-400 is not 0) must not pass as an
  // integer: NaN is refused by every rule.
  std::map<std::string, std::string> written;
  json_read_options opts;
  opts.max_depth = max_depth;
  opts.refuse_duplicate_keys = true;
  opts.on_float = [&written](double& x, const std::string& number,
                             const std::vector<std::string>& path) {
    if (path.size() == 2)
      written[path[0] + "." + path[1]] = number;
    if (std::trunc(x) == x && !integral_text(number))
      x = std::numeric_limits<double>::quiet_NaN();
  };
  json document;
  auto read = read_json(text.data(), text.data() + text.size(), document, opts);
  if (!read.ok())
    throw config_error(describe(read, origin));
  if (!document.is_object())
    throw config_error(origin + ": the config must be a JSON object, got "
                       + shown(document));
  config result;
  for (const auto& [key, value] : document.items()) {
    if (key == "$schema" || key == "//")
      continue;
    if (key == "pool")
      apply_section(value, key, pool_rules(result.pool), origin, written);
    else if (key == "run")
      apply_section(value, key, run_rules(result.run), origin, written);
    else if (key == "server")
      apply_section(value, key, server_rules(result.server), origin, written);
    else if (key == "control")
      apply_section(value, key, control_rules(result.control), origin, written);
    else
      throw config_error(unknown_key_message(origin, key, section_names, ""));
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
    {"askUserOnBlocked", c.ask_user_on_blocked},
    {"useWorktrees", c.use_worktrees},
    {"requireWorktrees", c.require_worktrees},
    {"autoMerge", c.auto_merge},
    {"cleanupWorktrees", c.cleanup_worktrees},
    {"enforceDiffScope", c.enforce_diff_scope},
    {"mode", c.mode},
    {"baseBranch", c.base_branch},
    {"workerInstructions", c.worker_instructions},
    {"workerInstructionsFile", c.worker_instructions_file},
    {"workerSkills", c.worker_skills},
    {"workerContract", c.worker_contract},
    {"roleModels", c.role_models},
    {"fallbackModels", c.fallback_models},
    {"maxCostUsd", c.max_cost_usd},
    {"maxTokens", c.max_tokens},
    {"verifierEnabled", c.verifier_enabled},
    {"verifierPreset", c.verifier_preset},
    {"verifierPrompt", c.verifier_prompt},
    {"verifyMerged", c.verify_merged},
    {"flipCheckboxes", c.flip_checkboxes},
    {"progressFile", c.progress_file},
    {"detectCompletion", c.detect_completion},
    {"coChangeLearning", c.co_change_learning},
    {"coChangeMinCount", c.co_change_min_count},
  };
}

json control_to_json(const control_config& c) {
  return json{
    {"maxConcurrent", c.max_concurrent},
    {"maxMonitors", c.max_monitors},
    {"enforceWriteRoots", c.enforce_write_roots},
    {"requireCompletion", c.require_completion},
    {"validationTimeoutMs", c.validation_timeout_ms},
    {"maxOutputBytes", c.max_output_bytes},
  };
}

} // namespace

std::string control_config_json(const control_config& cfg) {
  return control_to_json(cfg).dump();
}

std::string pool_config_json(const pool_config& cfg) {
  return pool_to_json(cfg).dump();
}

std::string config_json(const config& cfg) {
  json document{{"pool", pool_to_json(cfg.pool)},
                {"run", run_to_json(cfg.run)},
                {"server", json{{"listen", cfg.server.listen},
                                {"idleExitMs", cfg.server.idle_exit_ms}}},
                {"control", control_to_json(cfg.control)}};
  return document.dump(2);
}

} // namespace taskforce
