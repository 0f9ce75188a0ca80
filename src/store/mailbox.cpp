#include "src/store/mailbox.hpp"

#include <algorithm>

#include "src/store/ledger.hpp"
#include "src/store/sqlite.hpp"
#include "src/text/enum_name.hpp"

namespace taskforce::store {

const char* to_string(mail_kind x) {
  switch (x) {
    case mail_kind::message: return "message";
    case mail_kind::answer: return "answer";
    case mail_kind::report: return "report";
  }
  return "unknown";
}

bool from_string(std::string_view name, mail_kind& out) {
  return from_name(
    name, {mail_kind::message, mail_kind::answer, mail_kind::report}, out);
}

const char* to_string(mail_direction x) {
  return x == mail_direction::up ? "up" : "down";
}

bool from_string(std::string_view name, mail_direction& out) {
  return from_name(name, {mail_direction::up, mail_direction::down}, out);
}

mail_direction direction_of(mail_kind x) {
  return x == mail_kind::report ? mail_direction::up : mail_direction::down;
}

template<class F>
void columns(mail_row& m, F&& f) {
  f("id", m.id);
  f("run_id", m.run_id);
  f("task_id", m.task_id);
  f("kind", m.kind);
  f("direction", m.direction);
  f("text", m.text);
  f("created_ms", m.created_ms);
  f("delivered_ms", m.delivered_ms);
  f("attempt", m.attempt);
}

namespace {

const std::string& mail_columns() {
  static const std::string s = sqlite::select_list<mail_row>();
  return s;
}

bool exists(sqlite::connection& c, const char* query, const std::string& run,
            const std::string* task = nullptr) {
  auto st = c.use(query);
  st.bind(1, run);
  if (task)
    st.bind(2, *task);
  return st.step();
}

} // namespace

mail_row mailbox::post(const new_mail& m, int64_t now_ms) {
  auto& c = *db_.db_;
  auto direction = direction_of(m.kind);
  if (direction == mail_direction::down && !m.task_id)
    throw ledger_error(ledger_errc::invalid_transition,
                       std::string{"a "} + to_string(m.kind)
                         + " goes to a task; none was named");
  sqlite::transaction txn{c, true};
  if (!exists(c, "SELECT 1 FROM runs WHERE id = ?1", m.run_id))
    throw ledger_error(ledger_errc::not_found, "no run " + m.run_id);
  if (m.task_id
      && !exists(c, "SELECT 1 FROM tasks WHERE run_id = ?1 AND task_id = ?2",
                 m.run_id, &*m.task_id))
    throw ledger_error(ledger_errc::not_found,
                       "no task " + *m.task_id + " in run " + m.run_id);
  {
    auto st = c.use("INSERT INTO mail (run_id, task_id, kind, direction, "
                    "text, created_ms, attempt) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    st.bind(1, m.run_id).bind(2, m.task_id).bind(3, to_string(m.kind));
    st.bind(4, to_string(direction)).bind(5, m.text).bind(6, now_ms);
    st.bind(7, m.attempt);
    st.run();
  }
  mail_row row{c.last_insert_rowid(),
               m.run_id,
               m.task_id,
               m.kind,
               direction,
               m.text,
               now_ms,
               std::nullopt,
               m.attempt};
  txn.commit();
  return row;
}

std::vector<mail_row> mailbox::take_undelivered(const std::string& run_id,
                                                const std::string& task_id,
                                                int64_t now_ms,
                                                std::optional<int> attempt) {
  auto& c = *db_.db_;
  // Mostly there is nothing to take: a read says so without the write lock,
  // which the run's ledger connection needs for every transition (SQLite
  // resolves two writers by sleeping). Mail posted after this read is
  // taken by the next call, as if it had been posted after the update.
  if (!has_undelivered(run_id, task_id))
    return {};
  // The write lock is taken at BEGIN: a second taker waits here and then
  // finds everything this one took already delivered.
  sqlite::transaction txn{c, true};
  std::vector<mail_row> result;
  {
    auto st = c.use("UPDATE mail SET delivered_ms = ?3, "
                    "attempt = coalesce(?4, attempt) "
                    "WHERE run_id = ?1 AND task_id = ?2 "
                    "AND direction = 'down' AND delivered_ms IS NULL "
                    "RETURNING "
                    + mail_columns());
    st.bind(1, run_id).bind(2, task_id).bind(3, now_ms).bind(4, attempt);
    while (st.step())
      result.push_back(sqlite::read_row<mail_row>(st));
  }
  txn.commit();
  // RETURNING has no order of its own.
  std::sort(result.begin(), result.end(),
            [](const mail_row& a, const mail_row& b) {
              return a.id < b.id;
            });
  return result;
}

bool mailbox::has_undelivered(const std::string& run_id,
                              const std::string& task_id) const {
  auto any = db_.db_->use("SELECT EXISTS (SELECT 1 FROM mail WHERE run_id = ?1 "
                          "AND task_id = ?2 AND direction = 'down' "
                          "AND delivered_ms IS NULL)");
  any.bind(1, run_id).bind(2, task_id);
  return any.step() && any.integer(0) != 0;
}

std::vector<mail_row>
mailbox::list(const std::string& run_id,
              const std::optional<std::string>& task_id) const {
  auto& c = *db_.db_;
  auto st = c.use("SELECT " + mail_columns()
                  + " FROM mail WHERE run_id = ?1 AND "
                    "(?2 IS NULL OR task_id = ?2) ORDER BY id");
  st.bind(1, run_id).bind(2, task_id);
  std::vector<mail_row> result;
  while (st.step())
    result.push_back(sqlite::read_row<mail_row>(st));
  return result;
}

std::map<std::string, int>
mailbox::undelivered_counts(const std::string& run_id) const {
  auto& c = *db_.db_;
  auto st = c.use("SELECT task_id, count(*) FROM mail WHERE run_id = ?1 "
                  "AND direction = 'down' AND delivered_ms IS NULL "
                  "GROUP BY task_id");
  st.bind(1, run_id);
  std::map<std::string, int> result;
  while (st.step())
    result[st.text(0)] = st.integer(1);
  return result;
}

} // namespace taskforce::store
