// libFuzzer target: the headings parser, then the graph and the waves.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  taskforce::taskfile::parse_options opts;
  opts.format = "headings";
  opts.fields = {{"Scope", "files"}, {"Gate", "verify"}};
  opts.approval_risks = {"\xF0\x9F\x94\xB4"};
  opts.sequential_deps = size % 2 == 1;
  auto result = taskforce::taskfile::parse(text, "fuzz.md", opts);
  taskforce::fuzz::check_result(result, taskforce::fuzz::count_lines(text));
  return 0;
}
