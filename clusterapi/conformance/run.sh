#!/usr/bin/env bash
# run.sh: Cluster API v1.14.2's own envtest suites — every package whose tests
# call clustercache.SetupWithManager — run on a copy of Cluster API's source
# taken from the Go module cache into ./bin, stock and with that one call
# swapped for clusterpool's drop-in (github.com/clusterpool/clusterpool/clusterapi/clustercache).
#
# usage: run.sh [stock|adapter|both|lifted] [suite ...]
#   stock    the untouched copy bin/capi-v1.14.2, on Cluster API's own go.mod and go.sum
#            (checked byte for byte against the module cache before and after).
#   adapter  a second copy, bin/capi-v1.14.2-adapter, whose only changes are: each suite file
#            imports the adapter as cpclustercache and calls cpclustercache.SetupWithManager;
#            go.mod requires and replaces github.com/clusterpool/clusterpool (this clone) and
#            .../clusterapi (this clone's clusterapi/), and `go mod tidy` records the versions
#            that minimal version selection lifts (controller-runtime, k8s.io) and their sums.
#   both     stock, then adapter (the default); fails if a test that passes stock does not
#            pass on the adapter, unless known-failures.txt names it.
#   lifted   diagnostic: the adapter's patch, but the swapped package is a generated shim that
#            calls Cluster API's own SetupWithManager — the stock ClusterCache on the dependency
#            versions the adapter lifts to. A test failing here fails because of the lift.
#   suite    package directories relative to Cluster API's root (default: every suite found).
# adapter and lifted alone fail on any failure that known-failures.txt does not name.
#
# Counting: "tests" are top-level Test functions, "subtests" every t.Run case below them;
# "run" includes skipped ones. A test that started but never ended (the binary died) counts
# as failed ("incomplete"). Wall time includes compiling and envtest's start and stop;
# "test binary" is the package time that go test reports.
#
# Environment: KUBEBUILDER_ASSETS (required; the Makefile exports it), CONFORMANCE_TIMEOUT
# (go test -timeout per suite, whole minutes, default 20m; the whole go test is killed 15 min
# later), CONFORMANCE_GO_FLAGS (more go test flags, e.g. -race or -run 'TestX').
# Writes bin/capi-conformance-<mode>.md, bin/capi-conformance-compare.md (both) and, per
# suite, bin/capi-conformance/<mode>/<suite>.{json,results,failures,stderr}.
set -euo pipefail

readonly CAPI_VERSION=v1.14.2
readonly CAPI_MOD=sigs.k8s.io/cluster-api
readonly ADAPTER_MOD=github.com/clusterpool/clusterpool/clusterapi
readonly ROOT_MOD=github.com/clusterpool/clusterpool
# The suites issue 24 names; run.sh runs what grep finds and warns if the two differ.
readonly EXPECTED_SUITES="controlplane/kubeadm/pkg core/reconcilers/cluster core/reconcilers/clusterresourceset core/reconcilers/machine core/reconcilers/machinedeployment core/reconcilers/machinehealthcheck core/reconcilers/machinepool core/reconcilers/machineset core/reconcilers/topology/cluster internal/topology/upgrade"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
adapter_dir=$(cd "$here/.." && pwd)
root=$(cd "$adapter_dir/.." && pwd)
bin=$root/bin
out=$bin/capi-conformance
known=$here/known-failures.txt

export GOWORK=off GOTOOLCHAIN=${GOTOOLCHAIN:-local}
# Cluster API's envtest reads these; a leftover value would change what runs.
unset ARTIFACTS USE_EXISTING_CLUSTER CAPI_DISABLE_TEST_ENV CAPI_TEST_ENV_KUBECONFIG CAPI_TEST_ENV_SKIP_STOP

die() { echo "run.sh: $*" >&2; exit 2; }

mode=${1:-both}
[ $# -gt 0 ] && shift
case "$mode" in stock | adapter | both | lifted) ;; *) die "unknown mode '$mode' (stock, adapter, both, lifted)" ;; esac
only_suites=("$@")

timeout_min=${CONFORMANCE_TIMEOUT:-20m}
[[ "$timeout_min" =~ ^[0-9]+m$ ]] || die "CONFORMANCE_TIMEOUT must be whole minutes, like 20m"
hard_timeout=$(( ${timeout_min%m} + 15 ))m
# -vet=off first: these suites test the cache; go test's vet would analyse Cluster API's
# packages and their whole dependency graph, CPU a cold CI spends for nothing.
read -r -a extra_flags <<< "-vet=off ${CONFORMANCE_GO_FLAGS:-}"

[ -n "${KUBEBUILDER_ASSETS:-}" ] || die "KUBEBUILDER_ASSETS is not set (make exports it; see make envtest-assets)"
for b in kube-apiserver etcd; do
  [ -x "$KUBEBUILDER_ASSETS/$b" ] || die "no $b in KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS"
done

# module_dir PATH@VERSION: the module's read-only directory in the module cache (downloads it).
module_dir() {
  local dir
  dir=$(cd / && go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  [ -d "$dir" ] || die "go mod download $1 gave no directory"
  echo "$dir"
}
capi_src=$(module_dir "$CAPI_MOD@$CAPI_VERSION")
api_src=$(module_dir "$CAPI_MOD/api@$CAPI_VERSION")

# fresh_copy DEST: a writable copy of Cluster API, its api module at ./api as go.mod's replace expects.
fresh_copy() {
  rm -rf "$1"
  mkdir -p "$(dirname "$1")"
  cp -R "$capi_src" "$1"
  cp -R "$api_src" "$1/api"
  chmod -R u+w "$1"
}

# check_pristine DIR: fails unless DIR's go.mod and go.sum are Cluster API's own.
check_pristine() {
  local f
  for f in go.mod go.sum; do
    cmp -s "$capi_src/$f" "$1/$f" || die "$1/$f differs from Cluster API's own ($capi_src/$f)"
  done
}

# find_suites DIR: package directories whose test files call clustercache.SetupWithManager.
find_suites() {
  (cd "$1" && grep -rlE --include='*_test.go' '\bclustercache\.SetupWithManager\(' . |
    xargs -n1 dirname | sed 's|^\./||' | sort -u)
}

# patch_copy DIR TARGET: swaps the SetupWithManager call of every suite for TARGET's
# (a module with path $ADAPTER_MOD) and points go.mod at this clone; go.mod's diff goes
# to DIR.go.mod.diff.
patch_copy() {
  local dir=$1 target=$2 suite f
  for suite in "${suites[@]}"; do
    while IFS= read -r f; do
      perl -0777 -pi -e '
        my $n = s/\bclustercache\.SetupWithManager\(/cpclustercache.SetupWithManager(/g;
        $n == 1 or die "$ARGV: expected one clustercache.SetupWithManager call, found $n\n";
        s{^(\s*)"sigs\.k8s\.io/cluster-api/controllers/clustercache"\n}{$&$1cpclustercache "'"$ADAPTER_MOD"'/clustercache"\n}m
          or die "$ARGV: no import of sigs.k8s.io/cluster-api/controllers/clustercache\n";
      ' "$dir/$suite/$f"
    done < <(cd "$dir/$suite" && grep -lE '\bclustercache\.SetupWithManager\(' -- *_test.go)
  done
  (cd "$dir" &&
    go mod edit -require="$ROOT_MOD@v0.0.0" -require="$ADAPTER_MOD@v0.0.0" \
      -replace="$ROOT_MOD=$root" -replace="$ADAPTER_MOD=$target" &&
    go mod tidy) || die "go.mod of $dir does not resolve with $target"
  diff -u "$capi_src/go.mod" "$dir/go.mod" > "$dir.go.mod.diff" || true
}

# write_shim DIR: the "lifted" stand-in for the adapter (Cluster API's own ClusterCache).
write_shim() {
  rm -rf "$1"
  mkdir -p "$1/clustercache"
  cat > "$1/go.mod" <<EOF
module $ADAPTER_MOD

go 1.26.0

require (
	$ROOT_MOD v0.0.0
	$CAPI_MOD $CAPI_VERSION
)

replace $ROOT_MOD => $root
EOF
  cat > "$1/clustercache/shim.go" <<'EOF'
// Package clustercache is run.sh's "lifted" shim: Cluster API's own
// ClusterCache behind the adapter's import path, on clusterpool's versions.
package clustercache

import (
	"context"

	_ "github.com/clusterpool/clusterpool/kube" // lifts controller-runtime and k8s.io as the adapter does
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// SetupWithManager is Cluster API's.
func SetupWithManager(ctx context.Context, mgr manager.Manager, o clustercache.Options, co controller.Options) (clustercache.ClusterCache, error) {
	return clustercache.SetupWithManager(ctx, mgr, o, co)
}
EOF
}

# known_failure SUITE NAME: prints the reason if known-failures.txt excuses NAME in SUITE
# (an entry names the test itself, one of its subtests, or one of its parents).
known_failure() {
  [ -f "$known" ] || return 1
  awk -v s="$1" -v n="$2" '
    /^[[:space:]]*(#|$)/ { next }
    $1 == s && ($2 == n || index($2, n "/") == 1 || index(n, $2 "/") == 1) {
      r = $0; sub(/^[[:space:]]*[^[:space:]]+[[:space:]]+[^[:space:]]+[[:space:]]*/, "", r); print r; found = 1; exit
    }
    END { exit !found }' "$known"
}

# counts RESULTS: "tests pass fail skip subtests pass fail skip package elapsed".
counts() {
  awk -F'\t' '
    $1 == "#package" { pk = $2; pe = $3; next }
    { k = index($2, "/") ? "s" : "t"; n[k]++
      if ($1 == "pass") p[k]++; else if ($1 == "skip") sk[k]++; else f[k]++ }
    END { printf "%d %d %d %d %d %d %d %d %s %s\n", n["t"], p["t"], f["t"], sk["t"],
          n["s"], p["s"], f["s"], sk["s"], pk, pe }' "$1"
}

# rerun_failed DIR SUITE BASE: runs the top-level tests that failed in BASE.results once
# more, alone (Cluster API's own tests read the manager's cache right after a write, and
# some fail now and then on a loaded machine, stock as well). A test that passes then is
# counted as passed and listed in BASE.flaky with its first failure kept in BASE.failures;
# one that fails again stays failed. Nothing is rerun if the package failed outside its
# tests (build error, timeout, crash) or more than 3 tests failed.
rerun_failed() {
  local dir=$1 suite=$2 base=$3 failed pattern
  failed=$(awk -F'\t' '($1 == "fail" || $1 == "incomplete") && $2 !~ /\// { print $2 }' "$base.results")
  [ -n "$failed" ] || return 0
  awk -F'\t' '$1 == "#package" && $2 == "fail" { ok = 1 } END { exit !ok }' "$base.results" || return 0
  [ "$(echo "$failed" | wc -l)" -le 3 ] || return 0
  pattern="^($(echo "$failed" | paste -sd'|'))\$"
  echo "   rerunning once: $pattern"
  (cd "$dir" && nice -n 10 timeout -k 60 "$hard_timeout" \
    go test -json -count=1 -timeout "$timeout_min" "${extra_flags[@]}" -run "$pattern" "./$suite/") \
    > "$base.rerun.json" 2> "$base.rerun.stderr" || true
  perl "$here/parse.pl" "$base.rerun.json" "$base.rerun.results" "$base.rerun.failures"
  # A rerun test's lines (its subtests too) replace the first run's when it passed.
  awk -F'\t' -v OFS='\t' -v flaky="$base.flaky" '
    NR == FNR { if ($1 != "#package") { r[$2] = $0; top = $2; sub(/\/.*/, "", top); if ($2 == top && $1 == "pass") passed[top] = 1 } next }
    $1 == "#package" { pk = $0; next }
    { top = $2; sub(/\/.*/, "", top)
      if (passed[top]) { if ($2 == top) print top > flaky; if ($2 in r) { print r[$2]; next } }
      print; if ($1 != "pass" && $1 != "skip") bad = 1 }
    END { if (!bad) sub(/\tfail\t/, "\tpass\t", pk); print pk }' \
    "$base.rerun.results" "$base.results" > "$base.results.merged"
  mv "$base.results.merged" "$base.results"
  [ -s "$base.flaky" ] && echo "   flaky (failed once, passed alone): $(paste -sd' ' "$base.flaky")"
  return 0
}

# run_suite MODE DIR SUITE: one go test -json of SUITE in DIR; appends a row to the mode's table.
run_suite() {
  local m=$1 dir=$2 suite=$3 slug=${3//\//_} rc=0 start wall
  local base=$out/$m/$slug
  echo "== $m: $suite (go test -timeout $timeout_min ${extra_flags[*]})"
  start=$(date +%s)
  (cd "$dir" && nice -n 10 timeout -k 60 "$hard_timeout" \
    go test -json -count=1 -timeout "$timeout_min" "${extra_flags[@]}" "./$suite/") \
    > "$base.json" 2> "$base.stderr" || rc=$?
  wall=$(( $(date +%s) - start ))
  perl "$here/parse.pl" "$base.json" "$base.results" "$base.failures"
  rerun_failed "$dir" "$suite" "$base"
  local t tp tf ts s sp sf pk pe status=ok
  read -r t tp tf ts s sp sf _ pk pe < <(counts "$base.results")
  if [ "$pk" != pass ] || [ "$tf" -gt 0 ] || [ "$rc" -ne 0 ]; then
    status=FAIL
    { echo "=== go test exit $rc; stderr (last 40 lines):"; tail -n 40 "$base.stderr"; } >> "$base.failures"
  fi
  printf '%-8s %-40s %-4s tests %3d run %3d passed %3d failed %2d skipped | subtests %4d run %4d passed %3d failed | wall %4ds, test binary %6.1fs\n' \
    "$m" "$suite" "$status" "$t" "$tp" "$tf" "$ts" "$s" "$sp" "$sf" "$wall" "$pe"
  printf '| %s | %s | %d | %d | %d | %d | %d | %d | %d | %d s | %.0f s |\n' \
    "$suite" "$status" "$t" "$tp" "$tf" "$ts" "$s" "$sp" "$sf" "$wall" "$pe" >> "$out/$m/table.md"
  echo "$t $tp $tf $ts $s $sp $sf $wall" >> "$out/$m/totals"
  [ "$status" = ok ] || sed -n '1,60p' "$base.failures" | sed 's/^/    /'
}

# run_mode MODE DIR: every suite in DIR; writes bin/capi-conformance-MODE.md.
run_mode() {
  local m=$1 dir=$2 suite crv md=$bin/capi-conformance-$1.md
  rm -f "$out/$m/table.md" "$out/$m/totals"
  crv=$(cd "$dir" && go list -m -f '{{.Version}}' sigs.k8s.io/controller-runtime)
  echo "== $m: $dir (controller-runtime $crv)"
  for suite in "${suites[@]}"; do run_suite "$m" "$dir" "$suite"; done
  {
    echo "# Cluster API $CAPI_VERSION envtest suites: $m"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(go version | cut -d' ' -f3-), $(nproc) CPUs," \
      "controller-runtime $crv, KUBEBUILDER_ASSETS=$(basename "$KUBEBUILDER_ASSETS")," \
      "go test -count=1 -timeout $timeout_min ${extra_flags[*]}, one suite at a time under nice."
    echo "Tests are top-level Test functions, subtests every t.Run below them; run includes skipped."
    echo "Wall time includes compiling and envtest's start; test binary is go test's package time."
    echo
    echo '| suite | result | tests run | passed | failed | skipped | subtests run | passed | failed | wall | test binary |'
    echo '|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|'
    cat "$out/$m/table.md"
    awk '{ for (i = 1; i <= 8; i++) s[i] += $i }
      END { printf "| **total** | | %d | %d | %d | %d | %d | %d | %d | %d s | |\n", s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8] }' "$out/$m/totals"
    if compgen -G "$out/$m/*.flaky" > /dev/null; then
      echo
      echo "Failed once and passed when rerun alone (counted as passed; the first failure is in the suite's .failures file):"
      for f in "$out/$m"/*.flaky; do sed "s|^|- $(basename "$f" .flaky | tr _ /): |" "$f"; done
    fi
  } > "$md"
  echo "== $m: wrote $md"
}

# unexcused MODE [REF]: prints "suite<TAB>name<TAB>result" for every failed test of MODE,
# or, with REF, every test that passed in REF and did not pass in MODE ("not run" if it
# never started), leaving out what known-failures.txt names. "(package)" stands for a
# failure outside any test (build error, TestMain), reported only when no test failed.
unexcused() {
  local m=$1 ref=${2:-} suite slug name result
  for suite in "${suites[@]}"; do
    slug=${suite//\//_}
    if [ -n "$ref" ]; then
      awk -F'\t' 'NR == FNR { if ($1 == "#package") okpkg = $2 == "pass"; else if ($1 == "pass") ok[$2] = 1; next }
        $1 == "#package" { pkg = $2; next }
        { got[$2] = $1 }
        END { for (n in ok) { r = (n in got) ? got[n] : "not run"; if (r != "pass") { print n "\t" r; bad++ } }
              if (okpkg && pkg != "pass" && !bad) print "(package)\t" pkg }' \
        "$out/$ref/$slug.results" "$out/$m/$slug.results"
    else
      awk -F'\t' '$1 == "fail" || $1 == "incomplete" { print $2 "\t" $1; bad++ }
        $1 == "#package" && $2 != "pass" && !bad { print "(package)\t" $2 }' "$out/$m/$slug.results"
    fi | sort | while IFS=$'\t' read -r name result; do
      if reason=$(known_failure "$suite" "$name"); then
        echo "known: $suite $name ($result): $reason" >&2
      else
        printf '%s\t%s\t%s\n' "$suite" "$name" "$result"
      fi
    done
  done
}

mkdir -p "$out"
stock_dir=$bin/capi-$CAPI_VERSION
fresh_copy "$stock_dir"
mapfile -t suites < <(find_suites "$stock_dir")
[ ${#suites[@]} -gt 0 ] || die "no test in $stock_dir calls clustercache.SetupWithManager"
found="${suites[*]}"
[ "$found" = "$EXPECTED_SUITES" ] || echo "run.sh: note: suites found differ from issue 24's list: $found" >&2
if [ ${#only_suites[@]} -gt 0 ]; then
  for s in "${only_suites[@]}"; do [[ " $found " == *" ${s%/} "* ]] || die "not a suite: $s (suites: $found)"; done
  suites=("${only_suites[@]%/}")
fi
echo "== suites: ${suites[*]}"

modes=("$mode")
[ "$mode" = both ] && modes=(stock adapter)
for mode_name in "${modes[@]}"; do
  mkdir -p "$out/$mode_name"
  rm -f "$out/$mode_name"/*.{json,results,failures,stderr,flaky}
  case "$mode_name" in
    stock) check_pristine "$stock_dir" ;;
    adapter)
      [ -f "$adapter_dir/go.mod" ] || die "no adapter module at $adapter_dir (go.mod missing)"
      (cd "$adapter_dir" && go build ./...) || die "the adapter module ($adapter_dir) does not build"
      fresh_copy "$bin/capi-$CAPI_VERSION-adapter"
      patch_copy "$bin/capi-$CAPI_VERSION-adapter" "$adapter_dir" ;;
    lifted)
      write_shim "$out/lifted-shim"
      fresh_copy "$bin/capi-$CAPI_VERSION-lifted"
      patch_copy "$bin/capi-$CAPI_VERSION-lifted" "$out/lifted-shim" ;;
  esac
done

# CONFORMANCE_BUILD_ONLY=1: compile every suite's packages and test packages, link and run
# nothing (.ci/run does this in the background while other legs run; the copies are made
# again, alike, when they run). go list -export compiles all but the test mains; go test would
# link each binary here and again when the suites run (it does not cache test binaries).
if [ "${CONFORMANCE_BUILD_ONLY:-}" = 1 ]; then
  # go list takes build flags only: drop go test's own, in both spellings (-run=X, -run X).
  build_flags=() skip=
  for f in "${extra_flags[@]}"; do
    if [ -n "$skip" ]; then skip=; continue; fi
    case "$f" in
      -vet=* | -run=* | -count=* | -timeout=*) ;;
      -run | -count | -timeout) skip=1 ;;
      *) build_flags+=("$f") ;;
    esac
  done
  for mode_name in "${modes[@]}"; do
    dir=$bin/capi-$CAPI_VERSION-$mode_name
    [ "$mode_name" = stock ] && dir=$stock_dir
    echo "== $mode_name: compiling ${#suites[@]} suites in $dir (not run)"
    (cd "$dir" && go list -test -deps -export "${build_flags[@]}" "${suites[@]/#/./}" > /dev/null) ||
      die "the $mode_name suites do not compile"
  done
  exit 0
fi

status=0
for mode_name in "${modes[@]}"; do
  case "$mode_name" in
    stock) run_mode stock "$stock_dir"; check_pristine "$stock_dir" ;;
    *) run_mode "$mode_name" "$bin/capi-$CAPI_VERSION-$mode_name" ;;
  esac
done

if [ "$mode" = both ]; then
  for suite in "${suites[@]}"; do
    grep -q '^pass' "$out/stock/${suite//\//_}.results" ||
      { echo "run.sh: no test passed stock in $suite: the environment is broken, nothing to compare" >&2; status=1; }
  done
  regressions=$(unexcused adapter stock)
  {
    echo "# Cluster API $CAPI_VERSION: tests that pass stock and not on the adapter"
    echo
    if [ -z "$regressions" ]; then echo "None."; else
      echo '| suite | test | adapter |'; echo '|---|---|---|'
      echo "$regressions" | awk -F'\t' '{ printf "| %s | %s | %s |\n", $1, $2, $3 }'
    fi
  } > "$bin/capi-conformance-compare.md"
  [ -z "$regressions" ] || { echo "== REGRESSIONS (pass stock, not on the adapter):"; echo "$regressions"; status=1; }
else
  failures=$(unexcused "$mode")
  [ -z "$failures" ] || { echo "== $mode: failures not in known-failures.txt:"; echo "$failures"; status=1; }
fi
[ "$status" -eq 0 ] && echo "== capi-conformance $mode: ok"
exit "$status"
