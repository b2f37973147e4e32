package pool

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// A dial is slow once it has run demoteFactor times the p90 of the last
// latencySamples successful dials, never before MaxWait (4×MaxWait before
// any succeeded).
const (
	latencySamples = 32
	demoteFactor   = 4
)

// latency learns how long successful dials take, pool-wide; its estimate
// is read without a lock.
type latency struct {
	mu      sync.Mutex
	samples [latencySamples]time.Duration
	n, next int
	p90     atomic.Int64 // nanoseconds; 0 until the first sample
}

// observe adds the duration of a successful dial.
func (l *latency) observe(d time.Duration) {
	d = max(d, time.Nanosecond) // 0 means "no estimate"
	l.mu.Lock()
	defer l.mu.Unlock()
	l.samples[l.next] = d
	l.next = (l.next + 1) % latencySamples
	l.n = min(l.n+1, latencySamples)
	sorted := slices.Clone(l.samples[:l.n])
	slices.Sort(sorted)
	l.p90.Store(int64(sorted[(9*l.n+9)/10-1])) // the ceil(0.9n)-th smallest
}

// estimate is the p90 of recent successful dials, or 0 if none succeeded.
func (l *latency) estimate() time.Duration { return time.Duration(l.p90.Load()) }

// slowAfter is how long a dial may run before it is slow: it leaves the
// normal lane, and callers stop waiting for it.
func (l *latency) slowAfter(maxWait time.Duration) time.Duration {
	est := l.estimate()
	if est == 0 {
		return demoteFactor * maxWait
	}
	return max(demoteFactor*est, maxWait)
}
