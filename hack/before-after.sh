#!/usr/bin/env bash
# before-after.sh [flags] (make bench-before-after): issue 37's earlier bars
# measured in one run on two trees, the commit -before and this working tree.
# The before tree is a git worktree under bin/before-<commit> (made and removed
# here, or reused if present; its bin/ is a link to ours, so tools and peers are
# shared). In turn:
#   bench  both trees' bench test binaries, -count runs each, alternating run
#          by run (before, after, then after, before, ...); benchstat before/after
#   soak   pool TestSoak for -soak in each tree: before, after, after, before
#   peers  one bench-peers driver run: cct, clustercache, clusterpool and the
#          before tree's clusterpool peer (-peer before=...), on one fleet
#   mhc    one bench-mhc driver run on one fleet: stock, adapter, before,
#          before, adapter, stock (before: the before tree's capi peer)
# Writes OUT/before-after.{md,json} (the driver's -before-after report) and the
# raw outputs under OUT/before-after/ (emptied first).
# Flags:
#   -before REV       the before tree (default 1bc0d5e)
#   -count N          bench runs per tree (default 6)
#   -benchtime D      go test -benchtime of each bench run (default 1s)
#   -bench REGEX      the benchmarks (default '^(BenchmarkHit|BenchmarkOpenRejection)$')
#   -soak D           each soak run's length (default 2m)
#   -only LIST        comma-separated steps to run (default bench,soak,peers,mhc)
#   -peers-flags F    more driver flags for the peers run (e.g. "-run ^dead$ -clusters 8")
#   -mhc-flags F      more driver flags for the mhc run (e.g. "-clusters 10 -mhc-duration 30s")
#   -out DIR          where the report goes (default bench/peers/results)
#   -keep             keep the before worktree at the end
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

before=1bc0d5e count=6 benchtime=1s bench='^(BenchmarkHit|BenchmarkOpenRejection)$' soak=2m
only=bench,soak,peers,mhc out=bench/peers/results keep=0 peers_flags='' mhc_flags=''
while [ $# -gt 0 ]; do
  case "$1" in
    -keep) keep=1; shift; continue ;;
    -h | -help | --help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  esac
  [ $# -ge 2 ] || { echo "before-after.sh: $1 needs a value (-h lists the flags)" >&2; exit 2; }
  case "$1" in
    -before) before=$2 ;;
    -count) count=$2 ;;
    -benchtime) benchtime=$2 ;;
    -bench) bench=$2 ;;
    -soak) soak=$2 ;;
    -only) only=$2 ;;
    -peers-flags) peers_flags=$2 ;;
    -mhc-flags) mhc_flags=$2 ;;
    -out) out=$2 ;;
    *) echo "before-after.sh: unknown flag $1 (-h lists the flags)" >&2; exit 2 ;;
  esac
  shift 2
done
: "${KUBEBUILDER_ASSETS:?run it through make bench-before-after (the envtest assets)}"
has() { [[ ",$only," == *",$1,"* ]]; }
say() { echo "before-after: $*" >&2; }

before_sha=$(git rev-parse --verify "$before^{commit}")
out="$(realpath -m "$out")"
raw="$out/before-after"
rm -rf "$raw"
mkdir -p "$raw" "$root/bin"
changes=""
[ -z "$(git status --porcelain -- . ':!bin')" ] || changes=" with the working tree's uncommitted changes"
{ # the trees compared, for the report
  git log -1 --format='before %H (%cs)' "$before_sha"
  git log -1 --format="after %H (%cs)$changes" HEAD
} >"$raw/trees.txt"
tmp="$(mktemp -d "$root/bin/before-after.XXXXXX")" # test binaries and the driver
wt="$root/bin/before-${before_sha:0:12}"
made=0
cleanup() {
  rm -rf "$tmp"
  if [ "$made" = 1 ] && [ "$keep" = 0 ]; then
    rm -f "$wt/bin" # the link first: never a path into our bin/
    git worktree remove --force "$wt"
  fi
}
trap cleanup EXIT

if [ -e "$wt/.git" ]; then
  [ "$(git -C "$wt" rev-parse HEAD)" = "$before_sha" ] ||
    { echo "before-after.sh: $wt is not at $before_sha: git worktree remove --force $wt" >&2; exit 1; }
  say "reusing the worktree $wt"
else
  git worktree add --force --detach "$wt" "$before_sha" >&2
  made=1
fi
[ -L "$wt/bin" ] || ln -s "$root/bin" "$wt/bin"

# tree NAME: the directory of tree NAME (before or after).
tree() { if [ "$1" = before ]; then echo "$wt"; else echo "$root"; fi; }

# testbin PKG: both trees' test binaries of PKG into $tmp/PKG-TREE.test.
testbin() {
  for t in before after; do
    (cd "$(tree "$t")/$1" && go test -c -o "$tmp/$1-$t.test" .) # bench is a module of its own since issue 46
  done
}

if has bench; then
  testbin bench
  for i in $(seq 1 "$count"); do
    order="before after"
    [ $((i % 2)) = 0 ] && order="after before"
    for t in $order; do
      say "bench run $i of $count, $t"
      (cd "$(tree "$t")/bench" && "$tmp/bench-$t.test" -test.run '^$' -test.bench "$bench" -test.benchmem \
        -test.count 1 -test.benchtime "$benchtime") >>"$raw/bench-$t.txt"
    done
  done
  "$root/bin/benchstat" before="$raw/bench-before.txt" after="$raw/bench-after.txt" | tee "$raw/benchstat.txt"
fi

if has soak; then
  testbin pool
  i=0
  for t in before after after before; do
    i=$((i + 1))
    say "soak run $i of 4, $t ($soak)"
    (cd "$(tree "$t")/pool" && "$tmp/pool-$t.test" -test.run '^TestSoak$' -test.count 1 -test.v \
      -soak.duration "$soak") >"$raw/soak-$i-$t.txt" 2>&1 || say "soak run $i ($t) failed: $raw/soak-$i-$t.txt"
  done
fi

# peer NAME: the before tree's peer NAME, built by its own build.sh (into our
# bin/peers/, keyed by its sources' digest), relative to the repository.
peer() { realpath --relative-to="$root" "$(bash "$wt/bench/peers/build.sh" "$1")"; }

(cd bench && go build -o "$tmp/driver" ./peers/driver)
if has peers; then
  read -ra flags <<<"$peers_flags"
  bin="$(peer clusterpool)"
  say "bench-peers with the before peer $bin"
  "$tmp/driver" -strategies cct,clustercache,clusterpool -peer "before=$bin" "${flags[@]}" \
    -json "$raw/peers.json" | tee "$raw/peers.md"
fi
if has mhc; then
  read -ra flags <<<"$mhc_flags"
  bin="$(peer capi)"
  say "bench-mhc with the before drop-in $bin"
  "$tmp/driver" -mhc -mhc-peer "before=$bin" "${flags[@]}" -json "$raw/mhc.json" | tee "$raw/mhc.md"
fi

"$tmp/driver" -before-after "$raw" -json "$out/before-after.json" >"$out/before-after.md"
cat "$out/before-after.md"
