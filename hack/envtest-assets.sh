#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy into
# bin/k8s/<version>/ (no downloads of prebuilt binaries). Cached: a folder
# whose binaries exist is left alone. Prints the folder, for KUBEBUILDER_ASSETS.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
out="$root/bin/k8s/$K8S_VERSION-etcd-$ETCD_VERSION"
mkdir -p "$out"
minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
if [ ! -x "$out/kube-apiserver" ]; then
  echo "building kube-apiserver $K8S_VERSION (about 9 minutes on 2 cores the first time)" >&2
  (cd "$root/hack/tools/kube-apiserver" && go build -trimpath -ldflags "-s -w \
    -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
    -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
    -o "$out/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$out/kube-apiserver.tmp" "$out/kube-apiserver"
fi
if [ ! -x "$out/etcd" ]; then
  echo "building etcd $ETCD_VERSION" >&2
  (cd "$root/hack/tools/etcd" && go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$out/etcd.tmp" "$out/etcd"
fi
echo "$out"
