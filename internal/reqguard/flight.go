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
	// ownDeadline: parent's deadline is the request timeout's, not the
	// caller's (see Guard.ownDeadline).
	ownDeadline  bool
	backPressure atomic.Bool // the cluster answered 429 (Throttle)

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
// reports the outcome to the breaker. Only the cluster's own failures
// count: nothing is reported when the guard is not live, the class is
// Unreported, the flight was canceled by Stop, the cluster answered with
// back-pressure (Throttle), or the caller gave up: its cancel, or its own
// deadline (one shorter than the request timeout, see Guard.ownDeadline).
// A first-byte timeout goes to Report (it counts in a row); every other
// outcome to ReportRequest (judged by rate). A success that ends after the
// request timeout passed is reported as that timeout's failure: Go's HTTP
// client, whose Timeout is a deadline on the request's context, can end a
// chunked body cleanly when it fires mid-body, and the cluster did not
// answer in time. Later calls do nothing.
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
	if stopped || !f.reported(cause) {
		return
	}
	switch {
	case errors.Is(cause, errFirstByte):
		g.s.Metrics.firstByteTimeout(f.parent)
		g.s.Report(f.Err(cause))
	case outcome == nil && errors.Is(f.parent.Err(), context.DeadlineExceeded): // the request timeout (see reported)
		g.reportRequest(fmt.Errorf("kube: cluster %s: the request timeout passed before it ended: %w", g.s.Cluster, context.DeadlineExceeded))
	default:
		g.reportRequest(outcome)
	}
}

// reported reports whether f's outcome, canceled with cause, is the
// cluster's to report (see End).
func (f *Flight) reported(cause error) bool {
	g := f.g
	var t *tripped
	switch {
	case g.s.Report == nil || !g.live.Load() || f.class == Unreported:
		return false
	case errors.As(cause, &t), f.backPressure.Load():
		return false
	case errors.Is(f.parent.Err(), context.Canceled): // the caller gave up
		return false
	}
	return f.ownDeadline || !errors.Is(f.parent.Err(), context.DeadlineExceeded) // else the caller's own deadline
}

// reportRequest reports a request's outcome to be judged by rate.
func (g *Guard) reportRequest(err error) {
	if g.s.ReportRequest != nil {
		g.s.ReportRequest(err)
		return
	}
	g.s.Report(err)
}

// ownDeadline reports whether the deadline of ctx, a request beginning at
// now, is the request timeout's rather than its caller's: it leaves the
// request at least half of MaxFirstByte (kube's RequestTimeout, which
// client-go sets on the request's context just before sending it, and
// whose remainder bounds client-go's retries after a Retry-After). The
// expiry of a shorter deadline is the caller giving up, not the cluster
// failing: a caller that gives up after 50 ms on a cluster answering in
// 300 ms says nothing of the cluster. With no MaxFirstByte every deadline
// is the caller's.
func (g *Guard) ownDeadline(ctx context.Context, now time.Time) bool {
	dl, ok := ctx.Deadline()
	return ok && g.s.MaxFirstByte > 0 && dl.Sub(now) >= g.s.MaxFirstByte/2
}
