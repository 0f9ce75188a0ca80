// libFuzzer target: a custom parser's JSON output, validated like a file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"
#include "src/taskfile/raw_task.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  taskforce::taskfile::parse_options opts;
  taskforce::taskfile::parse_result result;
  auto raw = taskforce::taskfile::read_parser_output(text, result.errors);
  auto tasks
    = taskforce::taskfile::validate(std::move(raw), opts, result.errors);
  if (result.errors.empty())
    result.tasks = std::move(tasks);
  // Lines come from the parser's own claims: only their presence is checked.
  taskforce::fuzz::check_result(result, 0, false);
  return 0;
}
