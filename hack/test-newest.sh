#!/usr/bin/env bash
# test-newest.sh: the other end of the supported range. The library modules
# require the oldest versions they support (the floor, which `make test`
# runs); this upgrades controller-runtime, k8s.io (every staging module in
# the graph at one release: the newest served k8s.io/client-go), OpenTelemetry
# and Prometheus to the newest served releases in a copy of each go.mod
# (go -modfile, under bin/newest), then builds and runs the tests.
# The checked-in go.mod files are not touched.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/bin/newest"
mkdir -p "$out"
k8s=$(cd "$root" && go list -m -f '{{.Version}}' k8s.io/client-go@latest)
echo "newest: k8s.io $k8s, controller-runtime $(cd "$root" && go list -m -f '{{.Version}}' sigs.k8s.io/controller-runtime@latest)"

# upgrade MODULE_DIR NAME: writes $out/NAME.mod and .sum, upgraded.
upgrade() {
  local dir="$1" name="$2" mf="$out/$2.mod"
  cp "$root/$dir/go.mod" "$mf"
  cp "$root/$dir/go.sum" "$out/$name.sum"
  cd "$root/$dir"
  local mods=(sigs.k8s.io/controller-runtime@latest)
  local m
  for m in $(go list -modfile="$mf" -m all | awk '{print $1}'); do
    case "$m" in
      k8s.io/api|k8s.io/apimachinery|k8s.io/client-go|k8s.io/apiextensions-apiserver|k8s.io/apiserver|\
      k8s.io/component-base|k8s.io/cluster-bootstrap|k8s.io/streaming|k8s.io/kms)
        mods+=("$m@$k8s") ;;
      go.opentelemetry.io/otel|go.opentelemetry.io/otel/*|github.com/prometheus/*)
        mods+=("$m@latest") ;;
    esac
  done
  go get -modfile="$mf" "${mods[@]}" 2>&1 | grep -v '^go: downloading' || true
  go mod tidy -modfile="$mf"
  local v
  v=$(go list -modfile="$mf" -m -f '{{.Version}}' k8s.io/client-go)
  if [ "$v" != "$k8s" ]; then echo "newest: $dir has k8s.io/client-go $v, not $k8s" >&2; exit 1; fi
  echo "newest: $dir at: $(go list -modfile="$mf" -m -f '{{.Path}} {{.Version}}' sigs.k8s.io/controller-runtime k8s.io/api go.opentelemetry.io/otel github.com/prometheus/client_golang | tr '\n' ' ')"
}

upgrade . root
upgrade tracing/otlp otlp
# No go vet here: vet checks this repository's code, which the floor's make test vets; at
# the newest versions it would analyse a whole dependency graph again for no new finding.
# go test -vet=off likewise (go test's own list keys a vet cache of its own).
# NEWEST_BUILD_ONLY=1: compile every package and test package and link nothing (.ci/run does
# this in the background while make test runs; go test would link its binaries twice, since
# go test does not cache them, and go list -export compiles all of them but the test mains).
if [ "${NEWEST_BUILD_ONLY:-}" = 1 ]; then
  cd "$root" && go list -modfile="$out/root.mod" -test -deps -export ./... > /dev/null
  cd "$root/tracing/otlp" && go list -modfile="$out/otlp.mod" -test -deps -export ./... > /dev/null
  exit 0
fi
cd "$root" && go build -modfile="$out/root.mod" ./... && go test -vet=off -modfile="$out/root.mod" -count=1 ./...
cd "$root/tracing/otlp" && go build -modfile="$out/otlp.mod" ./... && go test -vet=off -modfile="$out/otlp.mod" -count=1 ./...
