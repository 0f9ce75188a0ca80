// The one main of the test binary; each suite is a .cpp under tests/.
#define CAF_TEST_NO_MAIN
#include <caf/test/unit_test_impl.hpp>

#include <git2.h>

int main(int argc, char** argv) {
  git_libgit2_init();
  auto result = caf::test::main(argc, argv);
  git_libgit2_shutdown();
  return result;
}
