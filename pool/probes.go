package pool

import (
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// probeLog records when the pool last learned whether a key's cluster
// works, for ClusterState. Every dial that ends with an outcome of the
// cluster's (not canceled by Remove or Close, not abandoned) and every
// outcome Report feeds into the breaker counts as a probe, as Cluster API's
// ClusterCache counts its connect attempts and health checks. An Ignored
// outcome (Breaker.IsFailure said the error is not the cluster's fault)
// counts as neither. Guarded by the entry's mu; Remove resets it.
// Instants are Unix nanoseconds (0: never), to keep the entry small.
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
	case breaker.Failure, breaker.Trip:
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
