package pool

import (
	"errors"
	"fmt"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrWaitTimeout: the wait bound passed while a dial was in flight. The
	// dial goes on; when it succeeds a Connected event is sent. If the
	// caller's own deadline was the bound, the error also matches
	// context.DeadlineExceeded.
	ErrWaitTimeout = errors.New("pool: timed out waiting for a dial")

	// ErrCircuitOpen: the cluster's breaker is open (or half-open, with the
	// pool's probe out); the dialer was not called.
	ErrCircuitOpen = errors.New("pool: circuit open")

	// ErrClosed: the pool is closed, or was closed during the wait.
	ErrClosed = errors.New("pool: pool closed")

	// ErrRemoved: the cluster was removed during the wait.
	ErrRemoved = errors.New("pool: cluster removed")

	// ErrDialFailed: the dial waited for ended with an error, which the
	// returned error also wraps.
	ErrDialFailed = errors.New("pool: dial failed")

	// ErrDialPanic: the dialer panicked; wrapped in an ErrDialFailed error.
	ErrDialPanic = errors.New("pool: dialer panicked")
)

// Error is the type of every error the pool returns except the caller's own
// context.Canceled. It matches its Kind with errors.Is and unwraps to its
// cause.
type Error struct {
	// Kind is the sentinel the error matches: one of this package's, or
	// one of a package built on it that wants RetryAfter to work on its
	// errors (kube's ErrBulkheadFull, say).
	Kind error
	// Cluster is the formatted key (Options.FormatKey).
	Cluster string
	// Cause is the underlying error: the dialer's, or the caller's context
	// error for a wait bounded by its deadline. May be nil.
	Cause error
	// RetryAt is when the caller should come back, fixed when the error
	// was made; zero if there is no hint. RetryAfter reads it.
	RetryAt time.Time

	// late, if set, is how long to come back after once RetryAt has
	// passed: an open breaker's rejection read after its open period
	// ended (the probe is due and takes up to DialTimeout).
	late time.Duration
	// state is the breaker state an ErrCircuitOpen rejection was made
	// for (open or half-open): the pool reads its entries' state from it.
	state breaker.State
}

// Error returns "<kind>: cluster <name>[: <cause>]".
func (e *Error) Error() string {
	if e.Cause == nil {
		return fmt.Sprintf("%v: cluster %s", e.Kind, e.Cluster)
	}
	return fmt.Sprintf("%v: cluster %s: %v", e.Kind, e.Cluster, e.Cause)
}

// Is reports whether target is e's Kind.
func (e *Error) Is(target error) bool { return target == e.Kind }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Cause }

// minRetryAfter keeps RetryAfter positive: a controller-runtime Result with
// RequeueAfter 0 does not requeue at all.
const minRetryAfter = time.Millisecond

// RetryAfter reports how long the caller should wait before asking again,
// for a reconciler's RequeueAfter: for ErrCircuitOpen the time to the next
// probe (once that has passed, a whole DialTimeout; while the probe is
// out, the time until its deadline, or the lanes' bound on its end while
// it is queued, as known when the probe was queued), for ErrWaitTimeout the time
// until the dial in flight is expected to end (its deadline, when the pool
// has no better estimate), for an ErrDialFailed that opened the breaker the
// time to the first probe, and for another ErrDialFailed the wait bound
// (MaxWait) or the failed dial's duration if longer. The duration is at
// least 1ms. Every figure is fixed when the error is made; reading it takes
// no lock. It reports false for errors with no hint (ErrClosed,
// ErrRemoved, context errors, foreign errors).
func RetryAfter(err error) (time.Duration, bool) {
	var pe *Error
	if !errors.As(err, &pe) || pe.RetryAt.IsZero() {
		return 0, false
	}
	d := time.Until(pe.RetryAt)
	if d <= 0 && pe.late > 0 {
		d = pe.late
	}
	return max(d, minRetryAfter), true
}
