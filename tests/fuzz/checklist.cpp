// libFuzzer target: the checklist parser, then the graph and the waves.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  taskforce::taskfile::parse_options opts;
  opts.format = "checklist";
  opts.approval_risks = {"high"};
  opts.sequential_deps = size % 2 == 1;
  auto result = taskforce::taskfile::parse(text, "fuzz.md", opts);
  taskforce::fuzz::check_result(result, taskforce::fuzz::count_lines(text));
  return 0;
}
