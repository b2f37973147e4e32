#!/usr/bin/env bash
# check-figures.sh: fails if a doc comment of the library states a measured
# figure (a benchmark result goes stale; the comment should say where it is
# measured instead: bench/README.md, bench/peers/README.md). It looks at
# the comments of non-test Go files outside bench/, examples/ and hack/ for
# the shapes figures take: nanoseconds or microseconds, decimal ratios
# (1.10×), "A vs B" comparisons, bytes or dials per cluster or minute,
# allocations, and the word "measured". Run by `make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."
pattern='^[[:space:]]*//.*([0-9](\.[0-9]+)? ?(ns|µs)\b|[0-9]\.[0-9]+ ?×|[0-9] ?[a-zA-Z]* vs [0-9]|\bmeasured\b|[0-9] (dials|Gets|requests|reconciles) per|[0-9]+ ?B per|[0-9] allocs)'
files=$(git ls-files '*.go' | grep -vE '_test\.go$|^bench/|^examples/|^hack/' || true)
if [ -n "$files" ] && out=$(echo "$files" | xargs grep -nE "$pattern"); then
  echo "$out"
  echo "doc comments must not state measured figures: link to where they are measured (bench/README.md)" >&2
  exit 1
fi
