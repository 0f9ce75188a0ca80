#include "src/control/validation.hpp"

#include <algorithm>
#include <string>
#include <system_error>

#include "src/control/error.hpp"
#include "src/proc/spawn.hpp"
#include "src/run/run_setup.hpp"
#include "src/scope/physical.hpp"

namespace fs = std::filesystem;

namespace taskforce::control {

const char* to_string(validation_status x) {
  switch (x) {
    case validation_status::success: return "success";
    case validation_status::failure: return "failure";
    case validation_status::timeout: return "timeout";
    case validation_status::aborted: return "aborted";
  }
  return "unknown";
}

bool validation_report::passed() const {
  return std::all_of(results.begin(), results.end(), [](const auto& r) {
    return r.status == validation_status::success;
  });
}

std::string validation_report::reason() const {
  for (size_t i = 0; i < results.size(); ++i) {
    auto& r = results[i];
    if (r.status == validation_status::success)
      continue;
    std::string verb = r.status == validation_status::timeout   ? "timed out"
                       : r.status == validation_status::aborted ? "was aborted"
                                                                : "failed";
    return "Validation failed: validation " + std::to_string(i + 1) + " (`"
           + r.command + "`) " + verb + ": " + r.description;
  }
  return {};
}

std::string validation_report::tail() const {
  for (auto& r : results)
    if (r.status != validation_status::success)
      return r.output;
  return {};
}

namespace {

std::string in_quotes(std::string_view s) {
  return "\"" + std::string{s} + "\"";
}

[[noreturn]] void refuse_cwd(std::string_view cwd, const std::string& why) {
  throw control_error(control_errc::bad_request,
                      "cwd " + in_quotes(cwd)
                        + " must be inside the repository: " + why);
}

/// The next free `validation-<n>.log` in `dir`: n counts on from the
/// highest there, so an earlier completion's logs stay.
int next_log_number(const fs::path& dir) {
  int highest = 0;
  std::error_code ec;
  for (auto it = fs::directory_iterator(dir, ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    auto name = it->path().filename().string();
    constexpr std::string_view prefix = "validation-";
    if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + 4
        || name.compare(name.size() - 4, 4, ".log") != 0)
      continue;
    auto digits = name.substr(prefix.size(), name.size() - prefix.size() - 4);
    if (digits.find_first_not_of("0123456789") != std::string::npos
        || digits.size() > 9)
      continue;
    highest = std::max(highest, std::stoi(digits));
  }
  return highest + 1;
}

validation_status status_of(const proc::run_result& r) {
  if (r.success())
    return validation_status::success;
  if (r.timed_out)
    return validation_status::timeout;
  if (r.cancelled)
    return validation_status::aborted;
  return validation_status::failure;
}

} // namespace

fs::path resolve_cwd(const fs::path& repository, std::string_view cwd) {
  scope::physical_root root{repository};
  std::string rel{cwd};
  if (!rel.empty() && rel.front() == '/') {
    // Absolute: judged by where it lies once spelled from the top folder,
    // as written or as resolved.
    fs::path abs = fs::path{rel}.lexically_normal();
    auto from_spelled = abs.lexically_relative(repository.lexically_normal());
    auto from_real = abs.lexically_relative(root.root());
    auto inside = [](const fs::path& p) {
      return !p.empty() && *p.begin() != "..";
    };
    if (inside(from_spelled))
      rel = from_spelled.string();
    else if (inside(from_real))
      rel = from_real.string();
    else
      refuse_cwd(cwd, "it is outside the repository " + root.root().string());
  }
  fs::path dir;
  if (rel.empty() || fs::path{rel}.lexically_normal() == ".") {
    dir = root.root();
  } else {
    auto resolved = root.resolve(rel);
    if (!resolved.error.empty()) {
      // The top folder itself (through "a/.." or a link to it) is a fine
      // place to run; physical_root refuses it as a place to write.
      std::error_code ec;
      auto real = fs::canonical(root.root() / rel, ec);
      if (ec || real != root.root())
        refuse_cwd(cwd, resolved.error);
      dir = root.root();
    } else {
      dir = root.root() / resolved.path;
    }
  }
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    refuse_cwd(cwd, "there is no folder " + dir.string());
  return dir;
}

std::string repository_relative(const fs::path& repository,
                                const fs::path& dir) {
  std::error_code ec;
  auto top = fs::canonical(repository, ec);
  auto rel = dir.lexically_relative(ec ? repository : top);
  return rel.empty() ? std::string{"."} : rel.string();
}

validation_report run_validations(const std::vector<std::string>& commands,
                                  const validation_options& opts) {
  validation_report report;
  if (commands.empty())
    return report;
  if (opts.task_id.empty()
      || opts.task_id.find_first_of("/\\") != std::string::npos
      || opts.task_id.find("..") != std::string::npos)
    throw control_error(control_errc::bad_request,
                        "validations need a task id without slashes or "
                        "\"..\" (it names their log folder), not "
                          + in_quotes(opts.task_id));
  auto cwd = resolve_cwd(opts.repository, opts.cwd);
  auto log_dir = run::state_dir(opts.repository) / "logs" / "bg" / opts.task_id;
  std::error_code ec;
  fs::create_directories(log_dir, ec);
  fs::create_directories(run::worker_records(opts.repository), ec);
  int number = next_log_number(log_dir);
  for (auto& command : commands) {
    validation_result result;
    result.command = command;
    result.log_file
      = (log_dir / ("validation-" + std::to_string(number++) + ".log"))
          .string();
    proc::run_options ro;
    ro.argv = {"/bin/sh", "-c", command};
    ro.cwd = cwd.string();
    ro.log_file = result.log_file;
    ro.tail_bytes = opts.max_output_bytes;
    ro.timeout = opts.timeout;
    ro.kill_grace = opts.kill_grace;
    ro.cancel = opts.cancel;
    ro.label = "bg/" + opts.task_id + "/";
    ro.record_folder = run::worker_records(opts.repository).string();
    try {
      auto r = proc::run(ro);
      result.status = status_of(r);
      result.exit_code = r.exit_code;
      result.duration_ms = r.duration.count();
      result.output = std::move(r.tail);
      result.output_truncated = r.tail_truncated;
      result.description = r.describe();
    } catch (const proc::spawn_error& e) {
      result.status = opts.cancel.cancelled() ? validation_status::aborted
                                              : validation_status::failure;
      result.description = e.what();
    }
    bool stop = result.status != validation_status::success;
    report.results.push_back(std::move(result));
    if (stop)
      break;
  }
  return report;
}

} // namespace taskforce::control
