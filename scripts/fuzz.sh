#!/usr/bin/env bash
# Runs every Fuzz target in the module for a short time each.
# Usage: scripts/fuzz.sh [duration]   (default 10s)
set -euo pipefail
fuzztime=${1:-10s}
cd "$(dirname "$0")/.."
found=0
while IFS= read -r file; do
  pkg=./$(dirname "$file")
  for target in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | awk '{print $2}'); do
    found=1
    echo "fuzz $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
  done
done < <(grep -rl --include='*_test.go' -E '^func Fuzz' . | sort)
[ "$found" = 1 ] || echo "no fuzz targets yet"
