#!/bin/sh
# A stand-in for an agent CLI, run by the `agent` backend through a preset in
# tests. It takes its prompt from `-p TEXT`, `--prompt-file FILE` or standard
# input, writes every plain path of the prompt's write scope, notes a repair
# round, and reports the way the prompt's contract asks (only if the prompt
# has one). FAKE_AGENT_LOG, when set, receives its arguments and task id.
prompt=""
model="(default)"
worktree=""
have_prompt=no
while [ $# -gt 0 ]; do
  case "$1" in
    -p) prompt="$2"; have_prompt=yes; shift 2 ;;
    --prompt-file) prompt="$(cat "$2")"; have_prompt=yes; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --worktree) worktree="$2"; shift 2 ;;
    *) echo "fake-agent: unknown argument $1" >&2; exit 64 ;;
  esac
done
[ "$have_prompt" = yes ] || prompt="$(cat)"
if [ -n "$FAKE_AGENT_LOG" ]; then
  {
    echo "task=$FAKE_AGENT_TASK"
    echo "model=$model"
    echo "worktree=$worktree"
    echo "pwd=$(pwd)"
    echo "prompt-bytes=$(printf '%s' "$prompt" | wc -c | tr -d ' ')"
  } >> "$FAKE_AGENT_LOG"
fi
echo "fake-agent: thinking about the task"
case "$prompt" in
  *FAKE-BLOCK*)
    echo "I cannot go on."
    echo "[task:blocked] the task asked me to block"
    exit 0 ;;
esac
files=$(printf '%s\n' "$prompt" | sed -n 's/^- `\([^`*?]*\)`$/\1/p')
list=""
for f in $files; do
  mkdir -p "$(dirname "$f")"
  echo "written by fake-agent (model $model)" > "$f"
  case "$prompt" in
    *"## Repair (round"*) echo "repaired" >> "$f" ;;
  esac
  list="$list${list:+, }\"$f\""
done
case "$prompt" in
  *"## How to report"*)
    echo "Done."
    echo '```json'
    echo "{\"status\": \"done\", \"summary\": \"wrote $(echo $files | wc -w | tr -d ' ') files\", \"files\": [$list], \"usage\": {\"input_tokens\": 100, \"output_tokens\": 20, \"cost_usd\": 0.01}}"
    echo '```' ;;
  *)
    echo "All finished, I think." ;;
esac
