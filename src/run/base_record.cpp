#include "src/run/base_record.hpp"

#include <algorithm>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "src/git/merge.hpp"
#include "src/text/join.hpp"

namespace taskforce::run {

using nlohmann::json;

namespace {

std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::optional<std::string> task_of(const std::string& task) {
  return task.empty() ? std::nullopt : std::optional<std::string>{task};
}

std::string text_at(const json& j, const char* key) {
  auto i = j.find(key);
  return i != j.end() && i->is_string() ? i->get<std::string>() : std::string{};
}

std::string short_id(const std::string& commit) {
  return commit.substr(0, 12);
}

} // namespace

base_record::base_record(store::ledger& db, std::string run_id)
  : db_(db), run_id_(std::move(run_id)) {}

void base_record::landing(const git::checkout_update& u) {
  json data{{"commit", u.commit}, {"base", u.base}, {"paths", u.paths}};
  db_.append_event(run_id_, task_of(u.task), "base.landing", dump(data),
                   store::wall_clock_ms());
}

void base_record::landed(const git::checkout_update& u, bool moved) {
  json data{{"commit", u.commit}, {"moved", moved}};
  db_.append_event(run_id_, task_of(u.task), "base.landed", dump(data),
                   store::wall_clock_ms());
}

void base_record::vouch(const std::string& tip, const std::string& why,
                        const std::string& task, uint64_t attempt) {
  json data{{"tip", tip}, {"why", why}};
  if (attempt > 0)
    data["attempt"] = attempt;
  db_.append_event(run_id_, task_of(task), "base.tip", dump(data),
                   store::wall_clock_ms());
}

void base_record::refused(const git::base_move& m, const std::string& what) {
  json data{
    {"from", m.from},
    {"to", m.to},
    {"what", what},
    {"tasks", std::vector<std::string>(m.tasks.begin(), m.tasks.end())}};
  db_.append_event(run_id_, std::nullopt, "base.refused", dump(data),
                   store::wall_clock_ms());
}

base_state read_base_state(const store::ledger& db, const std::string& run_id) {
  base_state out;
  // By commit, in the order they were written.
  std::map<std::string, size_t> order;
  std::map<std::string, git::checkout_update> open;
  size_t n = 0;
  for (auto& e : db.events(run_id)) {
    if (e.kind.rfind("base.", 0) != 0)
      continue;
    auto data = json::parse(e.data_json, nullptr, false);
    if (!data.is_object())
      continue;
    if (e.kind == "base.tip") {
      if (auto tip = text_at(data, "tip"); !tip.empty())
        out.vouched = tip;
    } else if (e.kind == "base.landing") {
      git::checkout_update u;
      u.commit = text_at(data, "commit");
      u.base = text_at(data, "base");
      u.task = e.task_id.value_or("");
      if (auto p = data.find("paths"); p != data.end() && p->is_array())
        for (auto& x : *p)
          if (x.is_string())
            u.paths.push_back(x.get<std::string>());
      if (u.commit.empty() || u.base.empty())
        continue;
      order[u.commit] = n++;
      open[u.commit] = std::move(u);
    } else if (e.kind == "base.landed") {
      auto commit = text_at(data, "commit");
      open.erase(commit);
      if (auto m = data.find("moved");
          m != data.end() && m->is_boolean() && m->get<bool>())
        out.vouched = commit;
    }
  }
  std::vector<std::pair<size_t, git::checkout_update>> sorted;
  for (auto& [commit, u] : open)
    sorted.emplace_back(order[commit], std::move(u));
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.first < b.first;
  });
  for (auto& s : sorted)
    out.unfinished.push_back(std::move(s.second));
  return out;
}

std::vector<std::string> finish_landings(git::repository& repo,
                                         store::ledger& db,
                                         const std::string& run_id,
                                         const std::string& base_branch) {
  std::vector<std::string> notes;
  base_record record{db, run_id};
  for (auto& u : read_base_state(db, run_id).unfinished) {
    auto tip = git::branch_tip(repo, base_branch);
    auto merge = short_id(u.commit);
    if (tip == u.base) {
      // Cut short before the base moved: nothing to complete.
      record.landed(u, false);
      continue;
    }
    if (tip == u.commit) {
      auto r = git::complete_checkout(repo, base_branch, u);
      if (!r.kept.empty())
        notes.push_back("the update of the main checkout for merge " + merge
                        + " (cut short by a stop) left alone what changed "
                          "there since: "
                        + join(r.kept));
      record.landed(u, true);
      continue;
    }
    // The base moved elsewhere since: what it holds now is not this
    // merge's to complete.
    bool in_base = tip && git::is_ancestor(repo, u.commit, *tip);
    notes.push_back("the update of the main checkout for merge " + merge
                    + " was cut short, and " + base_branch
                    + (in_base ? " moved on from it" : " no longer has it")
                    + " since: the checkout was left as it is (git status "
                      "shows what differs)");
    record.landed(u, in_base);
  }
  return notes;
}

} // namespace taskforce::run
