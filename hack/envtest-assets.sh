#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy into
# bin/k8s/<version>/ (no downloads of prebuilt binaries). Cached twice: a
# folder whose binaries exist is left alone, and built binaries are kept in
# a per-user cache (CLUSTERPOOL_CACHE, default ~/.cache/clusterpool) keyed by
# version, so a fresh clone on the same machine copies instead of building.
# Prints the folder, for KUBEBUILDER_ASSETS.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
out="$root/bin/k8s/$K8S_VERSION-etcd-$ETCD_VERSION"
cache="${CLUSTERPOOL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/clusterpool}/k8s/$K8S_VERSION-etcd-$ETCD_VERSION"
mkdir -p "$out"
for b in kube-apiserver etcd; do
  if [ ! -x "$out/$b" ] && [ -x "$cache/$b" ]; then cp "$cache/$b" "$out/$b"; fi
done
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
mkdir -p "$cache"
for b in kube-apiserver etcd; do
  [ -x "$cache/$b" ] || cp "$out/$b" "$cache/$b"
done
echo "$out"
