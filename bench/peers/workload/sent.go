package workload

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"sync"
	"time"

	"k8s.io/client-go/tools/metrics"
)

// sentCounter counts, per host other than the management cluster's, the
// requests client-go sent from a time on: client-go's RequestResult hook
// is called once per attempt, after the transport below client-go (a
// request guard's included) returned, so a request the transport refused
// is counted as sent.
type sentCounter struct {
	mgmt string
	from time.Time
	next metrics.ResultMetric // the hook it replaced, still called

	mu sync.Mutex
	n  map[string]uint64
}

// countSent makes client-go count, per workload host, the requests it
// sends at or after from, and returns the function that reads the counts.
// It sets client-go's process-wide hook directly (metrics.Register is
// once-only), keeping the one it replaces (controller-runtime's metrics).
func countSent(mgmtHost string, from time.Time) func() map[string]uint64 {
	c := &sentCounter{mgmt: mgmtHost, from: from, next: metrics.RequestResult, n: map[string]uint64{}}
	metrics.RequestResult = c
	return c.counts
}

// countSentFrom is countSent from plan.MeasureFrom, on the workload hosts
// (every host but mgmtHost's, a URL), or without -measure-from a function
// that counts nothing.
func countSentFrom(plan Plan, mgmtHost string) (func() map[string]uint64, error) {
	if plan.MeasureFrom.IsZero() {
		return func() map[string]uint64 { return nil }, nil
	}
	u, err := url.Parse(mgmtHost)
	if err != nil {
		return nil, fmt.Errorf("management host: %w", err)
	}
	return countSent(u.Host, plan.MeasureFrom), nil
}

// Increment implements metrics.ResultMetric.
func (c *sentCounter) Increment(ctx context.Context, code, method, host string) {
	if host != c.mgmt && !time.Now().Before(c.from) {
		c.mu.Lock()
		c.n[host]++
		c.mu.Unlock()
	}
	c.next.Increment(ctx, code, method, host)
}

func (c *sentCounter) counts() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.n)
}
