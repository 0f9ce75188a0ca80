#!/usr/bin/env bash
# Installs what taskforce needs on Debian 12, only what is missing. Safe to run again.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config git
          libcaf-dev nlohmann-json3-dev libspdlog-dev libfmt-dev
          libgit2-dev libsqlite3-dev time)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
