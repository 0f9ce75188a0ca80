#!/usr/bin/env bash
# Installs what is missing, builds (optimised) and runs the demonstration.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build
exec build/taskforce demo "$@"
