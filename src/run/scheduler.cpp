#include "src/run/scheduler.hpp"
#include "src/text/join.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

namespace taskforce::run {

namespace {

/// How the reason of a task a person rejected begins.
constexpr const char* rejected_prefix = "rejected: ";

/// Whether a blocked task is blocked because a person rejected it (it then
/// waits for an answer, or a discard, rather than running again as it was).
bool rejected(const task_record& r) {
  return r.state == task_state::blocked
         && r.reason.rfind(rejected_prefix, 0) == 0;
}

bool schedulable(task_state x) {
  return x == task_state::pending || x == task_state::ready
         || x == task_state::interrupted;
}

} // namespace

const char* to_string(run_phase x) {
  switch (x) {
    case run_phase::idle: return "idle";
    case run_phase::running: return "running";
    case run_phase::pausing: return "pausing";
    case run_phase::paused: return "paused";
    case run_phase::completed: return "completed";
    case run_phase::aborting: return "aborting";
    case run_phase::aborted: return "aborted";
  }
  return "unknown";
}

const char* to_string(follow_up x) {
  switch (x) {
    case follow_up::none: return "none";
    case follow_up::launch: return "launch";
    case follow_up::merge: return "merge";
    case follow_up::check_merged: return "check_merged";
    case follow_up::cancel: return "cancel";
  }
  return "unknown";
}

decision& decision::operator+=(decision other) {
  for (auto& c : other.changes)
    changes.push_back(std::move(c));
  now.insert(now.end(), other.now.begin(), other.now.end());
  if (other.run)
    run = std::move(other.run);
  return *this;
}

// -- construction -------------------------------------------------------------

scheduler::scheduler(plan::task_graph graph, std::vector<task_record> records,
                     rules r)
  : graph_(std::move(graph)), records_(std::move(records)), rules_(r) {
  if (records_.size() != graph_.size())
    throw std::invalid_argument("scheduler: one record per task expected");
  rules_.max_concurrency = std::max<size_t>(rules_.max_concurrency, 1);
  rules_.max_attempts = std::max<uint64_t>(rules_.max_attempts, 1);
  auto n = records_.size();
  failures_.assign(n, 0);
  merge_repairs_.assign(n, 0);
  waiting_.assign(n, 0);
  skipped_by_.assign(n, std::nullopt);
  reserved_.assign(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (graph_.task(i).done)
      records_[i].state = task_state::done;
    count_dependencies(i);
  }
  for (size_t i = 0; i < n; ++i) {
    if (is_active(records_[i].state))
      active_.insert(i);
    refresh(i);
  }
}

void scheduler::count_dependencies(size_t i) {
  waiting_[i] = 0;
  for (auto d : graph_.deps(i))
    if (records_[d].state != task_state::done)
      ++waiting_[i];
}

// -- queries ------------------------------------------------------------------

size_t scheduler::attempts_open() const {
  size_t n = 0;
  for (auto i : active_)
    if (in_attempt(records_[i].state))
      ++n;
  return n;
}

bool scheduler::quiet() const {
  return active_.empty() && checking_.empty();
}

bool scheduler::finished() const {
  return phase_ == run_phase::paused || phase_ == run_phase::completed
         || phase_ == run_phase::aborted;
}

bool scheduler::awaiting_answer() const {
  if (phase_ != run_phase::paused || !rules_.ask_user_on_blocked
      || asked_to_pause_)
    return false;
  for (auto& r : records_)
    if (r.state == task_state::blocked)
      return true;
  return false;
}

bool scheduler::eligible(size_t i) const {
  auto& r = records_[i];
  return waiting_[i] == 0 && schedulable(r.state) && !r.hold && !reserved_[i];
}

// -- bookkeeping --------------------------------------------------------------

void scheduler::refresh(size_t i) {
  auto key = key_of(i);
  if (eligible(i)) {
    if (ready_.insert(key).second && records_[i].state == task_state::pending)
      newly_ready_.push_back(i);
  } else {
    ready_.erase(key);
  }
  if (is_active(records_[i].state))
    active_.insert(i);
  else
    active_.erase(i);
}

task_change& scheduler::move(decision& d, size_t i, task_event event,
                             std::string why, follow_up then) {
  auto from = records_[i].state;
  auto to = transition(from, event);
  if (!to)
    throw std::logic_error(std::string{"scheduler: "} + graph_.task(i).id
                           + " cannot " + taskforce::to_string(event) + " from "
                           + taskforce::to_string(from));
  records_[i].state = *to;
  records_[i].reason = why;
  if (*to == task_state::done)
    for (auto dep : graph_.dependents(i)) {
      if (waiting_[dep] > 0)
        --waiting_[dep];
      refresh(dep);
    }
  refresh(i);
  d.changes.push_back(task_change{i, event, from, *to, std::move(why), then});
  return d.changes.back();
}

void scheduler::skip_dependents(decision& d, size_t i) {
  std::vector<size_t> work{i};
  std::unordered_set<size_t> seen;
  while (!work.empty()) {
    auto cur = work.back();
    work.pop_back();
    for (auto dep : graph_.dependents(cur)) {
      if (!seen.insert(dep).second)
        continue;
      work.push_back(dep);
      auto s = records_[dep].state;
      if (s == task_state::pending || s == task_state::ready
          || s == task_state::held) {
        skipped_by_[dep] = i;
        move(d, dep, task_event::skip,
             "dependency " + graph_.task(i).id + " "
               + taskforce::to_string(records_[i].state));
      }
    }
  }
}

void scheduler::unskip_dependents(decision& d, size_t i) {
  for (size_t j = 0; j < records_.size(); ++j)
    if (skipped_by_[j] == i && records_[j].state == task_state::skipped) {
      skipped_by_[j].reset();
      move(d, j, task_event::reset,
           "dependency " + graph_.task(i).id + " runs again");
    }
}

bool scheduler::blocked_upstream(size_t i) const {
  std::vector<size_t> work{i};
  std::unordered_set<size_t> seen;
  while (!work.empty()) {
    auto cur = work.back();
    work.pop_back();
    for (auto dep : graph_.deps(cur)) {
      if (!seen.insert(dep).second)
        continue;
      auto s = records_[dep].state;
      if (s == task_state::failed || s == task_state::blocked)
        return true;
      work.push_back(dep);
    }
  }
  return false;
}

/// A task failed or blocked for good: go on around it, or pause.
void scheduler::stopped(decision& d, size_t i, const std::string& why) {
  if (rules_.continue_on_error)
    skip_dependents(d, i);
  else if (phase_ == run_phase::running)
    start_pause(d, why);
}

void scheduler::start_pause(decision& d, std::string why) {
  phase_ = run_phase::pausing;
  phase_reason_ = why;
  d.run = run_change{run_state::paused, std::move(why)};
}

/// A person made work possible on a run that had settled in a pause (and
/// was kept open for an answer): it runs again.
void scheduler::wake(decision& d) {
  if (phase_ != run_phase::paused)
    return;
  asked_to_pause_ = false;
  phase_ = run_phase::running;
  phase_reason_.clear();
  d.run = run_change{run_state::running, {}};
}

std::string scheduler::waiting_summary() const {
  std::vector<std::string> review, held, blocked, answer_owed, failed, conflict,
    other;
  for (size_t i = 0; i < records_.size(); ++i) {
    auto& id = graph_.task(i).id;
    switch (records_[i].state) {
      case task_state::review: review.push_back(id); break;
      case task_state::held: held.push_back(id); break;
      case task_state::blocked:
        (rejected(records_[i]) ? answer_owed : blocked).push_back(id);
        break;
      case task_state::failed: failed.push_back(id); break;
      case task_state::conflict: conflict.push_back(id); break;
      case task_state::done:
      case task_state::skipped: break;
      default: other.push_back(id); break;
    }
  }
  std::vector<std::string> parts;
  if (rules_.ask_user_on_blocked)
    answer_owed.insert(answer_owed.end(), blocked.begin(), blocked.end());
  else if (!blocked.empty())
    parts.push_back("blocked: " + join(blocked, ", "));
  if (!answer_owed.empty())
    parts.push_back("awaiting answer: " + join(answer_owed, ", "));
  if (!review.empty())
    parts.push_back("awaiting approval: " + join(review, ", "));
  if (!held.empty())
    parts.push_back("held: " + join(held, ", "));
  if (!conflict.empty())
    parts.push_back("conflict: " + join(conflict, ", "));
  if (!failed.empty())
    parts.push_back("failed: " + join(failed, ", "));
  if (!other.empty())
    parts.push_back("waiting: " + join(other, ", "));
  return join(parts, "; ");
}

/// Once nothing is active: the pause or the abort is complete, or the run
/// ends because nothing more can start.
void scheduler::settle(decision& d) {
  if (!quiet())
    return;
  switch (phase_) {
    case run_phase::pausing: phase_ = run_phase::paused; return;
    case run_phase::aborting:
      phase_ = run_phase::aborted;
      d.run = run_change{run_state::aborted, phase_reason_};
      return;
    case run_phase::running: break;
    default: return;
  }
  if (!ready_.empty() || held_open_ > 0 || waits_elsewhere())
    return; // next() starts them, tasks are joining, or a start waits
  std::vector<std::string> failed;
  bool all_over = true;
  for (size_t i = 0; i < records_.size(); ++i) {
    auto s = records_[i].state;
    if (s == task_state::failed && rules_.continue_on_error)
      failed.push_back(graph_.task(i).id);
    else if (!is_final(s))
      all_over = false;
  }
  if (all_over) {
    phase_ = run_phase::completed;
    phase_reason_ = failed.empty() ? "" : "failed: " + join(failed, ", ");
    d.run = run_change{run_state::completed, phase_reason_};
    return;
  }
  phase_ = run_phase::paused;
  phase_reason_ = waiting_summary();
  d.run = run_change{run_state::paused, phase_reason_};
}

// -- the run ------------------------------------------------------------------

decision scheduler::start() {
  decision d;
  if (phase_ != run_phase::idle)
    return d;
  phase_ = run_phase::running;
  d.run = run_change{run_state::running, {}};
  for (size_t i = 0; i < records_.size(); ++i) {
    auto& r = records_[i];
    switch (r.state) {
      case task_state::running:
      case task_state::verifying:
        // The ledger should have marked these interrupted already.
        move(d, i, task_event::interrupt,
             "the process driving the run stopped");
        break;
      case task_state::failed: move(d, i, task_event::reset, "resumed"); break;
      case task_state::blocked:
        // A rejected task would only bring back the work a person turned
        // down: it waits for an answer (or a discard) like a question.
        if (!rules_.ask_user_on_blocked && !rejected(r))
          move(d, i, task_event::reset, "resumed");
        break;
      case task_state::conflict:
        move(d, i, task_event::merge, "resumed: merging again",
             follow_up::merge);
        break;
      case task_state::merging:
        d.now.push_back(order{i, follow_up::merge});
        break;
      case task_state::review:
        checking_.insert(i);
        d.now.push_back(order{i, follow_up::check_merged});
        break;
      case task_state::held:
        if (!r.hold)
          move(d, i, task_event::release, "the hold was lifted");
        break;
      default: break;
    }
    if ((r.state == task_state::pending || r.state == task_state::ready)
        && r.hold)
      move(d, i, task_event::hold, r.hold_reason);
  }
  // Tasks skipped for a dependency that now runs again come back.
  for (size_t i = 0; i < records_.size(); ++i)
    if (records_[i].state == task_state::skipped && !blocked_upstream(i))
      move(d, i, task_event::reset, "resumed");
  return d;
}

decision scheduler::next() {
  decision d;
  if (phase_ == run_phase::running) {
    // Recorded as ready once their dependencies are done (status shows
    // them waiting for a slot).
    auto fresh = std::move(newly_ready_);
    newly_ready_.clear();
    for (auto i : fresh)
      if (records_[i].state == task_state::pending && eligible(i))
        move(d, i, task_event::deps_done, "");
    if (stop_for_budget(d))
      return d;
    auto open = attempts_open();
    auto slots
      = rules_.max_concurrency > open ? rules_.max_concurrency - open : 0;
    for (auto c : graph_.pick(ready_, active_, slots)) {
      if (records_[c].state == task_state::pending)
        move(d, c, task_event::deps_done, "");
      move(d, c, task_event::start, "", follow_up::launch);
    }
  }
  settle(d);
  return d;
}

decision scheduler::pause(std::string why, bool interrupt) {
  decision d;
  asked_to_pause_ = true;
  if (interrupt
      && (phase_ == run_phase::running || phase_ == run_phase::pausing))
    for (auto i : active_)
      if (in_attempt(records_[i].state))
        d.now.push_back(order{i, follow_up::cancel});
  if (phase_ == run_phase::running)
    start_pause(d, std::move(why));
  settle(d);
  return d;
}

decision scheduler::abort(std::string why) {
  decision d;
  if (phase_ == run_phase::completed || phase_ == run_phase::aborted
      || phase_ == run_phase::aborting)
    return d;
  phase_ = run_phase::aborting;
  phase_reason_ = std::move(why);
  for (auto i : active_)
    if (in_attempt(records_[i].state))
      d.now.push_back(order{i, follow_up::cancel});
  settle(d);
  return d;
}

decision scheduler::aborted_elsewhere(std::string why) {
  if (phase_ == run_phase::completed)
    phase_ = run_phase::running;
  return abort(std::move(why));
}

decision scheduler::observed(run_state in_ledger, std::string why, bool stale) {
  if (why.empty())
    why = taskforce::to_string(in_ledger);
  if (in_ledger == run_state::aborted && phase_ != run_phase::aborting
      && phase_ != run_phase::aborted)
    return aborted_elsewhere(std::move(why));
  if (in_ledger == run_state::paused && phase_ == run_phase::running && !stale)
    return pause(std::move(why), true);
  return {};
}

run_state scheduler::recorded_end(bool changes_lost) const {
  if (changes_lost)
    return run_state::paused;
  switch (phase_) {
    case run_phase::completed: return run_state::completed;
    case run_phase::aborted: return run_state::aborted;
    default: return run_state::paused;
  }
}

// -- usage and the budget -----------------------------------------------------

void scheduler::spent(const spend& s) {
  spent_ += s;
}

/// Once the budget is reached nothing starts; the run pauses with reason
/// `budget` as soon as a task could start (a run whose last tasks crossed
/// it completes as usual). Returns true when it stopped the starts.
bool scheduler::stop_for_budget(decision& d) {
  if (!over_budget())
    return false;
  if (!ready_.empty())
    start_pause(d, budget_reason);
  settle(d);
  return true;
}

// -- what happened to a task --------------------------------------------------

decision scheduler::worker_phase(size_t i, task_event event, std::string why) {
  decision d;
  if ((event == task_event::work_done || event == task_event::repair)
      && transition(records_[i].state, event))
    move(d, i, event, std::move(why));
  return d;
}

decision scheduler::attempt_ended(size_t i, attempt_end end, std::string why) {
  decision d;
  if (!in_attempt(records_[i].state))
    return d; // a late word from an attempt already given up
  auto& id = graph_.task(i).id;
  switch (end) {
    case attempt_end::interrupted:
      move(d, i, task_event::interrupt, std::move(why));
      break;
    case attempt_end::done:
      if (records_[i].state == task_state::running)
        move(d, i, task_event::work_done, "");
      if (rules_.finish == integration::leave) {
        move(d, i, task_event::gate_passed, "");
        move(d, i, task_event::merged,
             why.empty() ? "changes left uncommitted in the main checkout"
                         : why);
      } else if (records_[i].needs_approval) {
        move(d, i, task_event::gate_passed, "");
        move(d, i, task_event::keep_for_review,
             "awaiting approval (risk: " + graph_.task(i).risk.value_or("")
               + ")");
      } else if (rules_.finish == integration::review) {
        move(d, i, task_event::gate_passed, "");
        move(d, i, task_event::keep_for_review, "kept for review");
      } else {
        move(d, i, task_event::gate_passed, std::move(why), follow_up::merge);
      }
      break;
    case attempt_end::blocked:
      move(d, i, task_event::block, why);
      if (!rules_.ask_user_on_blocked)
        stopped(d, i, id + " blocked: " + why);
      break;
    case attempt_end::failed:
      ++failures_[i];
      if (failures_[i] < rules_.max_attempts && phase_ != run_phase::aborting) {
        move(d, i, task_event::retry, "attempt failed: " + why);
      } else {
        move(d, i, task_event::fail, why);
        stopped(d, i, id + " failed: " + why);
      }
      break;
    case attempt_end::base_moved:
      // Someone must look at the base before anything goes on it.
      ++failures_[i];
      move(d, i, task_event::fail, why);
      if (phase_ == run_phase::running)
        start_pause(d, id + " failed: " + why);
      break;
  }
  return d;
}

decision scheduler::merge_ended(size_t i, merge_end end, std::string why) {
  decision d;
  if (checking_.erase(i) > 0) {
    // A check answers before any merge asked later (the git service takes
    // requests in order); once approved or rejected, it is stale.
    if (end == merge_end::merged && records_[i].state == task_state::review)
      move(d, i, task_event::merged,
           why.empty() ? "merged by hand" : std::move(why));
    return d;
  }
  if (records_[i].state != task_state::merging)
    return d;
  switch (end) {
    case merge_end::merged:
      move(d, i, task_event::merged, std::move(why));
      break;
    case merge_end::empty:
      move(d, i, task_event::merged, why.empty() ? no_changes_reason : why);
      break;
    case merge_end::gate_failed:
      gate_failed_on_merge(d, i, std::move(why));
      break;
    case merge_end::base_moved:
      move(d, i, task_event::conflict, why);
      if (phase_ == run_phase::running)
        start_pause(d, graph_.task(i).id + ": " + why);
      break;
    case merge_end::conflict:
    case merge_end::error:
    case merge_end::not_merged:
    case merge_end::prepared:
    case merge_end::stale: {
      move(d, i, task_event::conflict, why);
      stopped(d, i, graph_.task(i).id + ": " + why);
      break;
    }
  }
  return d;
}

/// The gate failed on the merge result: the base did not move. Like a gate
/// failure in the attempt, it goes back to the worker while repairs are
/// left, and then counts as a failed attempt.
void scheduler::gate_failed_on_merge(decision& d, size_t i, std::string why) {
  auto& id = graph_.task(i).id;
  // What comes back is new work: an approval of the old one does not
  // clear it.
  records_[i].needs_approval = graph_.task(i).needs_approval;
  if (rules_.repair_on_failure && merge_repairs_[i] < rules_.max_repairs
      && phase_ != run_phase::aborting) {
    // Ready, not running: it starts again when a slot is free, with a
    // repair as its first turn.
    ++merge_repairs_[i];
    move(d, i, task_event::retry, "repair: " + why);
    return;
  }
  ++failures_[i];
  move(d, i, task_event::fail, why);
  if (failures_[i] < rules_.max_attempts && phase_ != run_phase::aborting)
    move(d, i, task_event::retry, "attempt failed: " + why);
  else
    stopped(d, i, id + " failed: " + why);
}

decision scheduler::refused(size_t i, task_state actual, std::string why) {
  decision d;
  records_[i].state = actual;
  count_dependencies(i);
  refresh(i);
  for (auto dep : graph_.dependents(i)) {
    count_dependencies(dep);
    refresh(dep);
  }
  if (phase_ == run_phase::running || phase_ == run_phase::completed)
    start_pause(d, "the ledger refused a change of " + graph_.task(i).id + ": "
                     + why);
  settle(d);
  return d;
}

decision scheduler::reserved_elsewhere(size_t i, task_state actual,
                                       std::string why) {
  decision d;
  if (records_[i].state != task_state::running || !schedulable(actual))
    return d; // moved on meanwhile: its later changes have the last word
  records_[i].state = actual;
  records_[i].reason = std::move(why);
  reserved_[i] = true;
  refresh(i);
  settle(d);
  return d;
}

bool scheduler::waits_elsewhere() const {
  return std::find(reserved_.begin(), reserved_.end(), true) != reserved_.end();
}

decision scheduler::retry_reserved() {
  for (size_t i = 0; i < reserved_.size(); ++i)
    if (reserved_[i]) {
      reserved_[i] = false;
      refresh(i);
    }
  return {};
}

// -- a person decides ---------------------------------------------------------

namespace {

steer_result refuse(const std::string& id, task_state s, const char* wants) {
  steer_result r;
  r.why_not = refusal::wrong_state;
  r.error = "task " + id + " is " + taskforce::to_string(s) + "; " + wants;
  return r;
}

} // namespace

steer_result scheduler::approve(size_t i) {
  steer_result r;
  auto& rec = records_[i];
  if (rec.state == task_state::review) {
    rec.needs_approval = false;
    move(r.changes, i, task_event::merge, "approved", follow_up::merge);
  } else if (rec.state == task_state::held) {
    rec.hold = false;
    move(r.changes, i, task_event::release, "approved: the hold was lifted");
  } else {
    return refuse(graph_.task(i).id, rec.state,
                  "approve applies to a task in review or held");
  }
  r.ok = true;
  wake(r.changes);
  return r;
}

steer_result scheduler::reject(size_t i, std::string why) {
  auto& rec = records_[i];
  if (rec.state != task_state::review && rec.state != task_state::held)
    return refuse(graph_.task(i).id, rec.state,
                  "reject applies to a task in review or held");
  steer_result r;
  // The person who rejected it owes it an answer: it waits for one (its
  // dependents with it) while the rest of the run goes on, as a blocked
  // task does under askUserOnBlocked; a settled run looks again, so its
  // reason names the task as it is now.
  move(r.changes, i, task_event::reject, rejected_prefix + why);
  r.ok = true;
  wake(r.changes);
  return r;
}

steer_result scheduler::answer(size_t i) {
  auto& rec = records_[i];
  if (rec.state != task_state::blocked)
    return refuse(graph_.task(i).id, rec.state,
                  "answer applies to a blocked task");
  steer_result r;
  move(r.changes, i, task_event::retry, "answered");
  unskip_dependents(r.changes, i);
  r.ok = true;
  wake(r.changes);
  return r;
}

steer_result scheduler::check_add(const std::vector<task_spec>& specs) const {
  steer_result r;
  auto no = [&r](refusal why, std::string text) {
    r.why_not = why;
    r.error = std::move(text);
    return r;
  };
  if (phase_ == run_phase::completed || phase_ == run_phase::aborting
      || phase_ == run_phase::aborted)
    return no(refusal::wrong_state, std::string{"the run is "}
                                      + to_string(phase_)
                                      + "; tasks join a running or paused run");
  std::unordered_set<std::string> ids;
  for (auto& t : graph_.tasks())
    ids.insert(t.id);
  std::unordered_set<std::string> added;
  for (auto& s : specs) {
    if (s.id.empty())
      return no(refusal::invalid, "a task to add has no id");
    if (!ids.insert(s.id).second)
      return no(refusal::duplicate,
                "task " + s.id + " is already part of the run");
    added.insert(s.id);
  }
  for (auto& s : specs)
    for (auto& dep : s.deps)
      if (ids.count(dep) == 0)
        return no(refusal::invalid,
                  "task " + s.id + " depends on unknown task " + dep);
  // Tasks of the run never wait for added ones, so a cycle lies among the
  // added tasks: take away those whose added deps are all taken, until
  // none is left (or some wait on each other).
  std::unordered_set<std::string> left = added;
  for (bool progress = true; progress && !left.empty();) {
    progress = false;
    for (auto& s : specs) {
      if (left.count(s.id) == 0)
        continue;
      bool free = true;
      for (auto& dep : s.deps)
        free = free && left.count(dep) == 0;
      if (free) {
        left.erase(s.id);
        progress = true;
      }
    }
  }
  if (!left.empty()) {
    std::vector<std::string> cycle;
    for (auto& s : specs)
      if (left.count(s.id) > 0)
        cycle.push_back(s.id);
    return no(refusal::invalid, "tasks to add depend on each other in a cycle: "
                                  + join(cycle, ", "));
  }
  r.ok = true;
  return r;
}

void scheduler::hold_open(bool on) {
  if (on)
    ++held_open_;
  else if (held_open_ > 0)
    --held_open_;
}

steer_result scheduler::add(std::vector<task_spec> specs) {
  auto r = check_add(specs);
  if (!r.ok)
    return r;
  auto all = graph_.tasks();
  auto first = all.size();
  for (auto& s : specs) {
    s.index = all.size() + 1;
    all.push_back(std::move(s));
  }
  graph_ = plan::task_graph{std::move(all), graph_.options()};
  // Positions are stable, but the ready set's keys and conflicts may have
  // changed: rebuild what derives from the graph.
  records_.resize(graph_.size());
  failures_.resize(graph_.size(), 0);
  merge_repairs_.resize(graph_.size(), 0);
  waiting_.resize(graph_.size(), 0);
  skipped_by_.resize(graph_.size(), std::nullopt);
  reserved_.resize(graph_.size(), false);
  for (size_t i = first; i < graph_.size(); ++i) {
    auto& spec = graph_.task(i);
    auto& rec = records_[i];
    rec.hold = spec.held;
    rec.hold_reason = spec.hold_reason.value_or("");
    rec.needs_approval = spec.needs_approval;
    if (spec.done)
      rec.state = task_state::done;
    count_dependencies(i);
    refresh(i);
    if (rec.state == task_state::pending && rec.hold)
      move(r.changes, i, task_event::hold, rec.hold_reason);
  }
  wake(r.changes);
  return r;
}

// -- plan's waves -------------------------------------------------------------

std::vector<std::vector<size_t>> simulate_waves(const plan::task_graph& g,
                                                size_t max_concurrency) {
  std::vector<task_record> records(g.size());
  rules r;
  r.max_concurrency = max_concurrency;
  r.max_attempts = 1;
  scheduler s{g, std::move(records), r};
  s.start();
  std::vector<std::vector<size_t>> waves;
  for (;;) {
    std::vector<size_t> wave;
    for (auto& c : s.next().changes)
      if (c.then == follow_up::launch)
        wave.push_back(c.task);
    if (wave.empty())
      break;
    // Unit durations: the whole wave passes and is merged before the next
    // one starts.
    for (auto t : wave) {
      s.attempt_ended(t, attempt_end::done, "");
      s.merge_ended(t, merge_end::merged, "");
    }
    waves.push_back(std::move(wave));
  }
  return waves;
}

} // namespace taskforce::run
