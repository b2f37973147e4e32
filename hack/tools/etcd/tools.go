//go:build tools

// Package tools pins the etcd that envtest runs (see hack/envtest-assets.sh).
package tools

import _ "go.etcd.io/etcd/server/v3"
