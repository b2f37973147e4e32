package idle

import (
	"context"
	"net/url"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/metrics"
)

// CountRequests makes client-go count every request (not watches: client-go
// reports no latency for them) sent to a host other than mgmtHost, the
// management cluster's, and returns the counter. It sets client-go's
// process-wide hook directly, as metrics.Register is once-only.
func CountRequests(mgmtHost string) func() uint64 {
	c := &requestCounter{mgmt: mgmtHost}
	metrics.RequestLatency = c
	return c.n.Load
}

type requestCounter struct {
	mgmt string
	n    atomic.Uint64
}

func (c *requestCounter) Observe(_ context.Context, _ string, u url.URL, _ time.Duration) {
	if u.Host != c.mgmt {
		c.n.Add(1)
	}
}
