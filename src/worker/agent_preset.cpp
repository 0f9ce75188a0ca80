#include "src/worker/agent_preset.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "src/text/edit_distance.hpp"
#include "src/text/file.hpp"

namespace fs = std::filesystem;

namespace taskforce {

namespace {

using json = nlohmann::json;

/// The longest single exec argument Linux accepts (MAX_ARG_STRLEN, with the
/// terminating NUL).
constexpr size_t max_argument = 128 * 1024 - 1;

/// The presets shipped in config/agents/, kept here so an installed binary
/// needs no data files; a unit test checks they match the files.
const std::map<std::string, std::string>& builtins() {
  static const std::map<std::string, std::string> presets{
    {"aider", R"({
  "description": "aider with one message read from a file, the declared files added to the chat, no commits of its own",
  "argv": ["aider", "--message-file", "{prompt_file}", ["--model", "{model}"],
           "--yes-always", "--no-auto-commits", "--no-stream", "--no-pretty",
           "--no-check-update", "{files}"]
}
)"},
    {"claude", R"({
  "description": "Claude Code in print mode: reads the prompt, edits files in the worktree without asking, prints its final message; later turns resume the session taskforce named",
  "argv": ["claude", "-p", "{prompt}", ["--model", "{model}"],
           ["--session-id", "{session}"],
           "--permission-mode", "acceptEdits", "--output-format", "text"],
  "continue": ["claude", "-p", "{prompt}", "--resume", "{session}",
               ["--model", "{model}"],
               "--permission-mode", "acceptEdits", "--output-format", "text"],
  "session": "uuid"
}
)"},
    {"codex", R"preset({
  "description": "Codex exec: may write inside the worktree only, prints its final message on stdout; later turns resume the session it named in its banner",
  "argv": ["codex", "exec", ["--model", "{model}"], "--sandbox", "workspace-write",
           "--cd", "{worktree}", "{prompt}"],
  "continue": ["codex", "exec", "resume", ["--model", "{model}"],
               "-c", "sandbox_mode=\"workspace-write\"", "{session}", "{prompt}"],
  "session": {"pattern": "session id: ([0-9a-fA-F-]{36})"}
}
)preset"},
    {"opencode", R"({
  "description": "OpenCode's non-interactive run: one message, the session's final answer on stdout; later turns continue the last session of the task's worktree",
  "argv": ["opencode", "run", "--dir", "{worktree}", ["--model", "{model}"],
           "{prompt}"],
  "continue": ["opencode", "run", "--dir", "{worktree}", "--continue",
               ["--model", "{model}"], "{prompt}"],
  "session": "directory"
}
)"},
  };
  return presets;
}

const std::vector<std::string>& placeholder_names() {
  static const std::vector<std::string> names{
    "prompt",  "prompt_file", "model", "worktree",
    "task_id", "title",       "files", "session"};
  return names;
}

/// A piece of a template: literal text or a placeholder.
struct piece {
  bool placeholder;
  std::string text;
};

/// Splits a template; `where` names it in errors ("FILE: argv[2]").
std::vector<piece> split_template(const std::string& t,
                                  const std::string& where) {
  std::vector<piece> out;
  std::string literal;
  for (size_t i = 0; i < t.size(); ++i) {
    char c = t[i];
    if ((c == '{' || c == '}') && i + 1 < t.size() && t[i + 1] == c) {
      literal.push_back(c);
      ++i;
      continue;
    }
    if (c == '}')
      throw preset_error(where + ": a lone '}' (write '}}' for a brace)");
    if (c != '{') {
      literal.push_back(c);
      continue;
    }
    auto close = t.find('}', i);
    if (close == std::string::npos)
      throw preset_error(where + ": '{' without '}' (write '{{' for a brace)");
    auto name = t.substr(i + 1, close - i - 1);
    auto& known = placeholder_names();
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string msg = where + ": unknown placeholder {" + name + "}";
      auto near = nearest(name, known, 3);
      if (!near.empty())
        msg += " (did you mean {" + near + "}?)";
      else
        msg += " (known: {prompt}, {prompt_file}, {model}, {worktree}, "
               "{task_id}, {title}, {files}, {session})";
      throw preset_error(msg);
    }
    if (!literal.empty())
      out.push_back({false, std::move(literal)});
    literal.clear();
    out.push_back({true, name});
    i = close;
  }
  if (!literal.empty())
    out.push_back({false, std::move(literal)});
  return out;
}

/// Checks a template; {files} is allowed only as a whole argv element.
void check_template(const std::string& t, const std::string& where,
                    bool files_allowed) {
  auto pieces = split_template(t, where);
  for (auto& p : pieces)
    if (p.placeholder && p.text == "files"
        && !(files_allowed && pieces.size() == 1))
      throw preset_error(where
                         + ": {files} must be a whole argument of its own");
}

bool has_glob(const std::string& path) {
  return path.find_first_of("*?[") != std::string::npos;
}

/// The value of a scalar placeholder.
const std::string& value_of(const std::string& name, const agent_values& v) {
  if (name == "prompt")
    return v.prompt;
  if (name == "prompt_file")
    return v.prompt_file;
  if (name == "model")
    return v.model;
  if (name == "worktree")
    return v.worktree;
  if (name == "task_id")
    return v.task_id;
  if (name == "session")
    return v.session;
  return v.title;
}

/// Expands a scalar template; `empty_placeholder` tells whether a
/// placeholder in it expanded to "".
std::string expand(const std::string& t, const agent_values& v,
                   const std::string& where, bool& empty_placeholder) {
  std::string out;
  for (auto& p : split_template(t, where)) {
    if (!p.placeholder) {
      out += p.text;
      continue;
    }
    auto& value = value_of(p.text, v);
    if (value.empty())
      empty_placeholder = true;
    out += value;
  }
  return out;
}

/// Parses an argv template (`key`: "argv" or "continue") into `argv` and
/// `grouped`.
void parse_argv(const json& value, const std::string& origin,
                const std::string& key,
                std::vector<std::vector<std::string>>& argv,
                std::vector<bool>& grouped) {
  if (!value.is_array() || value.empty())
    throw preset_error(origin + ": \"" + key + "\" must be a non-empty array");
  for (size_t i = 0; i < value.size(); ++i) {
    const auto& e = value[i];
    std::string where = origin + ": " + key + "[" + std::to_string(i) + "]";
    std::vector<std::string> group;
    if (e.is_string()) {
      group.push_back(e.get<std::string>());
      check_template(group.back(), where, true);
      grouped.push_back(false);
    } else if (e.is_array() && !e.empty()) {
      for (size_t k = 0; k < e.size(); ++k) {
        auto w = where + "[" + std::to_string(k) + "]";
        if (!e[k].is_string())
          throw preset_error(w + ": must be a string");
        group.push_back(e[k].get<std::string>());
        check_template(group.back(), w, false);
      }
      grouped.push_back(true);
    } else {
      throw preset_error(where
                         + ": must be a string or a non-empty array "
                           "of strings (an optional group)");
    }
    argv.push_back(std::move(group));
  }
  if (grouped[0] || argv[0][0].empty()
      || argv[0][0].find('{') != std::string::npos)
    throw preset_error(origin + ": " + key
                       + "[0] must be the program, a plain non-empty string");
}

/// Whether a template mentions {session}.
bool uses_session(const std::vector<std::vector<std::string>>& argv) {
  for (auto& group : argv)
    for (auto& t : group)
      for (auto& piece : split_template(t, ""))
        if (piece.placeholder && piece.text == "session")
          return true;
  return false;
}

/// Reads "continue" and "session" and checks that they fit together.
void parse_continuation(const json& j, const std::string& origin,
                        agent_preset& p) {
  using source = agent_preset::session_source;
  auto cont = j.find("continue");
  auto session = j.find("session");
  const std::string kinds = "\"uuid\", \"directory\" or {\"pattern\": "
                            "\"a regular expression with one group\"}";
  if (cont != j.end())
    parse_argv(*cont, origin, "continue", p.continue_argv, p.continue_grouped);
  if (session != j.end()) {
    if (session->is_string() && *session == "uuid") {
      p.session = source::uuid;
    } else if (session->is_string() && *session == "directory") {
      p.session = source::directory;
    } else if (session->is_object() && session->size() == 1
               && session->contains("pattern")
               && (*session)["pattern"].is_string()) {
      p.session = source::output;
      p.session_pattern = (*session)["pattern"].get<std::string>();
      try {
        std::regex re{p.session_pattern};
        if (re.mark_count() < 1)
          throw preset_error(origin
                             + ": session.pattern needs a group, (...), "
                               "around the session id");
      } catch (const std::regex_error& e) {
        throw preset_error(origin + ": session.pattern is not a valid "
                           + "regular expression: " + e.what());
      }
    } else {
      throw preset_error(origin + ": \"session\" must be " + kinds);
    }
  }
  if (cont != j.end() && session == j.end())
    throw preset_error(origin
                       + ": \"continue\" needs \"session\", how the "
                         "session to continue is known: "
                       + kinds);
  if (cont == j.end() && session != j.end())
    throw preset_error(origin
                       + ": \"session\" without \"continue\" continues "
                         "nothing; add the \"continue\" argv");
  if (uses_session(p.argv) && p.session != source::uuid)
    throw preset_error(origin
                       + ": {session} in \"argv\" needs \"session\": "
                         "\"uuid\" (only a session taskforce names is "
                         "known before the first turn)");
  if (p.session == source::directory && uses_session(p.continue_argv))
    throw preset_error(origin
                       + ": with \"session\": \"directory\" the CLI "
                         "finds its session itself; \"continue\" may not "
                         "use {session}");
  if ((p.session == source::uuid || p.session == source::output)
      && !uses_session(p.continue_argv))
    throw preset_error(origin
                       + ": \"continue\" must name the session with "
                         "{session}");
}

} // namespace

agent_preset parse_agent_preset(const std::string& text,
                                const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw preset_error(origin + ":" + line_and_column(text, e.byte) + ": "
                       + e.what());
  }
  if (!j.is_object())
    throw preset_error(origin + ": a preset must be a JSON object");
  static const std::vector<std::string> keys{
    "description", "argv", "env", "stdin", "continue", "session"};
  for (auto& [key, value] : j.items()) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      continue;
    std::string msg = origin + ": unknown key \"" + key + "\"";
    auto near = nearest(key, keys, 3);
    if (!near.empty())
      msg += " (did you mean \"" + near + "\"?)";
    throw preset_error(msg);
  }
  agent_preset p;
  p.origin = origin;
  if (auto it = j.find("description"); it != j.end()) {
    if (!it->is_string())
      throw preset_error(origin + ": \"description\" must be a string");
    p.description = it->get<std::string>();
  }
  auto argv = j.find("argv");
  if (argv == j.end())
    throw preset_error(origin
                       + ": \"argv\" is required (the program and "
                         "its arguments)");
  parse_argv(*argv, origin, "argv", p.argv, p.grouped);
  if (auto it = j.find("env"); it != j.end()) {
    if (!it->is_object())
      throw preset_error(origin + ": \"env\" must be an object of strings");
    for (auto& [key, value] : it->items()) {
      std::string where = origin + ": env." + key;
      if (key.empty() || key.find('=') != std::string::npos)
        throw preset_error(where
                           + ": a variable name may not be empty or "
                             "contain '='");
      if (!value.is_string())
        throw preset_error(where + ": must be a string");
      check_template(value.get<std::string>(), where, false);
      p.env[key] = value.get<std::string>();
    }
  }
  if (auto it = j.find("stdin"); it != j.end()) {
    if (!it->is_string())
      throw preset_error(origin
                         + ": \"stdin\" must be a string (a file, "
                           "e.g. \"{prompt_file}\")");
    check_template(it->get<std::string>(), origin + ": stdin", false);
    p.stdin_template = it->get<std::string>();
  }
  parse_continuation(j, origin, p);
  return p;
}

agent_preset load_agent_preset(const std::string& name,
                               const std::string& repo) {
  if (name.empty())
    throw preset_error("run.agentPreset: the preset name is empty");
  auto read = [&](const fs::path& file) {
    auto text = read_file(file);
    if (!text)
      throw preset_error(file.string() + ": cannot read the agent preset");
    auto p = parse_agent_preset(*text, file.string());
    p.name = name;
    return p;
  };
  bool is_path
    = name.find('/') != std::string::npos
      || (name.size() > 5 && name.compare(name.size() - 5, 5, ".json") == 0);
  if (is_path) {
    fs::path file = name;
    if (file.is_relative() && !repo.empty())
      file = fs::path{repo} / file;
    return read(file);
  }
  if (!repo.empty()) {
    auto local = fs::path{repo} / ".taskforce" / "agents" / (name + ".json");
    std::error_code ec;
    if (fs::exists(local, ec))
      return read(local);
  }
  auto text = builtin_agent_preset_text(name);
  if (text.empty()) {
    auto names = builtin_agent_presets();
    std::string msg = "unknown agent preset \"" + name + "\"";
    auto near = nearest(name, names, 3);
    if (!near.empty())
      msg += " (did you mean \"" + near + "\"?)";
    msg += "; built in:";
    for (auto& n : names)
      msg += " " + n;
    msg += "; or add .taskforce/agents/" + name + ".json";
    throw preset_error(msg);
  }
  auto p = parse_agent_preset(text, "built-in preset '" + name + "'");
  p.name = name;
  return p;
}

std::vector<std::string> builtin_agent_presets() {
  std::vector<std::string> names;
  for (auto& [name, text] : builtins())
    names.push_back(name);
  return names;
}

std::string builtin_agent_preset_text(const std::string& name) {
  auto it = builtins().find(name);
  return it == builtins().end() ? std::string{} : it->second;
}

agent_command expand_agent_preset(const agent_preset& preset,
                                  const agent_values& values, bool continuing) {
  if (continuing && !preset.can_continue())
    throw preset_error(preset.origin + ": cannot continue a session (no "
                       + "\"continue\" argv)");
  const auto& argv = continuing ? preset.continue_argv : preset.argv;
  const auto& grouped = continuing ? preset.continue_grouped : preset.grouped;
  const std::string key = continuing ? "continue" : "argv";
  agent_command cmd;
  auto check_size = [&](const std::string& arg, const std::string& where) {
    if (arg.size() > max_argument)
      throw preset_error(
        preset.origin + ": " + where + " expands to "
        + std::to_string(arg.size()) + " bytes, more than one argument may "
        + "hold (" + std::to_string(max_argument)
        + "); pass the prompt with {prompt_file} or \"stdin\" instead");
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const auto& group = argv[i];
    std::string where = key + "[" + std::to_string(i) + "]";
    if (group.size() == 1 && group[0] == "{files}" && !grouped[i]) {
      // Globs cannot be handed to an agent as files; plain paths can.
      for (auto& f : values.files)
        if (!has_glob(f))
          cmd.argv.push_back(f);
      continue;
    }
    bool empty = false;
    std::vector<std::string> expanded;
    for (auto& t : group)
      expanded.push_back(
        expand(t, values, preset.origin + ": " + where, empty));
    if (empty && grouped[i])
      continue; // an optional group with nothing to say
    for (auto& arg : expanded) {
      check_size(arg, where);
      cmd.argv.push_back(std::move(arg));
    }
  }
  for (auto& [key, t] : preset.env) {
    bool empty = false;
    cmd.env.emplace_back(
      key, expand(t, values, preset.origin + ": env." + key, empty));
  }
  if (!preset.stdin_template.empty()) {
    bool empty = false;
    cmd.stdin_file
      = expand(preset.stdin_template, values, preset.origin + ": stdin", empty);
  }
  return cmd;
}

std::string find_session(const agent_preset& preset,
                         const std::string& output) {
  if (preset.session != agent_preset::session_source::output)
    return {};
  std::smatch m;
  std::regex re{preset.session_pattern};
  if (!std::regex_search(output, m, re) || m.size() < 2)
    return {};
  return m[1].str();
}

std::string new_session_uuid() {
  static thread_local std::mt19937_64 gen{[] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64{seq};
  }()};
  uint64_t hi = gen(), lo = gen();
  hi = (hi & ~uint64_t{0xF000}) | 0x4000;                     // version 4
  lo = (lo & ~(uint64_t{0xC} << 60)) | (uint64_t{0x8} << 60); // RFC 4122
  char buf[37];
  std::snprintf(
    buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx",
    static_cast<unsigned>(hi >> 32), static_cast<unsigned>((hi >> 16) & 0xFFFF),
    static_cast<unsigned>(hi & 0xFFFF), static_cast<unsigned>(lo >> 48),
    static_cast<unsigned long long>(lo & 0xFFFFFFFFFFFFull));
  return buf;
}

} // namespace taskforce
