package pool

import (
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// Breaker transitions and probes, part of the functional core (see
// core.go): the entry's breaker is a breaker.Machine, whose every method
// takes now (its gobreaker's own mutex and clock decide nothing), guarded
// by the entry's mu like the rest of its state.

// apply carries out a breaker transition of e, caused by dial c (or nil):
// the rejection, eviction, the next probe, events and a telemetry note.
func (e *entry[K, C]) apply(tr breaker.Transition, c *call[K, C], fx *effects[K, C]) {
	fx.notes = append(fx.notes, note[K, C]{call: c, tr: tr})
	switch tr.To {
	case breaker.StateOpen:
		// Once the period is over the probe is due: come back after its
		// DialTimeout, not every millisecond until its timer has run.
		e.reject.Store(&Error{Kind: ErrCircuitOpen, Cluster: e.name, RetryAt: tr.At.Add(tr.OpenFor),
			late: e.set.dialTimeout, state: breaker.StateOpen})
		e.evict(tr.At, fx)
		e.event(BreakerOpened, tr.At, fx)
		e.setProbe(tr.At.Add(tr.OpenFor), fx)
	case breaker.StateHalfOpen:
		e.halfOpen(c, tr.At)
		e.event(BreakerHalfOpen, tr.At, fx)
	case breaker.StateClosed:
		e.reject.Store(nil)
		e.event(BreakerClosed, tr.At, fx)
	}
}

// setProbe schedules e's probe at at, or cancels it (zero at), as a new
// version of its timer (one that fires with an older version does
// nothing).
func (e *entry[K, C]) setProbe(at time.Time, fx *effects[K, C]) {
	if at.IsZero() && e.ls.probeAt == 0 {
		return // none scheduled
	}
	e.ls.probeVer++
	e.ls.probeAt = 0
	if !at.IsZero() {
		e.ls.probeAt = max(at.UnixNano(), 1)
	}
	fx.probe = &probeTimer{ver: e.ls.probeVer, at: at}
}

// probe registers e's half-open probe: one dial, off every caller's path,
// while callers are still rejected. Nothing if the pool is closed or a
// probe is out; if the period is not over (a timer may fire a hair early),
// it schedules the probe for its end.
func (e *entry[K, C]) probe(in input[K, C], fx *effects[K, C]) {
	if in.closed || e.ls.brk == nil || (e.ls.call != nil && e.ls.call.probe) {
		return
	}
	ticket, err := e.ls.brk.Allow(in.now)
	if err != nil {
		if e.ls.probeAt == 0 {
			e.setProbe(maxTime(e.ls.brk.Snapshot(in.now).OpenUntil, in.now.Add(time.Nanosecond)), fx)
		}
		return
	}
	c := e.newCall(in, ticket, true, fx)
	if tr, changed := ticket.Transition(); changed {
		e.apply(tr, c, fx)
	} else { // half-open already: a probe was dropped (Redial)
		e.halfOpen(c, in.now)
	}
}

// halfOpen rejects callers while probe c, made at at, is out: come back at
// its deadline, not in a busy loop (the lanes refine it: refineLocked).
func (e *entry[K, C]) halfOpen(c *call[K, C], at time.Time) {
	c.slot.rejection = &Error{Kind: ErrCircuitOpen, Cluster: e.name, RetryAt: at.Add(e.set.dialTimeout), state: breaker.StateHalfOpen}
	e.reject.Store(c.slot.rejection)
}

// record records outcome o of a request made with t (the zero Ticket: one
// granted now, if the breaker is closed) and returns the transition it
// caused. The breaker is made on the key's first failure (none is a closed
// breaker with nothing counted); an outcome for a breaker no longer closed
// is stale and ignored.
func (e *entry[K, C]) record(t breaker.Ticket, o breaker.Outcome, now time.Time) (breaker.Transition, bool) {
	switch {
	case t.Granted() && e.ls.brk != nil:
		return e.ls.brk.Record(t, o, now)
	case e.ls.brk == nil && o != breaker.Failure && o != breaker.RateFailure && o != breaker.Trip:
		return breaker.Transition{}, false // nothing to count
	case e.ls.brk == nil:
		brk, err := breaker.NewMachine(e.set.breaker)
		if err != nil { // the settings were validated when they were made
			panic("pool: validated breaker settings refused: " + err.Error())
		}
		e.ls.brk = brk
	case e.ls.brk.State(now) != breaker.StateClosed:
		return breaker.Transition{}, false
	}
	granted, _ := e.ls.brk.Allow(now) // closed: granted
	return e.ls.brk.Record(granted, o, now)
}

// discard gives a dial's ticket back without an outcome.
func (e *entry[K, C]) discard(t breaker.Ticket) {
	if e.ls.brk != nil {
		e.ls.brk.Discard(t)
	}
}

// snapshot is e's breaker's state and counts at now.
func (e *entry[K, C]) snapshot(now time.Time) breaker.Snapshot {
	if e.ls.brk == nil {
		return breaker.Snapshot{}
	}
	return e.ls.brk.Snapshot(now)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
