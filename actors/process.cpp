#include "actors/process.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>

#include <caf/all.hpp>

#include "src/proc/mark.hpp"

namespace fs = std::filesystem;

namespace taskforce {

proc_exited exit_of(const proc::run_result& r) {
  proc_exited out;
  out.exit_code = r.exit_code;
  out.signal = r.signal;
  out.timed_out = r.timed_out;
  out.duration_ms = r.duration.count();
  out.head = r.head;
  out.tail = r.tail;
  out.description = r.describe();
  return out;
}

namespace {

void write_input(const std::string& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(fs::path{path}.parent_path(), ec);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.flush();
  if (!out)
    throw std::runtime_error("cannot write " + path);
}

/// Runs one job on the helper's thread and tells its owner how it went.
void run_job(caf::blocking_actor* self, process_job job) {
  auto owner = job.owner;
  auto& opts = job.run;
  if (opts.mark.empty())
    opts.mark = proc::new_mark(opts.label);
  opts.on_start = [self, owner, mark = opts.mark](pid_t pid) {
    self->send(owner, proc_started{pid, mark});
  };
  if (job.progress_every.count() > 0) {
    opts.output_interval = job.progress_every;
    opts.on_output = [self, owner](const std::string& tail) {
      self->send(owner, proc_output{tail});
    };
  }
  proc_exited out;
  try {
    for (auto& [path, text] : job.inputs)
      write_input(path, text);
    if (!opts.log_file.empty()) {
      std::error_code ec;
      fs::create_directories(fs::path{opts.log_file}.parent_path(), ec);
    }
    out = exit_of(proc::run(opts));
  } catch (const std::exception& e) {
    out.error = e.what();
    out.description = e.what();
  }
  self->send(owner, std::move(out));
}

/// A lane: runs the jobs it is sent, one after the other, until its lanes
/// are gone.
void lane(caf::blocking_actor* self, caf::actor lanes) {
  self->monitor(lanes);
  bool open = true;
  self->receive_while(open)(
    [self](start_atom, process_job& job) {
      run_job(self, std::move(job));
    },
    [](ready_atom, std::vector<std::string>& folders) {
      // Made while the borrower waits for something else; a folder that
      // cannot be made fails the job that needs it, with the reason.
      for (auto& folder : folders) {
        std::error_code ec;
        fs::create_directories(folder, ec);
      }
    },
    [&open](caf::down_msg&) {
      open = false;
    },
    [&open](caf::exit_msg&) {
      open = false;
    });
}

struct lanes_state {
  static inline const char* name = "process_lanes";
  /// Lanes nobody borrows.
  std::vector<caf::actor> idle;
  /// The lane each living borrower has.
  std::map<caf::actor_addr, caf::actor> lent;
};

caf::behavior lanes(caf::stateful_actor<lanes_state>* self) {
  self->set_down_handler([self](caf::down_msg& d) {
    auto& st = self->state;
    if (auto found = st.lent.find(d.source); found != st.lent.end()) {
      // Its borrower is gone: the lane runs what it was sent, then the
      // next borrower's jobs.
      st.idle.push_back(std::move(found->second));
      st.lent.erase(found);
      return;
    }
    // A lane stopped (its borrower sees it through its own monitor).
    auto gone = [&d](const caf::actor& lane) {
      return lane.address() == d.source;
    };
    st.idle.erase(std::remove_if(st.idle.begin(), st.idle.end(), gone),
                  st.idle.end());
    for (auto it = st.lent.begin(); it != st.lent.end();)
      it = gone(it->second) ? st.lent.erase(it) : std::next(it);
  });
  return {
    [self](acquire_atom) -> caf::result<caf::actor> {
      auto& st = self->state;
      auto borrower = caf::actor_cast<caf::actor>(self->current_sender());
      if (!borrower)
        return caf::make_error(caf::sec::invalid_argument,
                               "lanes are lent to actors only");
      if (auto found = st.lent.find(borrower.address()); found != st.lent.end())
        return found->second;
      caf::actor lane;
      if (st.idle.empty()) {
        lane = self->spawn<caf::detached + caf::monitored>(
          taskforce::lane, caf::actor_cast<caf::actor>(self));
      } else {
        lane = std::move(st.idle.back());
        st.idle.pop_back();
      }
      self->monitor(borrower);
      st.lent.emplace(borrower.address(), lane);
      return lane;
    },
  };
}

} // namespace

caf::actor spawn_process(caf::actor_system& sys, process_job job) {
  return sys.spawn<caf::detached>(run_job, std::move(job));
}

caf::actor spawn_process_lanes(caf::actor_system& sys) {
  return sys.spawn(lanes);
}

} // namespace taskforce
