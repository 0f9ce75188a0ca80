#include "src/pool/admission.hpp"
#include "src/text/strings.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_set>

#include "src/time/duration.hpp"

namespace taskforce::pool {

namespace {

/// Idle pools kept for reuse; more are dropped when they empty, so a server
/// that sees many sessions keeps a bounded number of pools.
constexpr size_t kept_idle_pools = 16;

/// Spare holder nodes kept for reuse.
constexpr size_t kept_spare_holders = 64;

/// Child sessions whose idle is remembered at most; beyond, the oldest idle
/// is forgotten early (its late bind then waits for the next release).
constexpr size_t kept_idles = 16384;

/// Started children kept untied at most; beyond, the oldest is forgotten
/// (its nested calls then find no parent to borrow from).
constexpr size_t kept_untied = 256;

std::string quoted(const std::string& x) {
  return in_quotes(x, '\'');
}

} // namespace

// -- outcome ------------------------------------------------------------------

void outcome::clear() {
  grants.clear();
  failures.clear();
  events.clear();
  forced.clear();
  arms.clear();
}

bool outcome::empty() const {
  return grants.empty() && failures.empty() && events.empty() && forced.empty()
         && arms.empty();
}

// -- intrusive lines ----------------------------------------------------------

template<int Links>
void admission::line<Links>::push_back(holder* x) {
  x->prev[Links] = tail;
  x->next[Links] = nullptr;
  if (tail != nullptr)
    tail->next[Links] = x;
  else
    head = x;
  tail = x;
}

template<int Links>
void admission::line<Links>::erase(holder* x) {
  if (x->prev[Links] != nullptr)
    x->prev[Links]->next[Links] = x->next[Links];
  else
    head = x->next[Links];
  if (x->next[Links] != nullptr)
    x->next[Links]->prev[Links] = x->prev[Links];
  else
    tail = x->prev[Links];
  x->prev[Links] = nullptr;
  x->next[Links] = nullptr;
}

// -- constructors -------------------------------------------------------------

admission::admission(pool_config cfg) : cfg_(std::move(cfg)) {
  holders_.reserve(64);
  scratch_.reserve(16);
}

// -- connections --------------------------------------------------------------

uint64_t admission::attach(bool listening) {
  auto id = next_connection_++;
  connections_.emplace(id, connection_state{listening, false});
  return id;
}

bool admission::subscribe(uint64_t connection) {
  auto i = connections_.find(connection);
  if (i == connections_.end() || !i->second.listening)
    return false;
  if (!i->second.subscribed) {
    i->second.subscribed = true;
    subscribers_.push_back(connection);
  }
  return true;
}

bool admission::listening(uint64_t connection) const {
  if (connection == 0)
    return false;
  auto i = connections_.find(connection);
  return i != connections_.end() && i->second.listening;
}

std::vector<std::string> admission::detach(uint64_t connection, int64_t now) {
  out_.clear();
  std::vector<std::string> result;
  if (connection == 0)
    return result;
  if (auto i = connections_.find(connection); i != connections_.end()) {
    if (i->second.subscribed)
      subscribers_.erase(
        std::find(subscribers_.begin(), subscribers_.end(), connection));
    connections_.erase(i);
  }
  // Waits first, so permits freed below never go to this connection's own
  // waiters only to be released again.
  scratch_.clear();
  for (auto h = queued_line_.head; h != nullptr; h = h->next[1])
    if (h->connection == connection)
      scratch_.push_back(h);
  for (auto h = running_line_.head; h != nullptr; h = h->next[1])
    if (h->connection == connection)
      scratch_.push_back(h);
  auto victims = scratch_;
  for (auto h : victims) {
    // A granted detached permit outlives its connection: it is orphaned,
    // and ends by release, end, idle or the watchdog like any other.
    if (h->state == phase::running && h->detached) {
      h->connection = 0;
      h->listened = false;
      continue;
    }
    // Events still go out: a connection that closed its input may read on.
    result.push_back(*h->name);
    if (h->state == phase::queued)
      cancel(*h, release_reason::disconnected, now);
    else
      finish(*h, release_reason::disconnected, now);
  }
  ensure_timers(now);
  return result;
}

// -- pool operations ----------------------------------------------------------

acquire_result admission::refuse(errc code, std::string message) {
  acquire_result result;
  result.status = acquire_status::failed;
  result.code = code;
  result.message = std::move(message);
  return result;
}

// Harnesses spell the same tool differently (Claude Code's `Task`,
// OpenCode's `task`): names match without regard to ASCII case.
bool admission::is_subagent_tool(const std::string& tool) const {
  auto same = [&tool](const std::string& name) {
    return name.size() == tool.size()
           && std::equal(
             name.begin(), name.end(), tool.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a))
                      == std::tolower(static_cast<unsigned char>(b));
             });
  };
  const auto& names = cfg_.subagent_tool_names;
  return std::any_of(names.begin(), names.end(), same);
}

acquire_result admission::acquire(acquire_request&& req, int64_t now) {
  out_.clear();
  if (stopped_)
    return refuse(errc::shutting_down, "the pool is shutting down");
  acquire_result result;
  // Not a subagent call: answered at once, nothing counted or recorded.
  if (!req.tool.empty() && !is_subagent_tool(req.tool)) {
    result.value.counted = false;
    return result;
  }
  if (req.holder.empty())
    return refuse(errc::bad_request, "acquire needs a non-empty holder");
  if (req.session.empty())
    return refuse(errc::bad_request, "acquire needs a non-empty session");
  if (auto i = holders_.find(req.holder); i != holders_.end())
    return refuse(errc::duplicate_holder,
                  "holder " + quoted(req.holder) + " is already "
                    + (i->second.state == phase::queued ? "queued" : "running")
                    + " on this server");
  if (!req.parent.empty()) {
    // Nested: a free permit of the parent's pool, else the parent's own
    // permit, else pool_full. Never queues, so a child cannot block the
    // ancestor that waits for it. Only a foreground call borrows: its caller
    // waits for it, so the permit still runs one call at a time; a
    // background call runs beside its caller and needs a permit of its own.
    // A waiting caller lends to one call at a time for the same reason.
    auto parent = find_parent(req.parent, req.session);
    auto p = parent != nullptr ? parent->slot->pool : &pool_for(req.session);
    const holder* borrower = nullptr;
    permit* slot = nullptr;
    bool lent = false;
    if (has_free(*p)) {
      slot = take_permit(*p);
    } else if (cfg_.nested == nested_policy::lend && parent != nullptr
               && req.kind == holder_kind::foreground
               && (borrower = borrower_of(req.parent)) == nullptr) {
      slot = parent->slot;
      lent = true;
    } else {
      std::string why;
      if (cfg_.nested == nested_policy::fail_fast)
        why = "nested is fail_fast";
      else if (parent == nullptr)
        why = "parent " + quoted(req.parent)
              + " holds no permit to lend (it is neither a running holder "
                "nor the child session of one in session "
              + quoted(req.session) + ")";
      else if (req.kind == holder_kind::background)
        why = "a background call cannot borrow the permit of parent "
              + quoted(req.parent)
              + ": the parent does not wait for it (a foreground call can)";
      else
        why = "parent " + quoted(req.parent) + " already lends its permit to "
              + quoted(*borrower->name)
              + ", and a waiting parent lends to one call at a time";
      return refuse(errc::pool_full,
                    "no permit is free in pool " + quoted(*p->key) + " ("
                      + std::to_string(p->in_use)
                      + " in use) and a nested acquire never queues; " + why);
    }
    auto& h = new_holder(std::move(req.holder));
    h.session = std::move(req.session);
    h.child_session = std::move(req.child_session);
    h.caller = std::move(req.parent);
    h.kind = req.kind;
    h.connection = req.connection;
    h.listened = listening(req.connection);
    h.pool = p;
    h.detached = req.detach;
    h.since = now;
    grant_running(h, slot, lent, now);
    result.value.permit = slot->number;
    result.value.lent = lent;
    ensure_timers(now);
    return result;
  }
  auto& p = pool_for(req.session);
  auto& h = new_holder(std::move(req.holder));
  h.session = std::move(req.session);
  h.child_session = std::move(req.child_session);
  h.kind = req.kind;
  h.connection = req.connection;
  h.listened = listening(req.connection);
  h.pool = &p;
  h.detached = req.detach;
  h.since = now;
  if (has_free(p)) {
    // A free permit means nobody waits: every freed permit goes straight to
    // the oldest waiter.
    auto slot = take_permit(p);
    grant_running(h, slot, false, now);
    result.value.permit = slot->number;
  } else {
    h.state = phase::queued;
    p.queue.push_back(&h);
    ++p.queue_size;
    queued_line_.push_back(&h);
    ++queued_size_;
    if (wants_events(h)) {
      auto& ev = event(pool_event_kind::queued, h);
      ev.position = p.queue_size;
      ev.of = p.queue_size;
      ev.running = p.in_use;
      ev.background = h.kind == holder_kind::background;
    }
    result.status = acquire_status::queued;
    result.ticket = h.ticket;
  }
  ensure_timers(now);
  return result;
}

acquire_result admission::adopt(adopt_request&& req, int64_t now) {
  out_.clear();
  if (stopped_)
    return refuse(errc::shutting_down, "the pool is shutting down");
  if (req.holder.empty())
    return refuse(errc::bad_request, "adopt needs a non-empty holder");
  if (req.session.empty())
    return refuse(errc::bad_request, "adopt needs a non-empty session");
  if (req.child_session.empty())
    return refuse(errc::bad_request, "adopt needs a non-empty child_session");
  if (auto i = holders_.find(req.holder); i != holders_.end())
    return refuse(errc::duplicate_holder,
                  "holder " + quoted(req.holder) + " is already "
                    + (i->second.state == phase::queued ? "queued" : "running")
                    + " on this server");
  auto& p = pool_for(req.session);
  if (!has_free(p))
    return refuse(errc::pool_full,
                  "no permit is free in pool " + quoted(*p.key) + " ("
                    + std::to_string(p.in_use)
                    + " in use) and an adopted child never queues");
  auto& h = new_holder(std::move(req.holder));
  h.session = std::move(req.session);
  h.child_session = std::move(req.child_session);
  h.kind = holder_kind::background;
  h.connection = req.connection;
  h.listened = listening(req.connection);
  h.pool = &p;
  h.detached = req.detach;
  h.since = now;
  auto slot = take_permit(p);
  grant_running(h, slot, false, now);
  acquire_result result;
  result.value.permit = slot->number;
  ensure_timers(now);
  return result;
}

bool admission::release(const std::string& holder_name, release_reason reason,
                        int64_t now) {
  out_.clear();
  auto i = holders_.find(holder_name);
  if (i == holders_.end())
    return false;
  auto& h = i->second;
  if (h.state == phase::queued)
    cancel(h, reason, now);
  else
    finish(h, reason, now);
  ensure_timers(now);
  return true;
}

bool admission::bind(const std::string& holder_name,
                     const std::string& child_session, int64_t now) {
  out_.clear();
  auto i = holders_.find(holder_name);
  if (i == holders_.end())
    return false;
  auto& h = i->second;
  h.child_session = child_session;
  // Now the child's holder is known for sure: a guess that tied it to
  // another holder is withdrawn, and a guess that tied another child to
  // this one goes to a holder still free.
  forget_untied(child_session);
  untie(child_session, &h);
  if (!h.started_child.empty() && h.started_child != child_session) {
    auto other = std::move(h.started_child);
    h.started_child.clear();
    tie(h.session, other);
  }
  // The idle event may overtake the call's return: remember it briefly.
  if (h.state == phase::running && h.kind == holder_kind::background
      && idle_recently(child_session, now)) {
    finish(h, release_reason::idle, now);
    ensure_timers(now);
    return true;
  }
  return false;
}

std::string admission::child_started(const std::string& session,
                                     const std::string& child_session,
                                     int64_t now) {
  out_.clear();
  (void)now;
  // Already tied (bind came first, or the start is reported twice).
  for (auto h = running_line_.head; h != nullptr; h = h->next[1])
    if (h->session == session
        && (h->child_session == child_session
            || h->started_child == child_session))
      return *h->name;
  forget_untied(child_session);
  // Starts come in the order the calls were granted, give or take the calls
  // that start at once: the oldest holder without a child is the best guess.
  if (auto h = tie_candidate(session); h != nullptr) {
    h->started_child = child_session;
    return *h->name;
  }
  untied_.emplace_back(session, child_session);
  if (untied_.size() > kept_untied)
    untied_.pop_front();
  return {};
}

std::vector<std::string> admission::idle(const std::string& session,
                                         int64_t now) {
  out_.clear();
  forget_untied(session);
  if (cfg_.idle_memory_ms > 0)
    remember_idle(session, now);
  // Collect first: a permit handed over below must not be released by this
  // same idle even if its child session matches.
  collect(running_line_, session, false, true);
  auto victims = scratch_;
  std::vector<std::string> result;
  result.reserve(victims.size());
  for (auto h : victims) {
    result.push_back(*h->name);
    finish(*h, release_reason::idle, now);
  }
  ensure_timers(now);
  return result;
}

std::vector<std::string> admission::end(const std::string& session,
                                        int64_t now) {
  out_.clear();
  std::vector<std::string> result;
  untied_.erase(std::remove_if(untied_.begin(), untied_.end(),
                               [&session](const auto& x) {
                                 return x.first == session
                                        || x.second == session;
                               }),
                untied_.end());
  collect(queued_line_, session, true, true);
  auto waits = scratch_;
  for (auto h : waits) {
    result.push_back(*h->name);
    cancel(*h, release_reason::ended, now);
  }
  collect(running_line_, session, true, true);
  auto holds = scratch_;
  for (auto h : holds) {
    result.push_back(*h->name);
    finish(*h, release_reason::ended, now);
  }
  ensure_timers(now);
  return result;
}

std::vector<std::string> admission::stop(int64_t now) {
  out_.clear();
  std::vector<std::string> result;
  if (stopped_)
    return result;
  stopped_ = true;
  untied_.clear();
  // Waits first, so the permits freed below go to nobody.
  while (auto h = queued_line_.head) {
    result.push_back(*h->name);
    fail_wait(*h, errc::shutting_down,
              "the pool is shutting down; holder " + quoted(*h->name)
                + " never got a permit");
  }
  while (auto h = running_line_.head) {
    result.push_back(*h->name);
    finish(*h, release_reason::disconnected, now);
  }
  return result;
}

void admission::expire(uint64_t timer, uint64_t generation, int64_t now) {
  out_.clear();
  size_t index;
  if (timer == queue_timer)
    index = 0;
  else if (timer == hold_timer)
    index = 1;
  else
    return;
  if (generation == 0 || generation != armed_generation_[index])
    return;
  armed_generation_[index] = 0;
  // A real clock never fires a timer before its deadline; a test that forces
  // timeouts does. Take it as "the deadline has come", so forced timers make
  // progress instead of re-arming forever.
  now = std::max(now, armed_deadline_[index]);
  if (index == 0) {
    // Count who is ahead before anyone of this batch leaves: waiters that
    // give up at the same instant were still ahead of the later ones.
    scratch_.clear();
    ahead_.clear();
    for (auto h = queued_line_.head; h != nullptr && queue_deadline(*h) <= now;
         h = h->next[1]) {
      scratch_.push_back(h);
      ahead_.push_back(ahead_of(*h));
    }
    for (size_t i = 0; i < scratch_.size(); ++i)
      time_out(*scratch_[i], ahead_[i], now);
  } else {
    while (running_line_.head != nullptr
           && hold_deadline(*running_line_.head) <= now)
      force_release(*running_line_.head, now);
  }
  ensure_timers(now);
}

pool_status admission::status(int64_t now) const {
  pool_status result;
  result.mode = to_string(cfg_.mode);
  result.max_parallel = cfg_.max_parallel;
  std::map<std::string, pool_view> views;
  for (auto h = running_line_.head; h != nullptr; h = h->next[1]) {
    auto& view = views[*h->pool->key];
    view.running.push_back(
      {*h->name, h->session, h->kind, now - h->since, h->lent, h->detached});
  }
  for (auto& [key, p] : pools_) {
    if (p.queue_size == 0)
      continue;
    auto& view = views[key];
    uint64_t position = 0;
    for (auto h = p.queue.head; h != nullptr; h = h->next[0])
      view.queued.push_back({*h->name, h->session, ++position, now - h->since});
  }
  for (auto& [key, view] : views) {
    view.key = key;
    result.pools.push_back(std::move(view));
  }
  return result;
}

std::vector<uint64_t> admission::waiting_tickets() const {
  std::vector<uint64_t> result;
  for (auto h = queued_line_.head; h != nullptr; h = h->next[1])
    result.push_back(h->ticket);
  return result;
}

uint64_t admission::in_use(const std::string& key) const {
  auto i = pools_.find(key);
  return i == pools_.end() ? 0 : i->second.in_use;
}

// -- helpers ------------------------------------------------------------------

admission::pool_state& admission::pool_for(const std::string& session) {
  // Busy traffic hits the same pool again and again: skip the hash.
  if (last_pool_ != nullptr
      && (cfg_.mode == pool_mode::global || *last_pool_->key == session))
    return *last_pool_;
  auto i = cfg_.mode == pool_mode::global ? pools_.try_emplace(global_key).first
                                          : pools_.try_emplace(session).first;
  i->second.key = &i->first;
  last_pool_ = &i->second;
  return i->second;
}

void admission::drop_pool_if_idle(pool_state& p) {
  if (p.in_use == 0 && p.queue_size == 0 && pools_.size() > kept_idle_pools) {
    if (last_pool_ == &p)
      last_pool_ = nullptr;
    pools_.erase(*p.key);
  }
}

admission::holder& admission::new_holder(std::string&& name) {
  holder_map::iterator i;
  if (!spare_holders_.empty()) {
    auto node = std::move(spare_holders_.back());
    spare_holders_.pop_back();
    node.key() = std::move(name);
    i = holders_.insert(std::move(node)).position;
  } else {
    i = holders_.try_emplace(std::move(name)).first;
  }
  auto& h = i->second;
  h.name = &i->first;
  h.kind = holder_kind::foreground;
  h.state = phase::running;
  h.lent = false;
  h.caller.clear();
  h.started_child.clear();
  h.detached = false;
  h.listened = false;
  h.slot = nullptr;
  h.ticket = next_ticket_++;
  return h;
}

void admission::erase_holder(holder& h) {
  auto i = holders_.find(*h.name);
  if (spare_holders_.size() < kept_spare_holders)
    spare_holders_.push_back(holders_.extract(i));
  else
    holders_.erase(i);
}

admission::permit* admission::take_permit(pool_state& p) {
  permit* slot;
  if (spare_permits_.empty()) {
    slot = &permit_store_.emplace_back();
  } else {
    slot = spare_permits_.back();
    spare_permits_.pop_back();
  }
  slot->pool = &p;
  slot->users = 0;
  if (p.free_numbers.empty()) {
    slot->number = p.next_number++;
  } else {
    slot->number = p.free_numbers.back();
    p.free_numbers.pop_back();
  }
  ++p.in_use;
  return slot;
}

void admission::grant_running(holder& h, permit* slot, bool lent, int64_t now) {
  auto queued_ms = now - h.since;
  h.state = phase::running;
  h.slot = slot;
  h.lent = lent;
  h.since = now;
  ++slot->users;
  running_line_.push_back(&h);
  ++running_size_;
  if (wants_events(h)) {
    auto& ev = event(pool_event_kind::started, h);
    ev.queued_ms = queued_ms;
    ev.lent = lent;
  }
}

// A running holder lets go of its permit. The permit stays in use while
// anyone else shares it (a lent permit); once free it goes straight to the
// oldest waiter of its pool without ever counting as free, so no later
// request can barge in.
void admission::let_go(holder& h, int64_t now) {
  running_line_.erase(&h);
  --running_size_;
  auto slot = h.slot;
  h.slot = nullptr;
  if (--slot->users > 0)
    return;
  auto& p = *slot->pool;
  if (auto next = p.queue.head; next != nullptr) {
    p.queue.erase(next);
    --p.queue_size;
    queued_line_.erase(next);
    --queued_size_;
    auto queued_ms = now - next->since;
    grant_running(*next, slot, false, now);
    out_.grants.push_back(
      {next->ticket, grant{true, slot->number, queued_ms, false}});
    return;
  }
  p.free_numbers.push_back(slot->number);
  --p.in_use;
  spare_permits_.push_back(slot);
  drop_pool_if_idle(p);
}

void admission::finish(holder& h, release_reason reason, int64_t now) {
  if (wants_events(h))
    event(pool_event_kind::released, h).reason = reason;
  let_go(h, now);
  erase_holder(h);
}

// A wait that ends without a permit gets its error and no terminal event:
// it never held anything to release.
void admission::cancel(holder& h, release_reason reason, int64_t now) {
  (void)now;
  fail_wait(h, errc::cancelled,
            "the wait of holder " + quoted(*h.name) + " in pool "
              + quoted(*h.pool->key) + " was cancelled (" + to_string(reason)
              + ")");
}

void admission::fail_wait(holder& h, errc code, std::string message) {
  auto& p = *h.pool;
  p.queue.erase(&h);
  --p.queue_size;
  queued_line_.erase(&h);
  --queued_size_;
  out_.failures.push_back({h.ticket, code, std::move(message)});
  erase_holder(h);
}

void admission::time_out(holder& h, size_t ahead, int64_t now) {
  auto waited = now - h.since;
  auto& p = *h.pool;
  p.queue.erase(&h);
  --p.queue_size;
  queued_line_.erase(&h);
  --queued_size_;
  out_.failures.push_back(
    {h.ticket, errc::queue_timeout,
     "holder " + quoted(*h.name) + " waited " + std::to_string(waited)
       + " ms for a permit of pool " + quoted(*p.key) + " (queueTimeoutMs "
       + std::to_string(cfg_.queue_timeout_ms) + "); " + std::to_string(ahead)
       + (ahead == 1 ? " was" : " were") + " still ahead of it and "
       + std::to_string(p.in_use)
       + (p.in_use == 1 ? " permit was" : " permits were") + " in use"});
  if (wants_events(h))
    event(pool_event_kind::timed_out, h).waited_ms = waited;
  erase_holder(h);
}

void admission::force_release(holder& h, int64_t now) {
  auto held = now - h.since;
  out_.forced.push_back({*h.name, h.session, held});
  if (wants_events(h))
    event(pool_event_kind::force_released, h).held_ms = held;
  let_go(h, now);
  erase_holder(h);
}

int64_t admission::queue_deadline(const holder& h) const {
  if (cfg_.queue_timeout_ms <= 0)
    return INT64_MAX;
  return saturating_deadline_ms(h.since, cfg_.queue_timeout_ms);
}

int64_t admission::hold_deadline(const holder& h) const {
  return saturating_deadline_ms(h.since, cfg_.max_hold_ms);
}

// A deadline of INT64_MAX is one no clock reaches: it needs no timer.
void admission::ensure_timers(int64_t now) {
  if (queued_line_.head != nullptr) {
    auto deadline = queue_deadline(*queued_line_.head);
    if (deadline < INT64_MAX
        && (armed_generation_[0] == 0 || armed_deadline_[0] > deadline))
      arm(0, queue_timer, deadline, now);
  }
  if (running_line_.head != nullptr) {
    auto deadline = hold_deadline(*running_line_.head);
    if (deadline < INT64_MAX
        && (armed_generation_[1] == 0 || armed_deadline_[1] > deadline))
      arm(1, hold_timer, deadline, now);
  }
}

void admission::arm(size_t index, uint64_t id, int64_t deadline, int64_t now) {
  auto generation = next_generation_++;
  armed_generation_[index] = generation;
  armed_deadline_[index] = deadline;
  // The clock counts from its epoch, so `now` is never negative and the
  // difference cannot overflow.
  out_.arms.push_back({id, generation, deadline > now ? deadline - now : 0});
}

pool_event& admission::event(pool_event_kind kind, const holder& h) {
  auto& ev = out_.events.emplace_back();
  ev.kind = kind;
  ev.holder = *h.name;
  ev.session = h.session;
  ev.connection = h.connection;
  ev.background = h.kind == holder_kind::background;
  return ev;
}

bool admission::idle_recently(const std::string& session, int64_t now) {
  if (cfg_.idle_memory_ms <= 0)
    return false;
  forget_old_idles(now);
  auto i = idle_at_.find(session);
  return i != idle_at_.end() && now - i->second < cfg_.idle_memory_ms;
}

// However long idleMemoryMs is, the memory stays bounded: one live log entry
// per session (a repeated idle makes the older entry stale, and stale
// entries are compacted away once they outnumber the live ones) and at most
// kept_idles sessions.
void admission::remember_idle(const std::string& session, int64_t now) {
  forget_old_idles(now);
  auto& at = idle_at_[session];
  if (at == now && !idle_log_.empty())
    return; // the entry of this very instant is already logged
  at = now;
  idle_log_.emplace_back(now, session);
  auto live = [this](const std::pair<int64_t, std::string>& entry) {
    auto i = idle_at_.find(entry.second);
    return i != idle_at_.end() && i->second == entry.first;
  };
  if (idle_log_.size() > 2 * idle_at_.size() + 64) {
    std::deque<std::pair<int64_t, std::string>> kept;
    for (auto& entry : idle_log_)
      if (live(entry))
        kept.push_back(std::move(entry));
    idle_log_.swap(kept);
  }
  while (idle_at_.size() > kept_idles) {
    if (live(idle_log_.front()))
      idle_at_.erase(idle_log_.front().second);
    idle_log_.pop_front();
  }
}

void admission::forget_old_idles(int64_t now) {
  while (!idle_log_.empty()
         && now - idle_log_.front().first >= cfg_.idle_memory_ms) {
    auto& [at, session] = idle_log_.front();
    if (auto i = idle_at_.find(session); i != idle_at_.end() && i->second == at)
      idle_at_.erase(i);
    idle_log_.pop_front();
  }
}

size_t admission::ahead_of(const holder& h) const {
  size_t result = 0;
  for (auto x = h.prev[0]; x != nullptr; x = x->prev[0])
    ++result;
  return result;
}

// A parent is named by its holder, or by the child session a running
// holder runs (bound exactly, or tied by child_started): a caller inside a
// child session knows its own session, not the call that started it. The
// holder must belong to the requesting session, unless the request comes
// from the child session itself.
admission::holder* admission::find_parent(const std::string& parent,
                                          const std::string& session) {
  if (auto i = holders_.find(parent); i != holders_.end())
    return i->second.state == phase::running ? &i->second : nullptr;
  holder* guessed = nullptr;
  for (auto h = running_line_.head; h != nullptr; h = h->next[1]) {
    if (h->session != session && parent != session)
      continue;
    if (h->child_session == parent)
      return h;
    if (guessed == nullptr && h->started_child == parent)
      guessed = h;
  }
  return guessed;
}

const admission::holder*
admission::borrower_of(const std::string& caller) const {
  for (auto h = running_line_.head; h != nullptr; h = h->next[1])
    if (h->lent && h->caller == caller)
      return h;
  return nullptr;
}

admission::holder* admission::tie_candidate(const std::string& session) {
  for (auto h = running_line_.head; h != nullptr; h = h->next[1])
    if (h->session == session && h->kind == holder_kind::foreground
        && h->child_session.empty() && h->started_child.empty())
      return h;
  return nullptr;
}

void admission::tie(const std::string& session, const std::string& child) {
  if (auto h = tie_candidate(session); h != nullptr) {
    h->started_child = child;
    return;
  }
  untied_.emplace_back(session, child);
  if (untied_.size() > kept_untied)
    untied_.pop_front();
}

// Withdraws every guess that tied `child` to a holder other than `keep`;
// each holder so freed takes the oldest untied child of its session.
void admission::untie(const std::string& child, const holder* keep) {
  for (auto h = running_line_.head; h != nullptr; h = h->next[1]) {
    if (h == keep || h->started_child != child)
      continue;
    h->started_child.clear();
    auto i = std::find_if(untied_.begin(), untied_.end(), [h](const auto& x) {
      return x.first == h->session;
    });
    if (i != untied_.end()) {
      h->started_child = std::move(i->second);
      untied_.erase(i);
    }
  }
}

void admission::forget_untied(const std::string& child) {
  untied_.erase(std::remove_if(untied_.begin(), untied_.end(),
                               [&child](const auto& x) {
                                 return x.second == child;
                               }),
                untied_.end());
}

void admission::collect(const line<1>& from, const std::string& session,
                        bool requested, bool background_child) {
  scratch_.clear();
  for (auto h = from.head; h != nullptr; h = h->next[1])
    if ((requested && h->session == session)
        || (background_child && h->kind == holder_kind::background
            && h->child_session == session))
      scratch_.push_back(h);
}

std::string admission::audit() const {
  auto fail = [](const std::string& what) {
    return what;
  };
  size_t queued = 0;
  size_t running = 0;
  std::unordered_map<const permit*, uint32_t> users;
  std::map<const pool_state*, std::set<const permit*>> slots;
  std::set<std::string> callers;
  int64_t last = INT64_MIN;
  for (auto h = running_line_.head; h != nullptr; h = h->next[1]) {
    ++running;
    if (h->state != phase::running)
      return fail("holder " + *h->name + " is in the running line but queued");
    if (h->slot == nullptr || h->slot->pool != h->pool)
      return fail("holder " + *h->name + " runs without a permit of its pool");
    if (h->since < last)
      return fail("running line out of grant order at " + *h->name);
    last = h->since;
    if (!h->started_child.empty() && h->kind != holder_kind::foreground)
      return fail("background holder " + *h->name + " has a guessed child");
    if (h->lent && !callers.insert(h->caller).second)
      return fail("caller " + h->caller + " lends to two calls at once");
    ++users[h->slot];
    slots[h->pool].insert(h->slot);
  }
  last = INT64_MIN;
  for (auto h = queued_line_.head; h != nullptr; h = h->next[1]) {
    ++queued;
    if (h->state != phase::queued)
      return fail("holder " + *h->name + " is in the queued line but runs");
    if (h->since < last)
      return fail("queued line out of arrival order at " + *h->name);
    last = h->since;
  }
  if (queued != queued_size_ || running != running_size_)
    return fail("line sizes disagree with their counters");
  if (holders_.size() != queued + running)
    return fail("holder map size disagrees with the lines");
  for (auto& [slot, n] : users)
    if (slot->users != n)
      return fail("permit " + std::to_string(slot->number) + " of pool "
                  + *slot->pool->key + " counts " + std::to_string(slot->users)
                  + " users but " + std::to_string(n) + " hold it");
  size_t queued_in_pools = 0;
  for (auto& [key, p] : pools_) {
    if (p.key != &key)
      return fail("pool " + key + " has a stale key");
    if (p.in_use > cfg_.max_parallel)
      return fail("pool " + key
                  + " exceeds maxParallel: " + std::to_string(p.in_use));
    auto i = slots.find(&p);
    auto distinct = i == slots.end() ? 0 : i->second.size();
    if (distinct != p.in_use)
      return fail("pool " + key + " counts " + std::to_string(p.in_use)
                  + " permits in use but holders use "
                  + std::to_string(distinct));
    if (i != slots.end()) {
      std::unordered_set<uint64_t> numbers;
      for (auto slot : i->second)
        if (!numbers.insert(slot->number).second || slot->number == 0
            || slot->number > cfg_.max_parallel)
          return fail("pool " + key + " has a bad or shared permit number "
                      + std::to_string(slot->number));
    }
    size_t n = 0;
    for (auto h = p.queue.head; h != nullptr; h = h->next[0]) {
      ++n;
      if (h->pool != &p || h->state != phase::queued)
        return fail("pool " + key + " queues a foreign holder " + *h->name);
    }
    if (n != p.queue_size)
      return fail("pool " + key + " queue size disagrees with its links");
    if (n > 0 && p.in_use < cfg_.max_parallel)
      return fail("pool " + key + " has a free permit while "
                  + std::to_string(n) + " wait");
    queued_in_pools += n;
  }
  if (queued_in_pools != queued)
    return fail("a queued holder sits in no pool");
  if (slots.size() > 0)
    for (auto& [p, s] : slots)
      if (pools_.find(*p->key) == pools_.end())
        return fail("a permit belongs to a dropped pool");
  return {};
}

} // namespace taskforce::pool
