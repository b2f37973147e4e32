#!/usr/bin/env bash
# build.sh NAME: builds the bench/peers program NAME (cct, clustercache,
# clusterpool, floor or capi) with hack/build-tool.sh into bin/peers/NAME-VERSION-DIGEST,
# unless it is there (or in the per-user cache), and prints the path.
# VERSION is the code under test (Cluster API's version, or "tree" for this
# repository); DIGEST covers the sources the binary is built from, so an
# edited peer, workload or protocol module or pool is rebuilt.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
name="$1"
case "$name" in
  cct)          version=capi-v1.8.4;  extra=() ;;
  clustercache) version=capi-v1.14.2; extra=() ;;
  clusterpool)  version=tree;         extra=(pool kube breaker tracing internal go.mod go.sum) ;;
  floor)        version=client-go-v0.37.2; extra=() ;;
  capi)         version=capi-v1.14.2; extra=(clusterapi pool kube breaker tracing internal go.mod go.sum) ;;
  *) echo "build.sh: unknown peer $name" >&2; exit 2 ;;
esac
digest="$(cd "$root" && find "bench/peers/$name" bench/peers/workload bench/peers/protocol "${extra[@]}" -type f \
  \( \( -name '*.go' ! -name '*_test.go' \) -o -name go.mod -o -name go.sum \) -print0 |
  LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)"
out="$root/bin/peers/$name-$version-$digest"
# -trimpath=false: the peers build with go's default flags, as vet, staticcheck, the Cluster API
# suites and the adoption leg build their packages, so a cold CI compiles each graph once.
bash "$root/hack/build-tool.sh" "$out" "bench/peers/$name" . -trimpath=false >&2
echo "$out"
