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
// counts toward opening the breaker. The answer goes to its client, whose
// retry it is: client-go's rest.Request waits out a Retry-After and sends
// the request again (up to its MaxRetries, 10 by default, when its body can
// be replayed), which the guard admits like any other. The guard ends the
// request early only when that retry could not begin before the request's
// own deadline (client-go's request timeout, or its caller's): client-go
// would wait into the deadline and end with a bare DeadlineExceeded, which
// says nothing of when to come back; the guard ends it with ErrThrottled,
// which does.

// ErrThrottled: the cluster answered the request with 429 Too Many Requests
// and a Retry-After that does not end before the request's deadline, so its
// retry could not be sent in time; the request ended at the answer. The
// error is a *pool.Error whose RetryAt is the end of that Retry-After (at
// most MaxRetryAfter), so pool.RetryAfter gives the server's wish. A 429
// whose retry can begin before the deadline is its client's to retry, and a
// 429 that client-go's own retries ran out on is its *errors.StatusError
// (TooManyRequests, with the Retry-After as its suggested delay).
var ErrThrottled = errors.New("kube: cluster asked for fewer requests (429 Retry-After)")

// MaxRetryAfter caps the Retry-After ErrThrottled asks to wait, whatever
// the server asks.
const MaxRetryAfter = time.Minute

// Throttle records that the cluster answered f with back-pressure (429),
// asking to come back after d; call it before End. f's outcome is reported
// to no one, and no other request is held back. It returns nil if the
// answer is to go to the client: d is zero or less (no Retry-After: client-go
// does not retry), passive health is off (Settings.Report nil: the answer
// is its client's alone, as Cluster API's drop-in wants), or the request's
// context has no deadline or one that ends after d from now (the client's
// retry can begin before it). Otherwise it returns an ErrThrottled *pool.Error with RetryAt
// now plus d (capped at MaxRetryAfter), which the caller returns instead of
// the answer.
func (f *Flight) Throttle(d time.Duration) error {
	f.backPressure.Store(true)
	if d <= 0 || f.g.s.Report == nil {
		return nil
	}
	now := time.Now()
	retryAt := now.Add(min(d, MaxRetryAfter))
	if dl, ok := f.parent.Deadline(); !ok || dl.After(retryAt) {
		return nil
	}
	err := &pool.Error{Kind: ErrThrottled, Cluster: f.g.s.Cluster, RetryAt: retryAt}
	f.g.s.Metrics.rejected(f.parent, f.g.s.Cluster, err)
	return err
}
