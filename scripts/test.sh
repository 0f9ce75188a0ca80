#!/usr/bin/env bash
# Installs what is missing, builds (Debug) and runs every test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build build-test
ctest --test-dir build-test --output-on-failure -j2
