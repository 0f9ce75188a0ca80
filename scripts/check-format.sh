#!/usr/bin/env bash
# Every C++ file of the repository is formatted as .clang-format says
# (clang-format 14, Debian 12's); names the files that are not.
set -euo pipefail
cd "$(dirname "$0")/.."
git ls-files -z '*.cpp' '*.hpp' '*.h' \
  | xargs -0 clang-format --dry-run -Werror
echo "format: every C++ file matches .clang-format"
