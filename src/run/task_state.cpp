#include "src/run/task_state.hpp"
#include "src/text/enum_name.hpp"

#include <array>

namespace taskforce {

namespace {

constexpr std::array<task_state, 13> all_task_states{
  task_state::pending,     task_state::ready,   task_state::running,
  task_state::verifying,   task_state::merging, task_state::done,
  task_state::failed,      task_state::blocked, task_state::skipped,
  task_state::held,        task_state::review,  task_state::conflict,
  task_state::interrupted,
};

constexpr std::array<task_event, 18> all_task_events{
  task_event::deps_done,   task_event::hold,
  task_event::release,     task_event::start,
  task_event::work_done,   task_event::repair,
  task_event::gate_passed, task_event::merge,
  task_event::merged,      task_event::keep_for_review,
  task_event::conflict,    task_event::fail,
  task_event::block,       task_event::interrupt,
  task_event::retry,       task_event::skip,
  task_event::reset,       task_event::reject,
};

constexpr std::array<run_state, 4> all_run_states{
  run_state::running,
  run_state::paused,
  run_state::completed,
  run_state::aborted,
};

} // namespace

const char* to_string(task_state x) {
  switch (x) {
    case task_state::pending: return "pending";
    case task_state::ready: return "ready";
    case task_state::running: return "running";
    case task_state::verifying: return "verifying";
    case task_state::merging: return "merging";
    case task_state::done: return "done";
    case task_state::failed: return "failed";
    case task_state::blocked: return "blocked";
    case task_state::skipped: return "skipped";
    case task_state::held: return "held";
    case task_state::review: return "review";
    case task_state::conflict: return "conflict";
    case task_state::interrupted: return "interrupted";
  }
  return "unknown";
}

const char* to_string(task_event x) {
  switch (x) {
    case task_event::deps_done: return "deps_done";
    case task_event::hold: return "hold";
    case task_event::release: return "release";
    case task_event::start: return "start";
    case task_event::work_done: return "work_done";
    case task_event::repair: return "repair";
    case task_event::gate_passed: return "gate_passed";
    case task_event::merge: return "merge";
    case task_event::merged: return "merged";
    case task_event::keep_for_review: return "keep_for_review";
    case task_event::conflict: return "conflict";
    case task_event::fail: return "fail";
    case task_event::block: return "block";
    case task_event::interrupt: return "interrupt";
    case task_event::retry: return "retry";
    case task_event::skip: return "skip";
    case task_event::reset: return "reset";
    case task_event::reject: return "reject";
  }
  return "unknown";
}

const char* to_string(run_state x) {
  switch (x) {
    case run_state::running: return "running";
    case run_state::paused: return "paused";
    case run_state::completed: return "completed";
    case run_state::aborted: return "aborted";
  }
  return "unknown";
}

bool from_string(std::string_view name, task_state& out) {
  return from_name(name, all_task_states, out);
}

bool from_string(std::string_view name, task_event& out) {
  return from_name(name, all_task_events, out);
}

bool from_string(std::string_view name, run_state& out) {
  return from_name(name, all_run_states, out);
}

// The task lifecycle: the main line, then the moves out of it and back in.
// Every side state waits for a person or a resume and leads back into the
// main line. This drawing and the switch below say the same thing.
//
//           pending --hold--> held --release--> pending
//              |
//          deps_done
//              v
//   +-----> ready --start--> running --work_done--> verifying
//   |                         ^  ^                   |   |
//   |                         |  +------repair-------+   | gate_passed
//   |                       start                        v
//   |                         |                       merging --merged--> done
//   |                         |      keep_for_review  |     | conflict
//   |                         |       review <--------+     +--> conflict
//   |                         |
//   |                    interrupted <--interrupt-- running|verifying|merging
//   |                    failed      <--fail------- running|verifying|merging
//   |                    blocked     <--block------ running|verifying
//   |
//   +--retry-- running|verifying|merging|failed|blocked|conflict|interrupted
//              (from merging: the gate failed on the merge result, and the
//              next attempt begins with its repair)
//
//   review|conflict|interrupted --merge--> merging
//   review|conflict|interrupted --merged--> done   (found already merged)
//   pending|ready|held --skip--> skipped
//   ready|failed|blocked|skipped|conflict|interrupted|review --reset--> pending
//   review|held --reject--> blocked
std::optional<task_state> transition(task_state from, task_event event) {
  using s = task_state;
  auto in = [from](std::initializer_list<s> states) {
    for (auto x : states)
      if (x == from)
        return true;
    return false;
  };
  switch (event) {
    case task_event::deps_done:
      if (in({s::pending}))
        return s::ready;
      break;
    case task_event::hold:
      if (in({s::pending, s::ready}))
        return s::held;
      break;
    case task_event::release:
      if (in({s::held}))
        return s::pending;
      break;
    case task_event::start:
      if (in({s::ready, s::interrupted}))
        return s::running;
      break;
    case task_event::work_done:
      if (in({s::running}))
        return s::verifying;
      break;
    case task_event::repair:
      if (in({s::verifying}))
        return s::running;
      break;
    case task_event::gate_passed:
      if (in({s::verifying}))
        return s::merging;
      break;
    case task_event::merge:
      if (in({s::review, s::conflict, s::interrupted}))
        return s::merging;
      break;
    case task_event::merged:
      if (in({s::merging, s::review, s::conflict, s::interrupted}))
        return s::done;
      break;
    case task_event::keep_for_review:
      if (in({s::merging}))
        return s::review;
      break;
    case task_event::conflict:
      if (in({s::merging}))
        return s::conflict;
      break;
    case task_event::fail:
      if (in({s::running, s::verifying, s::merging}))
        return s::failed;
      break;
    case task_event::block:
      if (in({s::running, s::verifying}))
        return s::blocked;
      break;
    case task_event::interrupt:
      if (in({s::running, s::verifying, s::merging}))
        return s::interrupted;
      break;
    case task_event::retry:
      if (in({s::running, s::verifying, s::merging, s::failed, s::blocked,
              s::conflict, s::interrupted}))
        return s::ready;
      break;
    case task_event::skip:
      if (in({s::pending, s::ready, s::held}))
        return s::skipped;
      break;
    case task_event::reset:
      if (in({s::ready, s::failed, s::blocked, s::skipped, s::conflict,
              s::interrupted, s::review}))
        return s::pending;
      break;
    case task_event::reject:
      if (in({s::review, s::held}))
        return s::blocked;
      break;
  }
  return std::nullopt;
}

std::optional<task_event> event_between(task_state from, task_state to) {
  for (auto e : all_task_events)
    if (auto next = transition(from, e); next && *next == to)
      return e;
  return std::nullopt;
}

bool allowed(task_state from, task_state to) {
  return event_between(from, to).has_value();
}

bool in_attempt(task_state x) {
  return x == task_state::running || x == task_state::verifying;
}

bool is_active(task_state x) {
  return in_attempt(x) || x == task_state::merging;
}

bool is_final(task_state x) {
  return x == task_state::done || x == task_state::skipped;
}

bool needs_attention(task_state x) {
  switch (x) {
    case task_state::failed:
    case task_state::blocked:
    case task_state::conflict:
    case task_state::review:
    case task_state::held:
    case task_state::interrupted: return true;
    default: return false;
  }
}

bool allowed(run_state from, run_state to) {
  switch (from) {
    case run_state::running: return to != run_state::running;
    case run_state::paused: return to != run_state::paused;
    case run_state::completed:
    case run_state::aborted: return false;
  }
  return false;
}

bool is_finished(run_state x) {
  return x == run_state::completed || x == run_state::aborted;
}

} // namespace taskforce
