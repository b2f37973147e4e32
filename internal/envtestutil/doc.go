// Package envtestutil starts real kube-apiservers with controller-runtime's
// envtest for the project's tests and demo, and writes kubeconfigs for
// them. The binaries are built from the Go module proxy by
// hack/envtest-assets.sh; nothing is downloaded.
package envtestutil
