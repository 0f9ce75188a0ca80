#!/usr/bin/env bash
# bench/run.sh [BUILD_DIR]: the run engine against the plain tools, side by
# side, in temporary repositories.
#   (1) dispatch: 200 tasks whose run: is a trivial command, worktrees off,
#       -j2, against `xargs -P2` running the same commands (target <= 1.25x);
#   (2) git cycle: 50 tasks each changing one file of a 2,000-file
#       repository, each in a worktree, committed and merged as a merge
#       commit, against a shell loop doing the same cycle with the git CLI
#       (worktree add, commit, merge --no-ff, worktree remove; target <= 0.25x);
#   (3) the same 50 tasks with a gate, run.verifyMerged off and on: what
#       running the gate again on each merge result costs.
# Prints the figures, the ratios and peak memory, and ends with one line
# `bench run: key=value ...`.
set -euo pipefail
build=${1:-build}
tf=$(cd "$build" && pwd)/taskforce
[ -x "$tf" ] || { echo "bench run: $tf not built" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/taskforce-bench-XXXXXX")
trap 'rm -rf "$work"' EXIT
export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export NO_COLOR=1

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

new_repo() {
  git init -q -b main "$1"
  git -C "$1" config user.name bench
  git -C "$1" config user.email bench@example.com
}

# --- (1) dispatch --------------------------------------------------------------
d="$work/dispatch"
new_repo "$d"
echo "# dispatch" > "$d/README.md"
{
  for i in $(seq 1 200); do
    printf -- '- [ ] Task %d\n  - files: out/%d.txt\n  - run: true %d\n' "$i" "$i" "$i"
  done
} > "$d/TASKS.md"
git -C "$d" add -A && git -C "$d" commit -qm tasks
echo '{"run": {"useWorktrees": false, "maxConcurrency": 2}}' > "$work/dispatch.json"

for i in $(seq 1 200); do echo "true $i"; done > "$work/commands.txt"
# Whatever earlier work left for the disk to write (a build, the repository
# just made) is written now, not during the timed runs.
sync
t0=$(now)
xargs -P2 -I{} sh -c '{}' < "$work/commands.txt"
t1=$(now)
xargs_s=$(elapsed "$t0" "$t1")

t0=$(now)
/usr/bin/time -f '%M' -o "$work/dispatch.mem" \
  "$tf" --repo "$d" --config "$work/dispatch.json" run "$d/TASKS.md" --plain \
  > "$work/dispatch.log" 2>&1 || { tail -5 "$work/dispatch.log"; exit 1; }
t1=$(now)
dispatch_s=$(elapsed "$t0" "$t1")
dispatch_mem=$(tail -1 "$work/dispatch.mem")
dispatch_ratio=$(ratio "$dispatch_s" "$xargs_s")
printf '(1) 200 trivial tasks, -j2, no worktrees: taskforce %ss, xargs -P2 %ss, ratio %sx (target <= 1.25x), peak RSS %s KiB\n' \
  "$dispatch_s" "$xargs_s" "$dispatch_ratio" "$dispatch_mem"

# --- (2) worktree, commit, merge ----------------------------------------------------
make_big_repo() {
  new_repo "$1"
  mkdir -p "$1/files"
  for i in $(seq 1 2000); do
    printf 'file %d\n%s\n' "$i" "$(head -c 2000 /dev/zero | tr '\0' 'x')" > "$1/files/f$i.txt"
  done
  git -C "$1" add -A && git -C "$1" commit -qm "2,000 files"
  sync # its 2,000 files reach the disk before anything is timed
}
g="$work/gitcli"
make_big_repo "$g"
t0=$(now)
for i in $(seq 1 50); do
  git -C "$g" worktree add -q -b "task/$i" "$g/.wt/$i" main
  echo "changed by task $i" >> "$g/.wt/$i/files/f$i.txt"
  git -C "$g/.wt/$i" commit -qam "task $i"
  git -C "$g" merge -q --no-ff -m "merge task $i" "task/$i"
  git -C "$g" worktree remove "$g/.wt/$i"
  git -C "$g" branch -q -d "task/$i"
done
t1=$(now)
gitcli_s=$(elapsed "$t0" "$t1")

c="$work/cycle"
make_big_repo "$c"
{
  for i in $(seq 1 50); do
    printf -- '- [ ] Task %d\n  - files: files/f%d.txt\n  - run: echo "changed by task %d" >> files/f%d.txt\n' "$i" "$i" "$i" "$i"
  done
} > "$c/TASKS.md"
git -C "$c" add TASKS.md && git -C "$c" commit -qm tasks
echo '{"run": {"maxConcurrency": 2}}' > "$work/cycle.json"
t0=$(now)
/usr/bin/time -f '%M' -o "$work/cycle.mem" \
  "$tf" --repo "$c" --config "$work/cycle.json" run "$c/TASKS.md" --plain \
  > "$work/cycle.log" 2>&1 || { tail -5 "$work/cycle.log"; exit 1; }
t1=$(now)
cycle_s=$(elapsed "$t0" "$t1")
cycle_mem=$(tail -1 "$work/cycle.mem")
cycle_ratio=$(ratio "$cycle_s" "$gitcli_s")
merges=$(git -C "$c" log --first-parent --merges --oneline main | wc -l)
printf '(2) 50 tasks in a 2,000-file repo, worktree+commit+merge: taskforce %ss (%s merge commits), git CLI loop %ss, ratio %sx (target <= 0.25x), peak RSS %s KiB\n' \
  "$cycle_s" "$merges" "$gitcli_s" "$cycle_ratio" "$cycle_mem"

# --- (3) the gate on the merge result (run.verifyMerged) ---------------------------
# The same 50 tasks with a gate, once with verifyMerged off (the gate runs on
# the task's branch only) and once on (it runs again on the merge result in
# the scratch worktree before the base moves).
gated_run() {
  local repo="$work/gated-$1"
  make_big_repo "$repo"
  {
    for i in $(seq 1 50); do
      printf -- '- [ ] Task %d\n  - files: files/f%d.txt\n  - run: echo "changed by task %d" >> files/f%d.txt\n  - verify: grep -q "changed by task %d" files/f%d.txt\n' "$i" "$i" "$i" "$i" "$i" "$i"
    done
  } > "$repo/TASKS.md"
  git -C "$repo" add TASKS.md && git -C "$repo" commit -qm tasks
  echo "{\"run\": {\"maxConcurrency\": 2, \"verifyMerged\": $1}}" > "$work/gated-$1.json"
  local t0 t1
  t0=$(now)
  "$tf" --repo "$repo" --config "$work/gated-$1.json" run "$repo/TASKS.md" --plain \
    > "$work/gated-$1.log" 2>&1 || { tail -5 "$work/gated-$1.log"; exit 1; }
  t1=$(now)
  elapsed "$t0" "$t1"
}
gated_off_s=$(gated_run false)
gated_on_s=$(gated_run true)
verify_merged_ratio=$(ratio "$gated_on_s" "$gated_off_s")
printf '(3) the same 50 tasks with a gate: verifyMerged off %ss, on %ss (the gate again on each merge result), ratio %sx\n' \
  "$gated_off_s" "$gated_on_s" "$verify_merged_ratio"

echo "bench run: dispatch_s=$dispatch_s xargs_s=$xargs_s dispatch_ratio=$dispatch_ratio cycle_s=$cycle_s gitcli_s=$gitcli_s cycle_ratio=$cycle_ratio dispatch_peak_kib=$dispatch_mem cycle_peak_kib=$cycle_mem merges=$merges verify_merged_ratio=$verify_merged_ratio"
