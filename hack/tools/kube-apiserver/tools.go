//go:build tools

// Package tools pins the kube-apiserver that envtest runs (see hack/envtest-assets.sh).
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
