#!/usr/bin/env bash
# Regenerates docs/trace.png from a real demo trace: starts Jaeger on
# 127.0.0.1 (hack/jaeger.yaml), runs the Cluster API demo for 20 s with its
# traces sent there over OTLP/HTTP, draws the waterfall of one reconcile
# that waited (examples/capi/cmd/tracepic), and stops everything.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
jaeger="${JAEGER_BIN:?set JAEGER_BIN (make trace-picture does)}"
"$jaeger" --config "$root/hack/jaeger.yaml" >/tmp/clusterpool-jaeger.log 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null; for i in $(seq 100); do kill -0 $pid 2>/dev/null || exit 0; sleep 0.1; done; kill -KILL $pid 2>/dev/null' EXIT
for i in $(seq 300); do
  curl -fsS http://127.0.0.1:13133/status >/dev/null 2>&1 && break
  kill -0 $pid || { cat /tmp/clusterpool-jaeger.log; exit 1; }
  sleep 0.1
done
cd "$root/examples/capi"
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 OTEL_SERVICE_NAME=clusterpool-demo \
  go run . -duration 20s -flap 10s >/dev/null
go run ./cmd/tracepic -query http://127.0.0.1:16686 -service clusterpool-demo -out "$root/docs/trace.png"
echo "wrote docs/trace.png"
