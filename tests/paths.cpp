#include "paths.hpp"

namespace taskforce::test {

const char* binary_path() {
  return TASKFORCE_BINARY_PATH;
}

const char* source_dir() {
  return TASKFORCE_SOURCE_PATH;
}

} // namespace taskforce::test
