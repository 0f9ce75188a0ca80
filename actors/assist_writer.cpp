#include "actors/assist_writer.hpp"

#include <caf/all.hpp>
#include <spdlog/spdlog.h>

#include "messages/run.hpp"
#include "src/run/assist.hpp"

namespace taskforce {

namespace {

struct assist_state {
  static inline const char* name = "assist_writer";
  assist_setup setup;
};

using self_ptr = caf::stateful_actor<assist_state>*;

const task_spec* find_task(const assist_setup& s, const std::string& id) {
  for (auto& t : s.tasks)
    if (t.id == id)
      return &t;
  return nullptr;
}

void on_event(self_ptr self, const run_event& ev) {
  auto& s = self->state.setup;
  if (ev.task_id.empty())
    return; // a change of the run itself
  auto* task = find_task(s, ev.task_id);
  if (s.flip_checkboxes && ev.state == task_state::done && task != nullptr) {
    auto file = s.root / s.file;
    try {
      if (!run::check_box_in_file(file, *task))
        spdlog::warn("{}: no box of task {} (\"{}\") found in {}; it stays "
                     "as it is",
                     ev.run_id, task->id, task->title, file.string());
    } catch (const std::exception& e) {
      spdlog::warn("{}: cannot check the box of task {}: {}", ev.run_id,
                   ev.task_id, e.what());
    }
  }
  bool finished = ev.state == task_state::done || ev.state == task_state::failed
                  || ev.state == task_state::blocked;
  if (!s.progress_file.empty() && finished) {
    run::progress_entry e;
    e.run_id = ev.run_id;
    e.task_id = ev.task_id;
    e.title = ev.title;
    e.state = to_string(ev.state);
    e.attempt = ev.attempt;
    e.reason = ev.reason;
    e.time_ms = ev.time_ms;
    try {
      run::append_progress(s.root / s.progress_file, run::progress_block(e));
    } catch (const std::exception& ex) {
      spdlog::warn("{}: {}", ev.run_id, ex.what());
    }
  }
}

} // namespace

caf::behavior assist_writer(self_ptr self, assist_setup setup) {
  self->state.setup = std::move(setup);
  return {
    [self](run_event& ev) {
      on_event(self, ev);
    },
  };
}

caf::actor spawn_assist_writer(caf::actor_system& sys, assist_setup setup) {
  return sys.spawn<caf::detached>(assist_writer, std::move(setup));
}

} // namespace taskforce
