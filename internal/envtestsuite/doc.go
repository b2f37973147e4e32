// Package envtestsuite runs the envtest-based tests of one package: it
// starts the package's kube-apiservers on the first test that needs them
// (so that unit and fuzz tests run without them), routes every connection
// the tests dial to them through one tracked dialer, and, at the end of
// TestMain, closes those connections and fails the run if any goroutine
// the tests started is still alive.
package envtestsuite
