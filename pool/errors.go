package pool

import (
	"errors"
	"fmt"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// Sentinel errors, matched with errors.Is.
var (
	// ErrWaitTimeout: the wait bound passed while a dial was in flight,
	// which goes on (its end is an event). If the caller's own deadline was
	// the bound, the error also matches context.DeadlineExceeded.
	ErrWaitTimeout = errors.New("pool: timed out waiting for a dial")

	// ErrCircuitOpen: the cluster's breaker is open (or half-open, its
	// probe out); the dialer was not called.
	ErrCircuitOpen = errors.New("pool: circuit open")

	// ErrClosed: the pool is closed, or was closed during the wait.
	ErrClosed = errors.New("pool: pool closed")

	// ErrRemoved: the cluster was removed during the wait.
	ErrRemoved = errors.New("pool: cluster removed")

	// ErrDialFailed: the dial waited for failed; its error is wrapped.
	ErrDialFailed = errors.New("pool: dial failed")

	// ErrDialPanic: the dialer panicked; wrapped in an ErrDialFailed error.
	ErrDialPanic = errors.New("pool: dialer panicked")
)

// Error is the type of every error the pool returns except the caller's own
// context.Canceled. It matches its Kind with errors.Is and unwraps to Cause.
type Error struct {
	// Kind is the sentinel the error matches: this package's, or one of a
	// package that wants RetryAfter on its errors (kube's ErrBulkheadFull).
	Kind error
	// Cluster is the formatted key (Options.FormatKey).
	Cluster string
	// Cause is the dialer's error, or the caller's context error for a wait
	// bounded by its deadline; may be nil.
	Cause error
	// RetryAt is when the caller should come back (zero: no hint), fixed
	// when the error was made. RetryAfter reads it.
	RetryAt time.Time

	// late: how long to come back after once RetryAt has passed (an open
	// breaker's rejection read after its period: the probe is due).
	late  time.Duration
	state breaker.State // an ErrCircuitOpen's breaker state (open, half-open)
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

// RetryAfter reports how long to wait before asking again (a reconciler's
// RequeueAfter), at least 1ms, as fixed when the error was made: for
// ErrCircuitOpen the time to the next probe (once passed, a DialTimeout;
// while it is out, to its end), for ErrWaitTimeout to the dial's expected
// end (the latest, for Requeued), for ErrDialFailed to the first probe if
// it opened the breaker, else the wait bound or the dial's duration if
// longer. False for errors with no hint (ErrClosed, ErrRemoved, others).
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
