package pool

import (
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// probeLog records when the pool last learned whether a key's cluster
// works, for ClusterState: every dial that ends with an outcome of the
// cluster's and every outcome Report feeds the breaker, but Ignored ones.
// Guarded by entry.mu; Remove resets it. Instants are Unix ns (0: never).
type probeLog struct {
	last     int64  // the last probe, whatever its outcome
	lastOK   int64  // the last successful probe
	failures uint32 // failed probes since lastOK, across open periods
}

// record notes the outcome o of a probe that ended at at.
func (l *probeLog) record(o breaker.Outcome, at time.Time) {
	switch o {
	case breaker.Success:
		l.last, l.lastOK, l.failures = at.UnixNano(), at.UnixNano(), 0
	case breaker.Failure, breaker.RateFailure, breaker.Trip:
		l.last = at.UnixNano()
		l.failures++
	}
}

// unixTime is the instant of Unix nanoseconds n, or the zero Time for 0.
func unixTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
