package reqguard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// Flight is one admitted request. Its End must be called exactly once, when
// the request is over (its response body closed or read to the end, or its
// error seen).
type Flight struct {
	g      *Guard
	class  Class
	parent context.Context // the caller's
	ctx    context.Context // parent, canceled by Stop and the deadline
	cancel context.CancelCauseFunc
	start  time.Time
	timer  *time.Timer // the first-byte deadline's; nil if none
	ended  atomic.Bool

	// Guarded by the Guard's lock.
	deadline time.Duration // first-byte deadline; 0 if none
	headers  bool          // the response headers arrived
	timedOut bool          // canceled by the first-byte rule
}

// Err translates an error the request ended with: after Stop it is the
// Stopped error, after the first-byte deadline an ErrFirstByteTimeout
// error; any other error is returned as it is.
func (f *Flight) Err(err error) error {
	if err == nil {
		return nil
	}
	var t *tripped
	cause := context.Cause(f.ctx)
	switch {
	case errors.As(cause, &t):
		return t.err
	case errors.Is(cause, errFirstByte):
		f.g.mu.Lock()
		d := f.deadline
		f.g.mu.Unlock()
		return fmt.Errorf("%w: cluster %s: no response headers, and no sign of life from the cluster, within %v",
			ErrFirstByteTimeout, f.g.s.Cluster, d)
	}
	return err
}

// End ends the flight with outcome, the error the caller sees or the
// verdict on the answer (nil for a success): it releases the slot and
// reports the outcome to the breaker, unless the guard is not live, the
// class is Unreported, the flight was canceled by Stop, or the caller
// canceled it (a caller's deadline counts: the cluster did not answer in
// time). A success that ends after the caller's deadline passed is
// reported as that deadline's failure: Go's HTTP client, whose Timeout is
// a deadline on the request's context, can end a chunked body cleanly
// when it fires mid-body, and the cluster did not answer in time. Later
// calls do nothing.
func (f *Flight) End(outcome error) {
	if !f.ended.CompareAndSwap(false, true) {
		return
	}
	if f.timer != nil {
		f.timer.Stop()
	}
	cause := context.Cause(f.ctx)
	g := f.g
	g.mu.Lock()
	delete(g.flights, f)
	if f.class.counted() {
		g.counted--
	}
	stopped := g.stopped
	g.mu.Unlock()
	f.cancel(context.Canceled)
	if outcome == nil && errors.Is(f.parent.Err(), context.DeadlineExceeded) {
		outcome = fmt.Errorf("kube: cluster %s: the request's deadline passed before it ended: %w", g.s.Cluster, context.DeadlineExceeded)
	}
	var t *tripped
	switch {
	case g.s.Report == nil || !g.live.Load() || f.class == Unreported || stopped:
	case errors.As(cause, &t):
	case errors.Is(f.parent.Err(), context.Canceled):
	case errors.Is(cause, errFirstByte):
		g.s.Metrics.firstByteTimeout(f.parent)
		g.s.Report(f.Err(cause))
	default:
		g.s.Report(outcome)
	}
}
