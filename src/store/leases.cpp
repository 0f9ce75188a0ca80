#include "src/store/leases.hpp"

#include <map>
#include <system_error>

#include "src/store/run_lock.hpp"
#include "src/store/sqlite.hpp"

namespace taskforce::store {

namespace {

scope::lease read_lease(const sqlite::statement& st) {
  scope::lease l;
  l.holder = st.text(0);
  if (!scope::from_string(st.text(1), l.kind))
    l.kind = scope::lease_kind::root; // unknown kinds are taken as roots
  l.name = st.text(2);
  return l;
}

/// The run the run lock's holder drives: "" while it has not named one
/// yet, nullopt when nobody holds the lock.
std::optional<std::string> driven_run(const std::filesystem::path& run_lock) {
  try {
    auto holder = run_lock::holder(run_lock);
    if (!holder)
      return std::nullopt;
    return holder->run_id;
  } catch (const std::system_error&) {
    // The lock cannot be asked: its leases are taken to be alive.
    return std::string{};
  }
}

} // namespace

std::vector<scope::lease> live_leases(sqlite::connection& c,
                                      const std::filesystem::path& run_lock,
                                      bool sweep) {
  std::vector<scope::lease> all;
  {
    auto st = c.use("SELECT holder, kind, name FROM bg_leases "
                    "ORDER BY holder, kind, name");
    while (st.step())
      all.push_back(read_lease(st));
  }
  std::optional<std::optional<std::string>> driven; // asked once, if at all
  std::vector<scope::lease> live;
  std::map<std::string, bool> stale;
  for (auto& l : all) {
    auto run = scope::run_task_of(l.holder);
    if (run) {
      if (!driven)
        driven = driven_run(run_lock);
      auto& d = *driven;
      if (!d || (!d->empty() && *d != run->first)) {
        stale[l.holder] = true;
        continue;
      }
    }
    live.push_back(std::move(l));
  }
  if (sweep)
    for (auto& [holder, _] : stale)
      drop_leases(c, holder);
  return live;
}

std::vector<scope::lease> leases_of(sqlite::connection& c,
                                    const std::string& holder) {
  auto st = c.use("SELECT holder, kind, name FROM bg_leases WHERE holder = ?1 "
                  "ORDER BY kind, name");
  st.bind(1, holder);
  std::vector<scope::lease> result;
  while (st.step())
    result.push_back(read_lease(st));
  return result;
}

void take_leases(sqlite::connection& c, const std::string& holder,
                 const std::vector<scope::claim>& claims) {
  for (auto& x : claims) {
    auto st = c.use("INSERT OR IGNORE INTO bg_leases (holder, kind, name) "
                    "VALUES (?1, ?2, ?3)");
    st.bind(1, holder).bind(2, to_string(x.kind)).bind(3, x.name);
    st.run();
  }
}

int drop_leases(sqlite::connection& c, const std::string& holder) {
  auto st = c.use("DELETE FROM bg_leases WHERE holder = ?1");
  st.bind(1, holder);
  st.run();
  return c.changes();
}

std::optional<scope::lease_conflict>
reserve(sqlite::connection& c, const std::filesystem::path& run_lock,
        const std::string& holder, const std::vector<scope::claim>& claims) {
  if (auto conflict
      = scope::find_conflict(holder, claims, live_leases(c, run_lock, true)))
    return conflict;
  take_leases(c, holder, claims);
  return std::nullopt;
}

} // namespace taskforce::store
