#include "src/worker/script.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "src/proc/spawn.hpp"
#include "src/text/edit_distance.hpp"
#include "src/text/file.hpp"

namespace fs = std::filesystem;

namespace taskforce {

namespace {

using json = nlohmann::json;

/// Bounds that keep a typo from hanging a test for a day.
constexpr uint64_t max_sleep_ms = 24 * 3600 * 1000;
constexpr uint64_t max_hang_children = 16;

void refuse_unknown(const json& object, const std::vector<std::string>& keys,
                    const std::string& where) {
  for (auto& [key, value] : object.items()) {
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      continue;
    std::string msg = where + ": unknown key \"" + key + "\"";
    auto near = nearest(key, keys, 3);
    if (!near.empty())
      msg += " (did you mean \"" + near + "\"?)";
    throw script_error(msg);
  }
}

/// A path the worker may touch: relative, inside the working directory.
std::string checked_path(const json& value, const std::string& where) {
  if (!value.is_string())
    throw script_error(where + ": a path must be a string");
  auto path = value.get<std::string>();
  fs::path p = path;
  if (path.empty() || p.is_absolute())
    throw script_error(where + ": \"" + path
                       + "\" must be a relative path inside the worktree");
  for (auto& part : p)
    if (part == ".." || part == ".git")
      throw script_error(where + ": \"" + path
                         + "\" must stay inside the worktree (no '..' or "
                           "'.git')");
  return path;
}

uint64_t checked_count(const json& value, uint64_t max,
                       const std::string& where) {
  if (!value.is_number_integer() || value.get<int64_t>() < 0
      || value.get<uint64_t>() > max)
    throw script_error(where + ": must be an integer from 0 to "
                       + std::to_string(max));
  return value.get<uint64_t>();
}

bool checked_bool(const json& value, const std::string& where) {
  if (!value.is_boolean())
    throw script_error(where + ": must be true or false");
  return value.get<bool>();
}

std::string checked_string(const json& value, const std::string& where) {
  if (!value.is_string())
    throw script_error(where + ": must be a string");
  return value.get<std::string>();
}

std::vector<std::pair<std::string, std::string>>
file_map(const json& value, const std::string& where) {
  if (!value.is_object())
    throw script_error(where + ": must be an object of path -> text");
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& [path, text] : value.items()) {
    auto w = where + "." + path;
    checked_path(path, w);
    out.emplace_back(path, checked_string(text, w));
  }
  return out;
}

script_step parse_step(const json& j, const std::string& where) {
  static const std::vector<std::string> keys{
    "write",    "append",        "delete",       "print",  "stderr",
    "sleep_ms", "report",        "marker",       "reason", "crash",
    "hang",     "hang_children", "escape_group", "exit"};
  if (!j.is_object())
    throw script_error(where + ": an invocation must be an object");
  refuse_unknown(j, keys, where);
  script_step s;
  auto at = [&](const char* key) {
    return where + "." + key;
  };
  if (j.contains("write"))
    s.write = file_map(j["write"], at("write"));
  if (j.contains("append"))
    s.append = file_map(j["append"], at("append"));
  if (j.contains("delete")) {
    auto& d = j["delete"];
    if (!d.is_array())
      throw script_error(at("delete") + ": must be an array of paths");
    for (size_t i = 0; i < d.size(); ++i)
      s.remove.push_back(
        checked_path(d[i], at("delete") + "[" + std::to_string(i) + "]"));
  }
  if (j.contains("print"))
    s.print = checked_string(j["print"], at("print"));
  if (j.contains("stderr"))
    s.print_stderr = checked_string(j["stderr"], at("stderr"));
  if (j.contains("sleep_ms"))
    s.sleep_ms = checked_count(j["sleep_ms"], max_sleep_ms, at("sleep_ms"));
  if (j.contains("report")) {
    if (!j["report"].is_object())
      throw script_error(at("report")
                         + ": must be an object (printed as a "
                           "fenced json block; use \"print\" "
                           "for raw text)");
    s.report_json = j["report"].dump();
  }
  if (j.contains("marker")) {
    s.marker = checked_string(j["marker"], at("marker"));
    if (s.marker != "done" && s.marker != "blocked")
      throw script_error(at("marker") + ": must be \"done\" or \"blocked\"");
  }
  if (j.contains("reason")) {
    s.reason = checked_string(j["reason"], at("reason"));
    if (s.marker.empty())
      throw script_error(at("reason") + ": needs a \"marker\"");
  }
  if (j.contains("crash"))
    s.crash = checked_bool(j["crash"], at("crash"));
  if (j.contains("hang"))
    s.hang = checked_bool(j["hang"], at("hang"));
  if (j.contains("hang_children"))
    s.hang_children = checked_count(j["hang_children"], max_hang_children,
                                    at("hang_children"));
  if (j.contains("escape_group")) {
    s.escape_group = checked_bool(j["escape_group"], at("escape_group"));
    if (s.escape_group && s.hang_children == 0)
      throw script_error(at("escape_group") + ": needs \"hang_children\"");
  }
  if (j.contains("exit"))
    s.exit_code = static_cast<int>(checked_count(j["exit"], 255, at("exit")));
  if (s.crash && s.hang)
    throw script_error(where + ": \"crash\" and \"hang\" exclude each other");
  return s;
}

std::vector<script_step> parse_steps(const json& j, const std::string& where) {
  if (!j.is_array() || j.empty())
    throw script_error(where + ": must be a non-empty array of invocations");
  std::vector<script_step> steps;
  for (size_t i = 0; i < j.size(); ++i)
    steps.push_back(parse_step(j[i], where + "[" + std::to_string(i) + "]"));
  return steps;
}

void write_file(const std::string& path, const std::string& text, bool append) {
  fs::path p = path;
  if (p.has_parent_path())
    fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary
                         | (append ? std::ios::app : std::ios::trunc));
  out << text;
  if (!out)
    throw std::runtime_error("scripted worker: cannot write " + path);
}

/// The process-group id of `pid` from /proc, -1 when it is gone.
pid_t pgid_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  auto close = line.rfind(')');
  if (close == std::string::npos)
    return -1;
  std::istringstream fields(line.substr(close + 2));
  std::string state;
  pid_t ppid = 0, pgid = -1;
  fields >> state >> ppid >> pgid;
  return pgid;
}

} // namespace

const script_step* worker_script::step_for(const std::string& task,
                                           uint64_t n) const {
  auto it = tasks.find(task);
  const auto& steps = it != tasks.end() ? it->second : fallback;
  if (steps.empty())
    return nullptr;
  auto index = std::min<uint64_t>(std::max<uint64_t>(n, 1), steps.size());
  return &steps[index - 1];
}

worker_script parse_worker_script(const std::string& text,
                                  const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw script_error(origin + ":" + line_and_column(text, e.byte) + ": "
                       + e.what());
  }
  if (!j.is_object())
    throw script_error(origin
                       + ": a script must be a JSON object with "
                         "\"tasks\"");
  refuse_unknown(j, {"tasks", "default"}, origin);
  if (!j.contains("tasks") && !j.contains("default"))
    throw script_error(origin
                       + ": \"tasks\" is required (task id -> list "
                         "of invocations)");
  worker_script script;
  if (j.contains("tasks")) {
    if (!j["tasks"].is_object())
      throw script_error(origin
                         + ": tasks: must be an object of task id "
                           "-> list of invocations");
    for (auto& [id, steps] : j["tasks"].items())
      script.tasks[id] = parse_steps(steps, origin + ": tasks." + id);
  }
  if (j.contains("default"))
    script.fallback = parse_steps(j["default"], origin + ": default");
  return script;
}

worker_script load_worker_script(const std::string& path) {
  auto text = read_file(path);
  if (!text)
    throw script_error(path + ": cannot read the worker script");
  return parse_worker_script(*text, path);
}

std::vector<std::string> scripted_worker_argv(const std::string& binary,
                                              const std::string& script,
                                              const std::string& task,
                                              uint64_t invocation) {
  return {binary,         "scripted-worker",
          "--script",     script,
          "--task",       task,
          "--invocation", std::to_string(invocation)};
}

std::string current_executable() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string{"taskforce"} : p.string();
}

int perform_script_step(const script_step& step, const std::string& self) {
  for (auto& [path, text] : step.write)
    write_file(path, text, false);
  for (auto& [path, text] : step.append)
    write_file(path, text, true);
  for (auto& path : step.remove) {
    std::error_code ec;
    fs::remove(path, ec);
  }
  std::cout << step.print << std::flush;
  std::cerr << step.print_stderr << std::flush;
  if (step.sleep_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(step.sleep_ms));
  if (!step.report_json.empty())
    std::cout << "```json\n" << step.report_json << "\n```\n";
  if (!step.marker.empty())
    std::cout << "[task:" << step.marker << "]"
              << (step.reason.empty() ? "" : " " + step.reason) << '\n';
  std::cout << std::flush;
  if (step.hang_children > 0) {
    pid_t group = ::getpgrp();
    std::vector<pid_t> children;
    for (uint64_t i = 0; i < step.hang_children; ++i) {
      proc::spawn_options o;
      o.argv = {self, "scripted-worker", "--hang-child"};
      if (step.escape_group)
        o.argv.push_back("--escape");
      else
        o.argv.insert(o.argv.end(), {"--join-group", std::to_string(group)});
      auto c = proc::spawn(o);
      std::cout << "hanging child: " << c.pid << std::endl;
      children.push_back(c.pid);
    }
    // Wait until each child stands where it should (our group, or a session
    // of its own), so a kill that follows finds it there.
    auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    for (pid_t c : children) {
      while (std::chrono::steady_clock::now() < give_up) {
        pid_t g = pgid_of(c);
        if (g < 0 || (step.escape_group ? g == c : g == group))
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
  }
  if (step.crash) {
    // No core file: it would land in the worktree as an untracked change.
    struct rlimit none {};
    ::setrlimit(RLIMIT_CORE, &none);
    std::abort();
  }
  if (step.hang) {
    ::signal(SIGTERM, SIG_IGN);
    std::cerr << "scripted worker: hanging, SIGTERM ignored" << std::endl;
    hang_forever(false);
  }
  return step.exit_code;
}

void hang_forever(bool escape_group) {
  ::signal(SIGTERM, SIG_IGN);
  if (escape_group)
    ::setsid();
  for (;;)
    ::pause();
}

} // namespace taskforce
