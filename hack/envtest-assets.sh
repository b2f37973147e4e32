#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy into
# bin/k8s/<versions>/ (no prebuilt binaries are downloaded; about 13 minutes
# on 2 cores the first time, then cached, see build-tool.sh). Prints the
# folder, for KUBEBUILDER_ASSETS.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
out="$root/bin/k8s/$K8S_VERSION-etcd-$ETCD_VERSION"
minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
bash "$here/build-tool.sh" "$out/kube-apiserver" hack/tools/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
  -ldflags "-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION \
  -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
bash "$here/build-tool.sh" "$out/etcd" hack/tools/etcd go.etcd.io/etcd/server/v3 -ldflags "-s -w"
echo "$out"
