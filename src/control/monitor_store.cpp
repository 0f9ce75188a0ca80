#include "src/control/monitor_store.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "src/control/validation.hpp"
#include "src/run/run_setup.hpp"
#include "src/store/ledger.hpp"
#include "src/store/sqlite.hpp"
#include "src/text/enum_name.hpp"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace taskforce::control {

// --- names -------------------------------------------------------------------

const char* to_string(monitor_state x) {
  switch (x) {
    case monitor_state::running: return "running";
    case monitor_state::done: return "done";
    case monitor_state::killed: return "killed";
    case monitor_state::timeout: return "timeout";
    case monitor_state::failed: return "failed";
    case monitor_state::unavailable: return "unavailable";
  }
  return "unknown";
}

bool from_string(std::string_view name, monitor_state& out) {
  return from_name(name,
                   {monitor_state::running, monitor_state::done,
                    monitor_state::killed, monitor_state::timeout,
                    monitor_state::failed, monitor_state::unavailable},
                   out);
}

// --- wake patterns -----------------------------------------------------------

std::regex compile_wake_pattern(const std::string& pattern) {
  if (pattern.size() > max_wake_pattern_chars)
    throw control_error(control_errc::bad_request,
                        "invalid wake_pattern: longer than "
                          + std::to_string(max_wake_pattern_chars)
                          + " characters");
  try {
    return std::regex{pattern, std::regex::ECMAScript};
  } catch (const std::regex_error& e) {
    throw control_error(control_errc::bad_request,
                        std::string{"invalid wake_pattern: "} + e.what());
  }
}

wake_matcher::wake_matcher(const std::string& pattern, size_t overlap)
  : re_(compile_wake_pattern(pattern)), overlap_(overlap) {}

bool wake_matcher::feed(std::string_view chunk) {
  // Searched in slices, each with the end of what came before (where a
  // match may start): std::regex matches recursively, and one search over
  // a large piece of output could overflow the stack.
  while (!matched_ && !chunk.empty()) {
    auto slice = chunk.substr(0, overlap_);
    chunk.remove_prefix(slice.size());
    carry_.append(slice);
    try {
      matched_ = std::regex_search(carry_, re_);
    } catch (const std::regex_error&) {
      // Too complex for this slice (error_complexity, error_stack): the
      // pattern did not match it.
    }
    if (carry_.size() > overlap_)
      carry_.erase(0, carry_.size() - overlap_);
  }
  return matched_;
}

// --- files -------------------------------------------------------------------

std::string new_owner_id(const std::string& kind) {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%08x%08x", static_cast<unsigned>(rd()),
                static_cast<unsigned>(rd()));
  return kind + ":" + buf;
}

fs::path monitor_log_file(const fs::path& repository, const std::string& id) {
  return run::state_dir(repository) / "logs" / "monitors" / (id + ".log");
}

fs::path owner_lock_file(const fs::path& repository, const std::string& owner) {
  auto name = owner;
  for (auto& ch : name)
    if (ch == ':' || ch == '/')
      ch = '-';
  return run::state_dir(repository) / "monitors" / (name + ".lock");
}

owner_lock::owner_lock(const fs::path& repository, const std::string& owner,
                       int64_t pid) {
  auto file = owner_lock_file(repository, owner);
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  int rc = -1;
  if (fd_ >= 0) {
    do {
      rc = ::flock(fd_, LOCK_EX | LOCK_NB);
    } while (rc < 0 && errno == EINTR);
  }
  if (rc < 0) {
    auto why = std::string{std::strerror(errno)};
    if (fd_ >= 0)
      ::close(fd_);
    throw control_error(control_errc::unavailable,
                        "cannot take the lock " + file.string() + ": " + why);
  }
  write_pid(fd_, pid);
}

owner_lock::~owner_lock() {
  if (fd_ >= 0)
    ::close(fd_);
}

int owner_lock::inheritable_fd() {
  ::fcntl(fd_, F_SETFD, ::fcntl(fd_, F_GETFD) & ~FD_CLOEXEC);
  return fd_;
}

void owner_lock::write_pid(int fd, int64_t pid) {
  auto text = std::to_string(pid) + "\n";
  if (::ftruncate(fd, 0) == 0) [[maybe_unused]]
    auto n = ::pwrite(fd, text.data(), text.size(), 0);
}

int64_t owner_lock::pid_of(const fs::path& repository,
                           const std::string& owner) {
  std::ifstream in(owner_lock_file(repository, owner));
  int64_t pid = -1;
  if (!(in >> pid))
    return -1;
  return pid;
}

bool lock_held(const fs::path& lock) {
  int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  int rc;
  do {
    rc = ::flock(fd, LOCK_EX | LOCK_NB);
  } while (rc < 0 && errno == EINTR);
  bool held = rc < 0 && errno == EWOULDBLOCK;
  if (rc == 0)
    ::flock(fd, LOCK_UN);
  ::close(fd);
  return held;
}

log_piece read_log(const fs::path& log_file, int64_t offset, int64_t max,
                   bool ended) {
  if (offset < 0)
    throw control_error(control_errc::bad_request,
                        "offset must be 0 or more, not "
                          + std::to_string(offset));
  log_piece out;
  out.offset = offset;
  std::ifstream in(log_file, std::ios::binary);
  if (in) {
    in.seekg(0, std::ios::end);
    out.size = static_cast<int64_t>(in.tellg());
    if (offset < out.size && max > 0) {
      in.seekg(offset);
      out.data.resize(static_cast<size_t>(std::min(max, out.size - offset)));
      in.read(out.data.data(), static_cast<std::streamsize>(out.data.size()));
      out.data.resize(static_cast<size_t>(in.gcount()));
    }
  }
  out.next_offset = offset + static_cast<int64_t>(out.data.size());
  out.eof = ended && out.next_offset >= out.size;
  return out;
}

// --- checking a request ------------------------------------------------------

new_monitor check_monitor_spec(const fs::path& repository,
                               const std::string& command,
                               const std::string& cwd,
                               const std::string& wake_pattern,
                               int64_t timeout_ms, const std::string& session) {
  if (command.find_first_not_of(" \t\r\n") == std::string::npos)
    throw control_error(control_errc::bad_request,
                        "a monitor needs a command (a shell command line)");
  if (timeout_ms < 0)
    throw control_error(control_errc::bad_request,
                        "timeout_ms must be 0 (none) or more, not "
                          + std::to_string(timeout_ms));
  new_monitor m;
  m.command = command;
  m.cwd = repository_relative(repository, resolve_cwd(repository, cwd));
  if (!wake_pattern.empty()) {
    compile_wake_pattern(wake_pattern);
    m.wake_pattern = wake_pattern;
  }
  m.timeout_ms = timeout_ms;
  if (!session.empty())
    m.session = session;
  return m;
}

// --- the store ---------------------------------------------------------------

template<class F>
void columns(monitor_row& m, F&& f) {
  f("id", m.id);
  f("seq", m.seq);
  f("command", m.command);
  f("cwd", m.cwd);
  f("wake_pattern", m.wake_pattern);
  f("timeout_ms", m.timeout_ms);
  f("session", m.session);
  f("state", m.state);
  f("exit_code", m.exit_code);
  f("pid", m.pid);
  f("owner", m.owner);
  f("version", m.version);
  f("created_ms", m.created_ms);
  f("updated_ms", m.updated_ms);
}

namespace {

const std::string& monitor_columns() {
  static const std::string s = store::sqlite::select_list<monitor_row>();
  return s;
}

std::optional<monitor_row> read_one(store::sqlite::connection& c,
                                    const std::string& id) {
  auto st
    = c.use("SELECT " + monitor_columns() + " FROM monitors WHERE id = ?1");
  st.bind(1, id);
  if (!st.step())
    return std::nullopt;
  return store::sqlite::read_row<monitor_row>(st);
}

std::vector<monitor_row> read_running(store::sqlite::connection& c) {
  std::vector<monitor_row> rows;
  auto st = c.use("SELECT " + monitor_columns()
                  + " FROM monitors WHERE state = 'running' ORDER BY seq");
  while (st.step())
    rows.push_back(store::sqlite::read_row<monitor_row>(st));
  return rows;
}

void append_event(store::sqlite::connection& c, const std::string& id,
                  const std::string& kind, const char* from, const char* to,
                  const json& detail, int64_t now_ms) {
  auto st = c.use("INSERT INTO bg_events (monitor_id, kind, from_state, "
                  "to_state, detail, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  st.bind(1, id).bind(2, kind).bind(3, from).bind(4, to);
  st.bind(5, detail.dump()).bind(6, now_ms);
  st.run();
}

/// Moves a running row to `to`: false when it is not running any more.
bool swap_end(store::sqlite::connection& c, const monitor_row& row,
              monitor_state to, std::optional<int64_t> exit_code,
              int64_t now_ms) {
  auto st = c.use("UPDATE monitors SET state = ?1, exit_code = ?2, "
                  "version = version + 1, updated_ms = ?3 WHERE id = ?4 AND "
                  "state = 'running' AND version = ?5");
  st.bind(1, to_string(to)).bind(2, exit_code).bind(3, now_ms);
  st.bind(4, row.id).bind(5, row.version);
  st.run();
  return c.changes() == 1;
}

} // namespace

bool monitor_store::is_live(const monitor_row& row,
                            const std::string& current) const {
  if (row.state != monitor_state::running)
    return false;
  if (row.owner == current)
    return true;
  return lock_held(owner_lock_file(repository_, row.owner));
}

monitor_row monitor_store::create(const new_monitor& m,
                                  const std::string& owner, uint64_t max_live,
                                  int64_t now_ms) {
  auto& c = *db_.db_;
  store::sqlite::transaction txn{c, true};
  uint64_t live = 0;
  for (auto& row : read_running(c))
    if (is_live(row, owner))
      ++live;
  if (live >= max_live)
    throw control_error(
      control_errc::limit,
      "Monitor limit reached: " + std::to_string(live) + " live monitor"
        + (live == 1 ? "" : "s") + " (control.maxMonitors is "
        + std::to_string(max_live) + "); kill one or wait for one to end");
  auto seq = c.scalar("SELECT COALESCE(MAX(seq), 0) + 1 FROM monitors");
  monitor_row row;
  row.id = "mon-" + std::to_string(seq);
  row.seq = seq;
  row.command = m.command;
  row.cwd = m.cwd;
  row.wake_pattern = m.wake_pattern;
  row.timeout_ms = m.timeout_ms;
  row.session = m.session;
  row.state = monitor_state::running;
  row.owner = owner;
  row.created_ms = now_ms;
  row.updated_ms = now_ms;
  auto st = c.use("INSERT INTO monitors (id, seq, command, cwd, wake_pattern, "
                  "timeout_ms, session, state, owner, version, created_ms, "
                  "updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                  "'running', ?8, 0, ?9, ?9)");
  st.bind(1, row.id).bind(2, row.seq).bind(3, row.command).bind(4, row.cwd);
  st.bind(5, row.wake_pattern).bind(6, row.timeout_ms).bind(7, row.session);
  st.bind(8, owner).bind(9, now_ms);
  st.run();
  append_event(c, row.id, "monitor.created", nullptr, "running",
               json{{"command", row.command}, {"cwd", row.cwd}}, now_ms);
  txn.commit();
  return row;
}

monitor_row monitor_store::set_pid(const std::string& id, int64_t pid,
                                   int64_t now_ms) {
  auto& c = *db_.db_;
  store::sqlite::transaction txn{c, true};
  auto st = c.use("UPDATE monitors SET pid = ?1, version = version + 1, "
                  "updated_ms = ?2 WHERE id = ?3 AND state = 'running'");
  st.bind(1, pid).bind(2, now_ms).bind(3, id);
  st.run();
  if (c.changes() != 1)
    throw control_error(control_errc::invalid_state,
                        "monitor " + id + " is not running");
  append_event(c, id, "monitor.started", "running", "running",
               json{{"pid", pid}}, now_ms);
  auto row = read_one(c, id);
  txn.commit();
  return *row;
}

std::optional<monitor_row>
monitor_store::finish(const std::string& id, monitor_state to,
                      std::optional<int64_t> exit_code, int64_t now_ms,
                      const std::string& reason) {
  auto& c = *db_.db_;
  store::sqlite::transaction txn{c, true};
  auto row = read_one(c, id);
  if (!row || row->state != monitor_state::running
      || !swap_end(c, *row, to, exit_code, now_ms))
    return std::nullopt;
  json detail = json::object();
  if (exit_code)
    detail["exit_code"] = *exit_code;
  if (!reason.empty())
    detail["reason"] = reason;
  append_event(c, id, std::string{"monitor."} + to_string(to), "running",
               to_string(to), detail, now_ms);
  auto after = read_one(c, id);
  txn.commit();
  return after;
}

bool monitor_store::mark_ready(const std::string& id, int64_t now_ms) {
  auto& c = *db_.db_;
  store::sqlite::transaction txn{c, true};
  if (!read_one(c, id))
    return false;
  auto st = c.use("SELECT 1 FROM bg_events WHERE monitor_id = ?1 AND kind = "
                  "'monitor.ready'");
  st.bind(1, id);
  if (st.step())
    return false;
  append_event(c, id, "monitor.ready", nullptr, nullptr, json::object(),
               now_ms);
  txn.commit();
  return true;
}

bool monitor_store::is_ready(const std::string& id) const {
  auto& c = *db_.db_;
  auto st = c.use("SELECT 1 FROM bg_events WHERE monitor_id = ?1 AND kind = "
                  "'monitor.ready'");
  st.bind(1, id);
  return st.step();
}

std::string monitor_store::reason_of(const std::string& id) const {
  auto& c = *db_.db_;
  auto st = c.use("SELECT detail FROM bg_events WHERE monitor_id = ?1 AND "
                  "to_state IS NOT NULL AND to_state != 'running' ORDER BY id "
                  "DESC LIMIT 1");
  st.bind(1, id);
  if (!st.step())
    return {};
  auto detail = json::parse(st.text(0), nullptr, false);
  if (detail.is_object() && detail.contains("reason")
      && detail["reason"].is_string())
    return detail["reason"].get<std::string>();
  return {};
}

std::optional<monitor_row> monitor_store::get(const std::string& id) const {
  return read_one(*db_.db_, id);
}

monitor_row monitor_store::require(const std::string& id) const {
  auto row = get(id);
  if (!row)
    throw control_error(control_errc::not_found, "no monitor " + id);
  return *row;
}

std::vector<monitor_row> monitor_store::list() const {
  std::vector<monitor_row> rows;
  auto st = db_.db_->use("SELECT " + monitor_columns()
                         + " FROM monitors ORDER BY seq");
  while (st.step())
    rows.push_back(store::sqlite::read_row<monitor_row>(st));
  return rows;
}

monitor_view monitor_store::view(const monitor_row& row,
                                 const std::string& current) const {
  monitor_view v;
  v.row = row;
  v.live = is_live(row, current);
  v.ready = is_ready(row.id);
  v.log_file = monitor_log_file(repository_, row.id).string();
  v.reason = reason_of(row.id);
  return v;
}

std::string to_json(const monitor_view& m) {
  auto& r = m.row;
  json j;
  j["id"] = r.id;
  j["command"] = r.command;
  j["cwd"] = r.cwd;
  j["wake_pattern"] = r.wake_pattern ? json(*r.wake_pattern) : json(nullptr);
  j["timeout_ms"] = r.timeout_ms;
  j["session"] = r.session ? json(*r.session) : json(nullptr);
  j["state"] = to_string(r.state);
  j["exit_code"] = r.exit_code ? json(*r.exit_code) : json(nullptr);
  j["pid"] = r.pid ? json(*r.pid) : json(nullptr);
  j["owner"] = r.owner;
  j["live"] = m.live;
  j["ready"] = m.ready;
  j["log_file"] = m.log_file;
  j["reason"] = m.reason;
  j["created_ms"] = r.created_ms;
  j["updated_ms"] = r.updated_ms;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<monitor_row> monitor_store::reconcile(const std::string& current,
                                                  int64_t now_ms) {
  auto& c = *db_.db_;
  std::vector<monitor_row> changed;
  store::sqlite::transaction txn{c, true};
  for (auto& row : read_running(c)) {
    if (is_live(row, current))
      continue;
    if (!swap_end(c, row, monitor_state::unavailable, std::nullopt, now_ms))
      continue;
    std::string reason = "its owner (" + row.owner
                         + ") went away while it was running; its process "
                           "cannot be watched or controlled from here";
    append_event(c, row.id, "monitor.unavailable", "running", "unavailable",
                 json{{"reason", reason}}, now_ms);
    if (auto after = read_one(c, row.id))
      changed.push_back(*after);
  }
  txn.commit();
  return changed;
}

} // namespace taskforce::control
