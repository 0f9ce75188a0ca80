#!/usr/bin/env bash
# Installs the agent CLIs the harness tests run (Claude Code, OpenCode, Codex
# and OpenCode's plugin package), at the versions package-lock.json pins,
# from the npm registry and nothing else. Safe to run again: an installation
# whose lock file matches is kept.
#
#   tests/harness/install.sh           install when missing; print the folder
#   tests/harness/install.sh --check   only say whether it is there
#
# The folder is $TASKFORCE_HARNESS_DIR, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/taskforce-harness/<hash of the lock file>;
# its node_modules/.bin holds claude, opencode and codex. On success the last
# line of standard output is the folder and the exit code 0; when the CLIs
# cannot be had (no npm, no registry) the exit code is 3 and the last line of
# standard error says why.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
check_only=no
[ "${1:-}" = "--check" ] && check_only=yes

fail() {
  echo "harness CLIs unavailable: $*" >&2
  exit 3
}

lock="$here/package-lock.json"
# The contents only, not the paths: every checkout of the same pins shares one.
hash="$(cat "$lock" "$here/package.json" | sha256sum | cut -c1-16)"
dir="${TASKFORCE_HARNESS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/taskforce-harness/$hash}"
stamp="$dir/.installed"

ready() {
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ] \
    && [ -x "$dir/node_modules/.bin/claude" ] \
    && [ -x "$dir/node_modules/.bin/opencode" ] \
    && [ -x "$dir/node_modules/.bin/codex" ]
}

if ready; then
  echo "$dir"
  exit 0
fi
[ "$check_only" = yes ] && fail "not installed in $dir (run tests/harness/install.sh)"
command -v npm >/dev/null 2>&1 || fail "npm is not installed (Debian: apt-get install nodejs npm)"
mkdir -p "$dir" || fail "cannot create $dir"

# One installer at a time: parallel test suites may all ask at once.
exec 9>"$dir/.lock"
flock 9
if ready; then
  echo "$dir"
  exit 0
fi
cp "$here/package.json" "$lock" "$dir/" || fail "cannot copy the package files to $dir"
rm -rf "$dir/node_modules" "$stamp"
# `npm install` with the lock file rather than `npm ci`: opencode-ai names
# optional platform packages for every system, a registry mirror may carry
# only some of them, and `npm ci` refuses the lock file then as out of sync.
# No install scripts from the whole tree; the two the CLIs need only link the
# native program from their platform package (no download), so they run
# here by name.
if ! (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund --prefer-offline \
        --loglevel=error >"$dir/npm.log" 2>&1 \
      && (cd node_modules/@anthropic-ai/claude-code && node install.cjs) >>"$dir/npm.log" 2>&1 \
      && (cd node_modules/opencode-ai && node postinstall.mjs) >>"$dir/npm.log" 2>&1); then
  tail -n 5 "$dir/npm.log" >&2
  fail "npm install failed in $dir (see $dir/npm.log)"
fi
for cli in claude opencode codex; do
  "$dir/node_modules/.bin/$cli" --version >/dev/null 2>&1 \
    || fail "$cli does not run after the install (see $dir/npm.log)"
done
echo "$hash" >"$stamp"
echo "$dir"
