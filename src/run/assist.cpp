#include "src/run/assist.hpp"

#include <sys/stat.h>

#include <fstream>
#include <stdexcept>

#include "src/scope/physical.hpp"
#include "src/taskfile/checkbox.hpp"
#include "src/text/file.hpp"
#include "src/time/calendar.hpp"

namespace fs = std::filesystem;

namespace taskforce::run {

namespace {

std::string utc_of(int64_t ms) {
  return utc_text(ms, "%Y-%m-%dT%H:%M:%SZ");
}

/// One line of text: newlines would break the block's shape.
std::string one_line(std::string s) {
  for (auto& c : s)
    if (c == '\n' || c == '\r')
      c = ' ';
  return s;
}

} // namespace

std::string check_progress_file(const fs::path& root,
                                const std::string& progress_file,
                                std::string* relative) {
  if (progress_file.empty())
    return "";
  auto what = "run.progressFile \"" + progress_file + "\"";
  std::string rel = progress_file;
  fs::path given{progress_file};
  std::error_code ec;
  if (given.is_absolute()) {
    auto top = fs::weakly_canonical(root, ec);
    auto abs = fs::weakly_canonical(given, ec);
    auto inside = abs.lexically_relative(top);
    if (inside.empty() || *inside.begin() == "..")
      return what + " is outside the repository " + root.string();
    rel = inside.generic_string();
  }
  auto lexical = fs::path{rel}.lexically_normal();
  if (!lexical.empty() && *lexical.begin() == "..")
    return what + " is outside the repository " + root.string();
  scope::physical_root top{root};
  auto where = top.resolve(rel);
  if (!where.error.empty())
    return what + ": " + where.error;
  auto path = where.path;
  auto first = path.substr(0, path.find('/'));
  if (path.empty() || path == "." || first == ".git" || first == ".taskforce")
    return what
           + " must name a file of the repository outside .git and "
             ".taskforce";
  if (fs::is_directory(top.root() / path, ec))
    return what + " is a folder; name a file";
  if (relative)
    *relative = path;
  return "";
}

std::string progress_block(const progress_entry& e) {
  std::string out
    = "## " + one_line(e.task_id) + ": " + one_line(e.title) + "\n\n";
  out += "- state: " + e.state + "\n";
  out += "- finished: " + utc_of(e.time_ms) + "\n";
  out += "- run: " + e.run_id + "\n";
  out += "- attempt: " + std::to_string(e.attempt) + "\n";
  if (!e.reason.empty())
    out += "- reason: " + one_line(e.reason) + "\n";
  out += "\n";
  return out;
}

void append_progress(const fs::path& file, const std::string& block) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::app);
  out << block;
  out.flush();
  if (!out)
    throw std::runtime_error("cannot append to " + file.string());
}

bool check_box_in_file(const fs::path& file, const task_spec& task) {
  auto text = read_file(file);
  if (!text)
    throw std::runtime_error("cannot read " + file.string());
  auto checked = taskfile::check_box(*text, task);
  if (!checked)
    return false;
  if (*checked == *text)
    return true;
  // A rename over the file: a reader never sees half of it.
  auto tmp = file;
  tmp += ".taskforce-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << *checked;
    out.flush();
    if (!out)
      throw std::runtime_error("cannot write " + tmp.string());
  }
  struct stat st;
  if (::stat(file.c_str(), &st) == 0)
    ::chmod(tmp.c_str(), st.st_mode & 07777);
  std::error_code ec;
  fs::rename(tmp, file, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error("cannot replace " + file.string());
  }
  return true;
}

bool box_checked_in_file(const fs::path& file, const task_spec& task) {
  auto text = read_file(file);
  if (!text)
    return false;
  auto box = taskfile::find_checkbox(*text, task.line, task.title);
  return box && box->checked;
}

} // namespace taskforce::run
