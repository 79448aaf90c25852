#!/usr/bin/env bash
# Runs every Fuzz target in the module for a short time each.
# Usage: scripts/fuzz.sh [duration]   (default 10s)
#
# FUZZ_JOBS targets fuzz at once (default 3): each still fuzzes for the
# whole duration, and its output is printed as one block when it ends, so
# the log reads as if they had run one after the other. Each target's
# package is compiled for fuzzing first, one package at a time, so the
# concurrent runs find it in the build cache instead of compiling it side
# by side.
#
# Go 1.26's fuzz coordinator can fail a target with a bare
# "context deadline exceeded" exactly when -fuzztime runs out, with no
# failing input (golang/go#75804, fixed in Go 1.27; in CI it hit 2 of 9
# targets in one run). So the fuzzing itself runs on Go 1.27.3, fetched
# by the go command from the module proxy (FUZZ_TOOLCHAIN; the rest of the
# build stays on the machine's Go). Where that toolchain cannot be had,
# the machine's Go fuzzes, and a run that failed only that way is retried
# (at most 5 tries). Any other failure, or a failing input written to
# testdata/fuzz, fails at once.
set -euo pipefail
fuzztime=${1:-10s}
jobs=${FUZZ_JOBS:-3}
cd "$(dirname "$0")/.."
toolchain=${FUZZ_TOOLCHAIN:-go1.27.3}
if [ -n "$toolchain" ] && GOTOOLCHAIN=$toolchain go version >/dev/null 2>&1; then
  export GOTOOLCHAIN=$toolchain
  echo "fuzzing with $(go version), $jobs targets at a time"
else
  echo "fuzzing with $(go version) ($toolchain not available: retrying golang/go#75804 failures), $jobs targets at a time"
fi
tries=5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# deadline_only reports whether log $1 shows the coordinator's deadline
# race and nothing else: the target's only failure line is the bare
# "context deadline exceeded", and no input was written or panicked.
deadline_only() {
  grep -qE '^[[:space:]]+context deadline exceeded$' "$1" || return 1
  ! grep -qE 'Failing input written|panic:|fuzz_test\.go:|_test\.go:[0-9]+:' "$1"
}

# fuzz_one pkg target: fuzzes one target (with the retries above), its
# output in $work/<n>.log; exit status 0 when it passed.
fuzz_one() {
  local pkg=$1 target=$2 log=$3 try
  for ((try = 1; try <= tries; try++)); do
    echo "fuzz $pkg $target ($fuzztime)" >>"$log"
    if go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >"$log.try" 2>&1; then
      cat "$log.try" >>"$log"
      return 0
    fi
    cat "$log.try" >>"$log"
    if [ "$try" -lt "$tries" ] && deadline_only "$log.try"; then
      echo "fuzz $pkg $target: bare 'context deadline exceeded' at -fuzztime with no failing input (golang/go#75804); retrying" >>"$log"
      continue
    fi
    return 1
  done
}

targets=()
while IFS= read -r file; do
  pkg=./$(dirname "$file")
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | awk '{print $2}'); do
    targets+=("$pkg $target")
  done
done < <(grep -rl --include='*_test.go' -E '^func Fuzz' . | sort)
if [ "${#targets[@]}" = 0 ]; then
  echo "no fuzz targets yet"
  exit 0
fi

# Compile each package for fuzzing once (a pattern no target matches
# builds the instrumented test binary and fuzzes nothing).
for pkg in $(printf '%s\n' "${targets[@]}" | awk '{print $1}' | sort -u); do
  go test -run '^$' -fuzz '^$' -fuzztime 1x "$pkg" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
done

# Up to $jobs targets at once; each finished one's log is printed whole.
failed=0
running=()
finish() { # waits for the oldest running target and prints its log
  local entry=${running[0]} pid log
  running=("${running[@]:1}")
  pid=${entry%% *} log=${entry#* }
  if wait "$pid"; then cat "$log"; else cat "$log"; failed=1; fi
}
n=0
for t in "${targets[@]}"; do
  [ "$failed" = 0 ] || break
  if [ "${#running[@]}" -ge "$jobs" ]; then finish; fi
  n=$((n + 1))
  # shellcheck disable=SC2086
  fuzz_one $t "$work/$n.log" &
  running+=("$! $work/$n.log")
done
while [ "${#running[@]}" -gt 0 ]; do finish; done
exit "$failed"
