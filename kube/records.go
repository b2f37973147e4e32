package kube

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

// clusterRecord is what the reconciler keeps of one cluster between two of its
// decisions: the kubeconfig Secret that changed and is not acted on yet,
// the one kept for the end of a dial that ran when it changed, and when the
// cluster's next probe tick is due. The queue (one key per cluster) hands
// a cluster to one worker at a time, which takes what its record holds and
// acts on it outside the lock.
type clusterRecord struct {
	// pending is the latest changed Secret not acted on, nil if none;
	// ended says it came from a dial's end alone (kept, then released by
	// Connected, DialFailed or BreakerOpened), not from the informer.
	pending *change
	ended   bool
	// kept is the latest changed Secret of a cluster that was dialing when
	// it was acted on, until that dial ends or the cluster is removed.
	kept *change
	// tick is when the next probe tick is due, retry when a dial that
	// failed is retried (Admission.SetRetry), revive when the endpoint of
	// a cluster whose breaker is open is checked next; zero: none
	// scheduled.
	tick, retry, revive time.Time
	// brk is the breaker's state the pool's latest event of the cluster
	// told (closed once it is connected or removed), failed the checks
	// that failed since then, checking says a check is in flight (until
	// it returns), checked that the outcome of one is not acted on yet.
	brk      breaker.State
	failed   int
	checking bool
	checked  bool
	outcome  error
	// up says the latest event told the cluster connected; down is when
	// an event first told it not connected after one that told it
	// connected (zero: not connected since, or removed). Revive checks
	// only a cluster down for at most ProberOptions.ReviveWindow.
	up   bool
	down time.Time
}

// empty reports whether r holds nothing, so that it can be forgotten.
func (r *clusterRecord) empty() bool {
	return r.pending == nil && r.kept == nil && r.tick.IsZero() && r.retry.IsZero() && r.revive.IsZero() &&
		r.brk == breaker.StateClosed && r.failed == 0 && !r.checking && !r.checked && !r.up && r.down.IsZero()
}

// records are the records of one reconciler's clusters under one lock. The
// lock is a leaf held for a few map and field operations: no pool call, no
// I/O, no user code under it. The zero value holds none.
type records struct {
	mu sync.Mutex
	m  map[client.ObjectKey]*clusterRecord
}

// with runs f on key's record (created if missing) under the lock, and
// forgets the record if f leaves it empty.
func (rs *records) with(key client.ObjectKey, f func(*clusterRecord)) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r, ok := rs.m[key]
	if !ok {
		if rs.m == nil {
			rs.m = map[client.ObjectKey]*clusterRecord{}
		}
		r = &clusterRecord{}
		rs.m[key] = r
	}
	f(r)
	if r.empty() {
		delete(rs.m, key)
	}
}

// changed records ch, a Secret that the informer saw change; it replaces
// one of its cluster not acted on yet, whose revisions it keeps as older.
func (rs *records) changed(key client.ObjectKey, ch change) {
	rs.with(key, func(r *clusterRecord) {
		if r.pending != nil {
			ch.before = r.pending.after(ch.before)
		}
		r.pending, r.ended = &ch, false
	})
}

// takePending returns and forgets key's pending Secret, if any, and
// whether it came from a dial's end alone.
func (rs *records) takePending(key client.ObjectKey) (ch change, ended, ok bool) {
	rs.with(key, func(r *clusterRecord) {
		if r.pending != nil {
			ch, ended, ok = *r.pending, r.ended, true
		}
		r.pending, r.ended = nil, false
	})
	return ch, ended, ok
}

// keep holds ch for the end of key's dial in flight.
func (rs *records) keep(key client.ObjectKey, ch change) {
	rs.with(key, func(r *clusterRecord) { r.kept = &ch })
}

// holds reports whether a Secret is kept for key's dial.
func (rs *records) holds(key client.ObjectKey) (ok bool) {
	rs.with(key, func(r *clusterRecord) { ok = r.kept != nil })
	return ok
}

// take returns and forgets the Secret kept for key's dial, if any.
func (rs *records) take(key client.ObjectKey) (ch change, ok bool) {
	rs.with(key, func(r *clusterRecord) {
		if r.kept != nil {
			ch, ok = *r.kept, true
		}
		r.kept = nil
	})
	return ch, ok
}

// dialEnded makes the Secret kept for key's dial, which has ended, pending
// (an older one than a pending Secret of the informer: it only adds its
// revisions to that one's). It reports whether there was one.
func (rs *records) dialEnded(key client.ObjectKey) (ok bool) {
	rs.with(key, func(r *clusterRecord) {
		switch {
		case r.kept == nil:
		case r.pending != nil:
			r.pending.before = r.kept.after(r.pending.before)
			ok = true
		default:
			r.pending, r.ended, ok = r.kept, true, true
		}
		r.kept = nil
	})
	return ok
}

// schedule makes key's next tick (retry false) or retry due at at, unless
// one is due earlier.
func (rs *records) schedule(key client.ObjectKey, retry bool, at time.Time) {
	rs.with(key, func(r *clusterRecord) {
		t := &r.tick
		if retry {
			t = &r.retry
		}
		if t.IsZero() || at.Before(*t) {
			*t = at
		}
	})
}

// due says which of a record's schedules are due, and the outcome of a
// check not acted on yet (revived).
type due struct {
	tick, retry, revive, revived bool
	outcome                      error
}

// takeDue reports whether key's tick, retry and revive are due at now,
// and forgets those that are (and a check's outcome): their decisions
// schedule the next ones.
// wait is how long until the earliest of those not due yet (zero: none).
// The queue keeps one delay per key, the earliest, so one moved later than
// a delay still waiting there is queued again by the caller after wait.
func (rs *records) takeDue(key client.ObjectKey, now time.Time) (d due, wait time.Duration) {
	rs.with(key, func(r *clusterRecord) {
		d.tick, wait = takeIfDue(&r.tick, now, wait)
		d.retry, wait = takeIfDue(&r.retry, now, wait)
		d.revive, wait = takeIfDue(&r.revive, now, wait)
		d.revived, d.outcome = r.checked, r.outcome
		r.checked, r.outcome = false, nil
	})
	return d, wait
}

// breakerEvent records the breaker's state ev tells (closed once the
// cluster is connected or removed) and when the cluster's client left the
// pool. An open breaker of a cluster that was connected, with no check
// scheduled, gets its next check after delay(failed), which
// it returns (zero: none scheduled); a closed one forgets the failed
// checks. A check scheduled stays: when it is due, decide sees the state.
func (rs *records) breakerEvent(ev pool.Event[client.ObjectKey], now time.Time, delay func(failed int) time.Duration) (d time.Duration) {
	rs.with(ev.Key, func(r *clusterRecord) {
		r.brk = ev.Breaker
		if ev.Connected || ev.Type == pool.Removed {
			r.brk = breaker.StateClosed
		}
		switch {
		case ev.Type == pool.Removed:
			r.up, r.down = false, time.Time{}
		case ev.Connected:
			r.up, r.down = true, time.Time{}
		case r.up:
			r.up, r.down = false, now
		}
		switch {
		case r.brk == breaker.StateClosed:
			r.failed = 0
		case r.brk == breaker.StateOpen && r.revive.IsZero() && !r.down.IsZero():
			d = delay(r.failed)
			r.revive = now.Add(d)
		}
	})
	return d
}

// revival returns what key's record says of its breaker: open (per the
// latest event), half-open (its probe out), the checks failed since, and
// when its client left the pool (zero: not connected since, see
// clusterRecord.down).
func (rs *records) revival(key client.ObjectKey) (open, probing bool, failed int, down time.Time) {
	rs.with(key, func(r *clusterRecord) {
		open, probing, failed, down = r.brk == breaker.StateOpen, r.brk == breaker.StateHalfOpen, r.failed, r.down
	})
	return open, probing, failed, down
}

// startCheck marks a check of key in flight, unless one is: it reports
// whether it did.
func (rs *records) startCheck(key client.ObjectKey) (ok bool) {
	rs.with(key, func(r *clusterRecord) {
		ok = !r.checking
		r.checking = true
	})
	return ok
}

// checkDone records the outcome err of key's check, which has returned.
func (rs *records) checkDone(key client.ObjectKey, err error) {
	rs.with(key, func(r *clusterRecord) { r.checking, r.checked, r.outcome = false, true, err })
}

// checkAgain schedules key's next check d from now, unless one is due
// earlier, while its breaker is open, counting a failed check if failed
// (else all checks were in flight, or this cluster's still was). It
// reports whether the breaker is still open.
func (rs *records) checkAgain(key client.ObjectKey, now time.Time, d time.Duration, failed bool) (ok bool) {
	rs.with(key, func(r *clusterRecord) {
		if ok = r.brk == breaker.StateOpen; !ok {
			return
		}
		if failed {
			r.failed++
		}
		if at := now.Add(d); r.revive.IsZero() || at.Before(r.revive) {
			r.revive = at
		}
	})
	return ok
}

// takeIfDue clears *t if it is due at now, and reports whether it was;
// else it returns wait lowered to how long until *t.
func takeIfDue(t *time.Time, now time.Time, wait time.Duration) (bool, time.Duration) {
	switch {
	case t.IsZero():
	case now.Before(*t):
		if d := t.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	default:
		*t = time.Time{}
		return true, wait
	}
	return false, wait
}
