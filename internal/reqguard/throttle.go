package reqguard

import (
	"errors"
	"time"

	"github.com/clusterpool/clusterpool/pool"
)

// Back-pressure: an answer of 429 Too Many Requests is an overloaded
// apiserver asking for less (API Priority and Fairness answers so), not a
// broken one. Its outcome is reported to no one, and its Retry-After holds
// back the cluster's Counted requests until it has passed: one that begins
// earlier is rejected with ErrThrottled, which says when to come back. The
// request answered 429 itself is left to its client: client-go waits out a
// Retry-After and sends it again (up to its retry limit), and that retry
// begins once the Retry-After the guard saw has passed, so it is admitted.

// ErrThrottled: the cluster answered a request with 429 Too Many Requests
// and a Retry-After that has not passed yet; the request was not sent. The
// error is a *pool.Error whose RetryAt is the end of that Retry-After, so
// pool.RetryAfter gives the server's wish.
var ErrThrottled = errors.New("kube: cluster asked for fewer requests (429 Retry-After)")

// MaxRetryAfter caps the time one Retry-After holds back a cluster's
// Counted requests, whatever the server asks.
const MaxRetryAfter = time.Minute

// Throttle records that the cluster answered f with back-pressure (429),
// asking to come back after d: f's outcome is reported to no one, and
// Counted requests that begin within d (capped at MaxRetryAfter) are
// rejected with ErrThrottled. A d of zero or less (no Retry-After) holds
// nothing back, nor does any with passive health off (Settings.Report nil:
// the requests are then their client's alone, as Cluster API's drop-in
// wants).
func (f *Flight) Throttle(d time.Duration) {
	f.backPressure.Store(true)
	if d <= 0 || f.g.s.Report == nil {
		return
	}
	until := time.Now().Add(min(d, MaxRetryAfter))
	g := f.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if until.After(g.throttledUntil) {
		g.throttledUntil = until
	}
}

// throttledLocked returns the rejection of a Counted request beginning at
// now while a Retry-After holds, or nil.
func (g *Guard) throttledLocked(now time.Time) error {
	if !now.Before(g.throttledUntil) {
		return nil
	}
	return &pool.Error{Kind: ErrThrottled, Cluster: g.s.Cluster, RetryAt: g.throttledUntil}
}
