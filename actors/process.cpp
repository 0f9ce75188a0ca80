#include "actors/process.hpp"

#include <filesystem>
#include <fstream>

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

void process(caf::blocking_actor* self, process_job job) {
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

} // namespace

caf::actor spawn_process(caf::actor_system& sys, process_job job) {
  return sys.spawn<caf::detached>(process, std::move(job));
}

} // namespace taskforce
