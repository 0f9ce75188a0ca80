// Where the tests find the built `taskforce` and the source tree. The paths
// are compiled into tests/paths.cpp alone, so no other test object carries
// the checkout's path and a compiler cache serves every checkout alike.
#pragma once

namespace taskforce::test {

/// The `taskforce` executable under test.
const char* binary_path();

/// The top folder of the source tree.
const char* source_dir();

} // namespace taskforce::test

#define TASKFORCE_BINARY (::taskforce::test::binary_path())
#define TASKFORCE_SOURCE_DIR (::taskforce::test::source_dir())
