#include "src/cli/cli.hpp"

int main(int argc, char** argv) {
  return taskforce::cli::main(argc, argv);
}
