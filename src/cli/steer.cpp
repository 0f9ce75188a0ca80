#include "src/cli/steer.hpp"

#include "src/cli/cli.hpp"
#include "src/cli/run_driver.hpp"
#include "src/store/run_lock.hpp"

namespace fs = std::filesystem;

namespace taskforce::cli {

store::ledger open_ledger(const fs::path& root, bool write) {
  auto path = state_dir(root) / store::ledger_file_name;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw usage_error("no run in " + root.string()
                      + " yet (start one with taskforce run FILE)");
  store::ledger_options o;
  o.read_only = !write;
  return store::ledger::open(path, o);
}

store::run_row pick_run(const store::ledger& db, const std::string& run_id) {
  if (!run_id.empty()) {
    auto row = db.find_run(run_id);
    if (!row)
      throw usage_error("no run " + run_id);
    return *row;
  }
  if (auto row = db.latest_unfinished_run())
    return *row;
  if (auto row = db.latest_run())
    return *row;
  throw usage_error("no run yet (start one with taskforce run FILE)");
}

std::optional<std::string> driver_of(const fs::path& root) {
  auto holder = store::run_lock::holder(state_dir(root)
                                        / store::run_lock_file_name);
  if (!holder)
    return std::nullopt;
  return store::describe(*holder);
}

} // namespace taskforce::cli
