package kube

import (
	"net/http"

	"github.com/clusterpool/clusterpool/internal/watchgzip"
)

// watchGzip decompresses the cluster's compressed watches member by
// member, so that an idle watch holds no decompressor (internal/watchgzip).
type watchGzip struct {
	next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *watchGzip) RoundTrip(req *http.Request) (*http.Response, error) {
	return watchgzip.RoundTrip(t.next, req)
}

// WrappedRoundTripper lets client-go's CloseIdleConnectionsFor reach the
// transport below (closeIdle, and the rotation closing the old
// credentials' connections, depend on it).
func (t *watchGzip) WrappedRoundTripper() http.RoundTripper { return t.next }
