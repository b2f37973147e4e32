package reqguard

import (
	"errors"
	"time"

	"github.com/clusterpool/clusterpool/pool"
)

// Back-pressure: an answer of 429 Too Many Requests is an overloaded
// apiserver asking for less (API Priority and Fairness answers so), not a
// broken one, and it is about the request it answers: the cluster's other
// requests are not held back. Its outcome is reported to no one, so it never
// counts toward opening the breaker.
//
// A counted request (a reconciler's) answered 429 with a Retry-After ends
// at that answer with ErrThrottled, whatever its deadline: its caller's
// worker is free at once, and requeues after the server's Retry-After
// (pool.RetryAfter, kube.Requeue), where client-go would sleep the
// Retry-After inside the worker and send it again, so that a few throttled
// clusters kept every worker of the controller waiting. Every other 429
// goes to its client as it is: client-go waits out an exempt request's
// (an informer's list, a watch: no worker waits on them), gives a 429
// without Retry-After to its caller, and has a 429 to itself when passive
// health is off (Cluster API's drop-in).

// ErrThrottled: the cluster answered a counted request with 429 Too Many
// Requests and a Retry-After; the request ended at that answer, unretried.
// The error is a *pool.Error whose RetryAt is the end of that Retry-After
// (at most MaxRetryAfter), so pool.RetryAfter gives the server's wish.
var ErrThrottled = errors.New("kube: cluster asked for fewer requests (429 Retry-After)")

// MaxRetryAfter caps the Retry-After ErrThrottled asks to wait, whatever
// the server asks.
const MaxRetryAfter = time.Minute

// Throttle records that the cluster answered f with back-pressure (429),
// asking to come back after d; call it before End. f's outcome is reported
// to no one, and no other request is held back. For a counted f with d > 0
// and passive health on it returns an ErrThrottled *pool.Error with RetryAt
// now plus d (capped at MaxRetryAfter), which the caller returns instead of
// the answer, whatever f's deadline. Otherwise it returns nil and the answer
// goes to the client: f is exempt or unreported (its client waits out the
// Retry-After), d is zero or less (no Retry-After: client-go does not
// retry), or passive health is off (Settings.Report nil: the answer is its
// client's alone, as Cluster API's drop-in wants).
func (f *Flight) Throttle(d time.Duration) error {
	f.backPressure.Store(true)
	if d <= 0 || f.g.s.Report == nil || !f.class.counted() {
		return nil
	}
	err := &pool.Error{Kind: ErrThrottled, Cluster: f.g.s.Cluster, RetryAt: time.Now().Add(min(d, MaxRetryAfter))}
	f.g.s.Metrics.rejected(f.parent, f.g.s.Cluster, err)
	return err
}
