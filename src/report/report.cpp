#include "src/report/report.hpp"

#include <algorithm>
#include <cctype>

#include "src/text/strings.hpp"
#include <nlohmann/json.hpp>

namespace taskforce {

namespace {

using json = nlohmann::json;

constexpr std::string_view done_marker = "[task:done]";
constexpr std::string_view blocked_marker = "[task:blocked]";
/// A marker's summary is the rest of the output, up to this much.
constexpr size_t max_marker_summary = 4000;
/// A verdict's reason is one line of at most this much.
constexpr size_t max_reason = 500;

std::string_view trim(std::string_view s) {
  auto is_space = [](char c) {
    return std::isspace(static_cast<unsigned char>(c)) != 0;
  };
  while (!s.empty() && is_space(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && is_space(s.back()))
    s.remove_suffix(1);
  return s;
}

/// A fenced block found in the output.
struct fenced_block {
  size_t line = 0; // 1-based line of the opening fence
  std::string text;
  bool closed = false;
};

/// The last ```json block, tracking every fence so that a ```json line
/// inside another block is content, not an opening.
std::optional<fenced_block> last_json_block(std::string_view output) {
  std::optional<fenced_block> last;
  std::optional<fenced_block> current;
  bool current_is_json = false;
  size_t fence_len = 0;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= output.size()) {
    auto end = output.find('\n', pos);
    if (end == std::string_view::npos)
      end = output.size();
    auto line = output.substr(pos, end - pos);
    ++line_no;
    auto t = trim(line);
    size_t ticks = 0;
    while (ticks < t.size() && t[ticks] == '`')
      ++ticks;
    if (!current) {
      if (ticks >= 3) {
        auto info = trim(t.substr(ticks));
        auto word = info.substr(0, info.find_first_of(" \t{"));
        current = fenced_block{line_no, {}, false};
        current_is_json = lower(word) == "json";
        fence_len = ticks;
      }
    } else if (ticks >= fence_len && ticks == t.size()) {
      current->closed = true;
      if (current_is_json)
        last = std::move(current);
      current.reset();
    } else {
      current->text.append(line);
      current->text.push_back('\n');
    }
    if (end == output.size())
      break;
    pos = end + 1;
  }
  if (current && current_is_json)
    last = std::move(current);
  return last;
}

std::string where(const fenced_block& block) {
  return "malformed report: the last ```json block (output line "
         + std::to_string(block.line) + ")";
}

/// Validates a parsed block; fills `report` or returns the error.
std::string to_report(const json& j, const fenced_block& block,
                      worker_report& report) {
  auto bad = [&](const std::string& key, const std::string& rule) {
    return where(block) + ": \"" + key + "\" " + rule;
  };
  const auto& status = j.at("status");
  if (!status.is_string() || (status != "done" && status != "blocked"))
    return bad("status",
               "must be \"done\" or \"blocked\", not " + status.dump());
  report.status
    = status == "done" ? report_status::done : report_status::blocked;
  report.source = report_source::json;
  if (auto it = j.find("summary"); it != j.end() && !it->is_null()) {
    if (!it->is_string())
      return bad("summary", "must be a string");
    report.summary = std::string{trim(it->get<std::string>())};
  }
  if (auto it = j.find("files"); it != j.end() && !it->is_null()) {
    if (!it->is_array())
      return bad("files", "must be an array of paths");
    for (auto& f : *it) {
      if (!f.is_string())
        return bad("files", "must be an array of paths, found " + f.dump());
      report.files.push_back(f.get<std::string>());
    }
  }
  if (auto it = j.find("usage"); it != j.end() && !it->is_null()) {
    if (!it->is_object())
      return bad("usage", "must be an object");
    report_usage u;
    // Absurd values are kept to a ceiling (with a warning) rather than
    // refused: the work is real, and the sums stay far from overflowing.
    auto clamped = [&](const char* key, const std::string& value,
                       const std::string& limit) {
      report.warnings.push_back(std::string{"usage."} + key + " " + value
                                + " is above " + limit + "; counted as "
                                + limit);
    };
    for (const char* key : {"input_tokens", "output_tokens"}) {
      auto k = it->find(key);
      if (k == it->end() || k->is_null())
        continue;
      // A count beyond int64 is unsigned in JSON: huge, not negative.
      if (!k->is_number_integer()
          || (!k->is_number_unsigned() && k->get<int64_t>() < 0))
        return bad(std::string{"usage."} + key,
                   "must be a non-negative integer, not " + k->dump());
      auto n = k->get<uint64_t>();
      if (n > max_report_tokens) {
        clamped(key, k->dump(), std::to_string(max_report_tokens));
        n = max_report_tokens;
      }
      (std::string_view{key} == "input_tokens" ? u.input_tokens
                                               : u.output_tokens)
        = n;
    }
    if (auto k = it->find("cost_usd"); k != it->end() && !k->is_null()) {
      if (!k->is_number() || !(k->get<double>() >= 0))
        return bad("usage.cost_usd",
                   "must be a non-negative number, not " + k->dump());
      u.cost_usd = k->get<double>();
      if (u.cost_usd > max_report_cost_usd) {
        clamped("cost_usd", k->dump(), json(max_report_cost_usd).dump());
        u.cost_usd = max_report_cost_usd;
      }
    }
    report.usage = u;
  }
  return {};
}

std::optional<worker_report> last_marker(std::string_view output) {
  auto done = output.rfind(done_marker);
  auto blocked = output.rfind(blocked_marker);
  if (done == std::string_view::npos && blocked == std::string_view::npos)
    return std::nullopt;
  worker_report report;
  report.source = report_source::marker;
  size_t after;
  if (blocked == std::string_view::npos
      || (done != std::string_view::npos && done > blocked)) {
    report.status = report_status::done;
    after = done + done_marker.size();
  } else {
    report.status = report_status::blocked;
    after = blocked + blocked_marker.size();
  }
  report.summary = std::string{trim(output.substr(after))};
  if (report.summary.size() > max_marker_summary)
    report.summary.resize(max_marker_summary);
  return report;
}

/// `text` on one line: whitespace runs collapsed, cut to max_reason.
std::string one_line(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : trim(text)) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty())
      out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  if (out.size() > max_reason) {
    out.resize(max_reason);
    out += "...";
  }
  return out;
}

} // namespace

const char* to_string(report_status x) {
  return x == report_status::done ? "done" : "blocked";
}

const char* to_string(report_source x) {
  return x == report_source::json ? "json" : "marker";
}

const char* to_string(worker_backend x) {
  switch (x) {
    case worker_backend::shell: return "shell";
    case worker_backend::agent: return "agent";
    default: return "scripted";
  }
}

std::optional<worker_backend> parse_worker_backend(std::string_view name) {
  if (name == "shell")
    return worker_backend::shell;
  if (name == "agent")
    return worker_backend::agent;
  if (name == "scripted")
    return worker_backend::scripted;
  return std::nullopt;
}

const char* to_string(verdict_kind x) {
  switch (x) {
    case verdict_kind::done: return "done";
    case verdict_kind::blocked: return "blocked";
    default: return "failed";
  }
}

report_reading read_report(std::string_view output) {
  report_reading reading;
  if (auto block = last_json_block(output)) {
    if (!block->closed) {
      reading.error = where(*block) + " is not closed";
      return reading;
    }
    json j;
    try {
      j = json::parse(block->text);
    } catch (const json::exception& e) {
      // parse_error, or out_of_range for a number beyond a double (1e400).
      reading.error = where(*block) + " is not valid JSON: " + e.what();
      return reading;
    }
    // A json block without "status" is an example or data, not a report.
    if (j.is_object() && j.contains("status")) {
      worker_report report;
      reading.error = to_report(j, *block, report);
      if (reading.error.empty())
        reading.report = std::move(report);
      return reading;
    }
  }
  reading.report = last_marker(output);
  return reading;
}

verdict judge_worker(worker_backend backend, const proc::run_result& result,
                     const report_reading& reading) {
  verdict v;
  v.report = reading.report;
  auto fail = [&](std::string reason) {
    v.kind = verdict_kind::failed;
    v.reason = std::move(reason);
    return v;
  };
  if (result.timed_out)
    return fail(result.describe());
  if (result.cancelled)
    return fail("cancelled");
  if (!reading.error.empty())
    return fail(reading.error);
  auto status
    = proc::to_string(proc::exit_status{result.exit_code, result.signal});
  if (reading.report && reading.report->status == report_status::blocked) {
    v.kind = verdict_kind::blocked;
    v.reason = one_line(reading.report->summary);
    if (v.reason.empty())
      v.reason = "blocked (no reason given)";
    return v;
  }
  if (backend != worker_backend::shell && !reading.report)
    return fail("no report (" + status + ")");
  if (!result.success()) {
    if (reading.report)
      return fail(status + " after reporting done");
    return fail(status);
  }
  v.kind = verdict_kind::done;
  v.reason = reading.report ? one_line(reading.report->summary) : "";
  return v;
}

} // namespace taskforce
