package kube

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// Revive: evidence that a cluster is back ends its breaker's open period.
// An open breaker waits out a period that grows with each failed half-open
// probe (to the pool's MaxOpenTimeout), so a cluster that comes back early
// in a long period would wait for the rest of it. While the pool's latest
// event of an admitted cluster says its breaker is open, and for
// ProberOptions.ReviveWindow after it was last connected, the Reconciler
// checks the cluster's endpoint (decideRevive gives the schedule); a check
// that gets 200 from /readyz calls Pool.Probe, whose half-open probe dials
// at once (and connects the cluster), as the next probe would have done at
// the end of the period.
//
// Bounds: a check runs on a goroutine of its own, not on a worker, under
// a timeout of its own; one check in flight per cluster (one that ignores
// its timeout still counts until it returns); at most Concurrency/2 of
// them across all clusters (a check due while they are all out is put off
// by ReviveInterval, not counted as failed); no goroutine waits for a
// check to be due (the workqueue's delay holds the cluster); no check once
// the cluster is removed, connected, its probe out or its breaker closed,
// nor after the pool closes or the Reconciler stops, which waits for the
// checks in flight.

// reviver runs the endpoint checks of one Reconciler's loop.
type reviver struct {
	check   func(ctx context.Context, key client.ObjectKey) error
	every   time.Duration  // ProberOptions.ReviveInterval
	window  time.Duration  // ProberOptions.ReviveWindow
	timeout time.Duration  // of one check: its context's
	slots   chan struct{}  // one per check in flight
	wg      sync.WaitGroup // the checks' goroutines
	closed  atomic.Bool    // the pool closed: nothing to revive
}

// newReviver returns pr's reviver, or nil when pr has none (no Prober,
// DisableRevive, or a pool that NewPool did not build).
func newReviver(pr *Prober) *reviver {
	if pr == nil || pr.check == nil {
		return nil
	}
	o := pr.opts
	return &reviver{check: pr.check, every: o.ReviveInterval, window: o.ReviveWindow, timeout: min(o.Timeout, 2*o.ReviveInterval),
		slots: make(chan struct{}, max(1, o.Concurrency/2))}
}

// schedule is the revive schedule of a cluster whose breaker is open, with
// failed checks failed, and a fresh jitter; the caller that decides on the
// window sets its down (see revival).
func (rv *reviver) schedule(open bool, failed int) revival {
	return revival{open: open, failed: failed, every: rv.every, jitter: rand.Float64()*2 - 1, window: rv.window}
}

// since is how long ago t was, or -1 for the zero t.
func since(t, now time.Time) time.Duration {
	if t.IsZero() {
		return -1
	}
	return now.Sub(t)
}

// reviveEvent records the breaker's state ev tells and, for an open one,
// queues its first check.
func (l *loop) reviveEvent(ev pool.Event[client.ObjectKey]) {
	rv := l.rev
	if rv == nil {
		return
	}
	first := func(failed int) time.Duration { return rv.schedule(true, failed).delay() }
	if d := l.recs.breakerEvent(ev, time.Now(), first); d > 0 {
		l.q.AddAfter(ev.Key, d)
	}
}

// revive is key's due check: decide (inRevive) says whether to check,
// and the check starts under rv's bounds, off the worker; its outcome
// comes back through the record and the queue (revived).
func (l *loop) revive(ctx context.Context, key client.ObjectKey) {
	rv := l.rev
	if act, _ := decide(l.reviveView(key, inRevive, nil)); act != actCheck {
		return
	}
	select {
	case rv.slots <- struct{}{}:
	default: // all checks are out: not this cluster's failure
		l.checkAgain(key, rv.schedule(true, 0).delay(), false)
		return
	}
	if !l.recs.startCheck(key) { // its last check has not returned
		<-rv.slots
		l.checkAgain(key, rv.schedule(true, 0).delay(), false)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, rv.timeout)
	rv.wg.Go(func() {
		defer cancel()
		err := rv.check(cctx, key)
		l.recs.checkDone(key, err)
		<-rv.slots
		l.q.Add(key) // nothing once the queue has shut down
	})
}

// revived acts on the outcome err of key's check: decide (inRevived) says
// what it means: Pool.Probe, or the next check.
func (l *loop) revived(ctx context.Context, key client.ObjectKey, err error) {
	if ctx.Err() != nil {
		return // stopping: not the cluster's outcome
	}
	act, next := decide(l.reviveView(key, inRevived, err))
	switch {
	case act == actRetry:
		l.p.Probe(key) // the open period ends: the half-open probe dials now
	case next > 0:
		if l.r.Prober != nil {
			l.r.Prober.opts.Logger.V(2).Info("endpoint check failed", "cluster", key.String(), "error", err.Error())
		}
		l.checkAgain(key, next, true)
	}
}

// checkAgain schedules key's next check d from now, counting a failed one
// if failed, while its breaker is open.
func (l *loop) checkAgain(key client.ObjectKey, d time.Duration, failed bool) {
	if l.recs.checkAgain(key, time.Now(), d, failed) {
		l.q.AddAfter(key, d)
	}
}

// reviveView is the view of key for in, with the check's outcome err
// (inRevived). A cluster of a closed pool is no longer admitted.
func (l *loop) reviveView(key client.ObjectKey, in input, err error) view {
	open, probing, failed, down := l.recs.revival(key)
	_, connected := l.p.Peek(key)
	r := l.rev.schedule(open, failed)
	r.down = since(down, time.Now())
	return view{in: in, present: !l.rev.closed.Load() && l.admitted(key), connected: connected, dialing: probing,
		revive: r, err: err}
}

// admitted reports whether key is admitted: by the Admission, else by the
// SecretWatcher's Admit, else every cluster the pool holds (its events
// say which: Removed closes the breaker in the record).
func (l *loop) admitted(key client.ObjectKey) bool {
	switch {
	case l.r.Admission != nil:
		return l.r.Admission.Admitted(key)
	case l.r.Secrets != nil && l.r.Secrets.Admit != nil:
		return l.r.Secrets.Admit(key)
	}
	return true
}
