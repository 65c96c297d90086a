#!/usr/bin/env bash
# The whole suite N times in a row (default 5) on a clean clone of this repository's HEAD while two busy loops
# (`yes > /dev/null`) keep the cores busy: a race that hides on an idle machine shows here. Stops at the first
# failure and leaves that run's log. Usage: scripts/suite-under-load.sh [runs] [work-dir]
set -uo pipefail
runs=${1:-5}
work=${2:-$(mktemp -d /tmp/tts-under-load.XXXXXX)}
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)

rm -rf "$work/clone" && git clone -q "$repo" "$work/clone" && cd "$work/clone" || exit 2
echo "suite under load: commit $(git rev-parse --short HEAD), $runs runs, logs in $work"
yes > /dev/null & busy1=$!
yes > /dev/null & busy2=$!
trap 'kill "$busy1" "$busy2" 2>/dev/null' EXIT

npm ci > "$work/install.log" 2>&1 || { echo "npm ci failed: see $work/install.log"; exit 2; }
for run in $(seq 1 "$runs"); do
  start=$(date +%s)
  CI=true npm test > "$work/run-$run.log" 2>&1
  status=$?
  summary=$(grep -E '^Tests:' "$work/run-$run.log" | tail -1)
  echo "run $run: status $status in $(( $(date +%s) - start )) s; ${summary:-no summary}; load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ "$status" -ne 0 ]; then
    echo "run $run failed: see $work/run-$run.log"
    exit 1
  fi
done
echo "all $runs runs passed"
