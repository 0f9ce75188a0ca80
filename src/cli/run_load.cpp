#include "src/cli/run_load.hpp"

#include <map>

#include "actors/orchestrator.hpp"
#include "src/cli/cli.hpp"
#include "src/taskfile/parse.hpp"
#include "src/text/file.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

std::string relative_to(const fs::path& root, const std::string& file) {
  auto abs = fs::weakly_canonical(fs::absolute(file));
  auto rel = abs.lexically_relative(fs::weakly_canonical(root));
  if (rel.empty() || *rel.begin() == "..")
    return abs.string();
  return rel.generic_string();
}

std::vector<task_spec> parse_task_file(const fs::path& root,
                                       const std::string& file_rel,
                                       const config& cfg) {
  fs::path path = file_rel;
  if (path.is_relative())
    path = root / path;
  auto text = read_file(path);
  if (!text)
    throw usage_error(path.string() + ": cannot read the task file");
  auto popts = taskfile::options_from(cfg.run);
  popts.working_directory = root.string();
  popts.repository = root.string();
  auto parsed = taskfile::parse(*text, file_rel, popts);
  if (!parsed.ok()) {
    std::string msg;
    for (auto& e : parsed.errors) {
      if (!msg.empty())
        msg += "\ntaskforce: ";
      msg += taskfile::format_error(file_rel, e);
    }
    throw usage_error(msg);
  }
  if (parsed.tasks.empty())
    throw usage_error(file_rel + ": no tasks");
  return std::move(parsed.tasks);
}

run_tasks load_run_tasks(const fs::path& root, const store::ledger& db,
                         const store::run_row& run, const config& cfg) {
  run_tasks out;
  std::map<std::string, store::task_row> rows;
  for (auto& r : db.tasks(run.id))
    rows[r.id] = r;
  auto take = [&](const std::string& file) {
    for (auto& s : parse_task_file(root, file, cfg)) {
      auto row = rows.find(s.id);
      if (row == rows.end())
        throw usage_error(file + ": task " + s.id + " is not part of run "
                          + run.id
                          + " (the file changed); abort the run to start "
                            "over");
      out.rows.push_back(row->second);
      out.specs.push_back(std::move(s));
    }
  };
  take(run.file);
  out.added_files = db.added_files(run.id);
  for (auto& f : out.added_files)
    take(f);
  return out;
}

std::vector<run::task_record> records_of(const plan::task_graph& graph,
                                         const run_tasks& tasks) {
  std::vector<task_state> states;
  std::vector<std::string> reasons;
  for (auto& r : tasks.rows) {
    states.push_back(r.state);
    reasons.push_back(r.reason.value_or(""));
  }
  auto records = taskforce::records_of(graph, states, reasons);
  for (size_t i = 0; i < records.size() && i < tasks.rows.size(); ++i)
    if (tasks.rows[i].hold_lifted)
      records[i].hold = false;
  return records;
}

} // namespace taskforce::cli
