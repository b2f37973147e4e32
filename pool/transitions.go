package pool

import (
	"context"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// applyLocked carries out a breaker transition of e: the rejection error,
// eviction, the next probe and events; telemetry and OnClose are left for
// after the lock (fx). c is the dial that caused the transition, or nil.
// Needs e.mu.
func (p *Pool[K, C]) applyLocked(e *entry[K, C], tr breaker.Transition, c *call[K, C], fx *effects[K, C]) {
	fx.notes = append(fx.notes, note[K, C]{call: c, tr: tr})
	if p.observe != nil {
		p.observe(e.key, tr)
	}
	switch tr.To {
	case breaker.StateOpen:
		// Once the open period is over the probe is due: come back after
		// its DialTimeout, not every millisecond until its timer has run.
		e.reject.Store(&Error{Kind: ErrCircuitOpen, Cluster: e.name, RetryAt: tr.At.Add(tr.OpenFor),
			late: e.set.dialTimeout, state: breaker.StateOpen})
		if cl := e.client.Swap(nil); cl != nil {
			fx.close = append(fx.close, *cl)
			p.publishLocked(e, Disconnected, tr.At)
		}
		p.publishLocked(e, BreakerOpened, tr.At)
		p.scheduleProbeLocked(e, tr.OpenFor)
	case breaker.StateHalfOpen:
		// Callers are still rejected; they should come back once the probe
		// has surely ended, not in a busy loop (its success is announced):
		// at its deadline. The lanes refine this when the probe is queued
		// and when it starts (Pool.refineLocked).
		rej := &Error{Kind: ErrCircuitOpen, Cluster: e.name, RetryAt: tr.At.Add(e.set.dialTimeout), state: breaker.StateHalfOpen}
		if c != nil {
			c.rejection = rej
		}
		e.reject.Store(rej)
		p.publishLocked(e, BreakerHalfOpen, tr.At)
	case breaker.StateClosed:
		e.reject.Store(nil)
		p.publishLocked(e, BreakerClosed, tr.At)
	}
}

// scheduleProbeLocked arranges for the pool to probe e after d. Needs e.mu
// (it takes timers.mu inside).
func (p *Pool[K, C]) scheduleProbeLocked(e *entry[K, C], d time.Duration) {
	p.stopProbeLocked(e)
	gen := e.ls.gen
	e.ls.probe = p.timers.schedule(time.Now().Add(d), func(t *timer) {
		e.mu.Lock() // e.ls.probe was set under this lock
		if e.ls.probe != t {
			e.mu.Unlock() // stopped too late, or replaced: not this timer's turn
			return
		}
		e.ls.probe = nil
		fx := effects[K, C]{name: e.name}
		p.probeLocked(e, gen, &fx)
		e.mu.Unlock()
		p.run(e.key, &fx)
	})
}

// stopProbeLocked cancels e's pending probe, if any. Needs e.mu.
func (p *Pool[K, C]) stopProbeLocked(e *entry[K, C]) {
	p.timers.stop(e.ls.probe)
	e.ls.probe = nil
}

// probeLocked registers the half-open probe of e for launch after the lock
// (fx): one dial, off every caller's path, while callers are still
// rejected. It does nothing if the pool is closed, e was removed since gen,
// or a probe is out. Needs e.mu.
func (p *Pool[K, C]) probeLocked(e *entry[K, C], gen uint64, fx *effects[K, C]) {
	if p.closed.Load() || e.ls.dead || e.ls.gen != gen || (e.ls.call != nil && e.ls.call.probe) {
		return
	}
	ticket, err := e.breakerLocked().Allow()
	if err != nil {
		// Not due yet: a timer may fire a hair early on some clocks, and
		// right after the trip Expire leaves a tick of the open period.
		if e.ls.probe == nil {
			p.scheduleProbeLocked(e, max(time.Until(e.snapshotLocked().OpenUntil), time.Nanosecond))
		}
		return
	}
	c := p.newCallLocked(e, ticket, true)
	fx.launch = append(fx.launch, c)
	if tr, changed := ticket.Transition(); changed {
		p.applyLocked(e, tr, c, fx)
	}
}

// Probe asks the pool to try key now, off the caller's path, without
// waiting: an open breaker's probe is brought forward (coalesced with a
// probe already out), and a cluster that is not connected and has no dial
// in flight is dialed. It does nothing for a connected cluster, one with a
// dial in flight, or after Close. The first Probe of a key runs ForKey;
// one that comes while another caller runs it waits for that answer, at
// most MaxWait. Use it when something outside the pool
// says the cluster may work again (its kubeconfig Secret changed, an
// operator asked); the Connected event tells when it does.
func (p *Pool[K, C]) Probe(key K) {
	if p.closed.Load() {
		return
	}
	for {
		e, err := p.entry(context.Background(), key)
		if err != nil {
			return
		}
		e.mu.Lock()
		if e.ls.dead {
			e.mu.Unlock()
			continue
		}
		e.ls.removed = false
		fx := effects[K, C]{name: e.name}
		switch {
		case e.client.Load() != nil: // connected
		case e.reject.Load() == nil: // closed breaker: dial unless a dial is in flight
			if e.ls.call == nil {
				p.startDialLocked(e, &fx) //nolint:errcheck // unreachable rejection: nothing to do
			}
		case e.ls.call != nil && e.ls.call.probe: // the probe is out already
		default:
			e.breakerLocked().Expire()
			p.stopProbeLocked(e)
			p.probeLocked(e, e.ls.gen, &fx)
		}
		e.mu.Unlock()
		p.run(key, &fx)
		return
	}
}

// Report feeds the outcome of using key's client into its breaker: a caller
// saw err talking to the cluster (nil for a success). Errors count as
// failures as the cluster's Breaker.IsFailure says, which is called before
// any lock is taken. When the breaker opens, the client is evicted
// (OnClose), and Disconnected and BreakerOpened are sent. Report does
// nothing for an unknown key, a key removed and not used since, or while
// the breaker is not closed: it never creates state nor starts a dial.
func (p *Pool[K, C]) Report(key K, err error) {
	v, ok := p.entries.Load(key)
	if !ok || p.closed.Load() {
		return
	}
	e := v.(*entry[K, C])
	o := p.classify(e.set, err)
	e.mu.Lock()
	if e.ls.dead || e.ls.removed || e.reject.Load() != nil {
		e.mu.Unlock()
		return
	}
	fx := effects[K, C]{name: e.name}
	e.ls.probes.record(o, time.Now())
	if tr, changed := e.recordLocked(breaker.Ticket{}, o); changed {
		p.applyLocked(e, tr, nil, &fx)
	}
	e.mu.Unlock()
	p.run(key, &fx)
}

// Remove forgets key: a dial in flight is canceled and its waiters get
// ErrRemoved, the cached client is passed to OnClose (and Disconnected
// sent), the breaker is reset, a pending probe dropped, and a Removed event
// sent. A dial that returns after Remove has its client closed, not cached;
// Report does nothing until the key is used again. A later Get starts
// afresh; its dial waits for the canceled one to return if
// MaxConcurrentDials is 1.
func (p *Pool[K, C]) Remove(key K) {
	v, ok := p.entries.Load(key)
	if !ok {
		return
	}
	e := v.(*entry[K, C])
	e.mu.Lock()
	if e.ls.dead {
		e.mu.Unlock()
		return
	}
	e.ls.gen++
	fx := effects[K, C]{name: e.name}
	if c := e.ls.call; c != nil {
		p.cancelCall(c)
		var zero C
		c.endLocked(zero, p.errorf(ErrRemoved, e, nil))
		e.ls.call = nil
		if p.dequeue(c) { // never started: settle it here
			p.dropLocked(c, &fx)
		}
	}
	p.stopProbeLocked(e)
	now := time.Now()
	if c := e.client.Swap(nil); c != nil {
		fx.close = append(fx.close, *c)
		p.publishLocked(e, Disconnected, now)
	}
	if from := e.breakerState(); from != breaker.StateClosed {
		tr := breaker.Transition{From: from, To: breaker.StateClosed, At: now}
		fx.notes = append(fx.notes, note[K, C]{tr: tr})
		if p.observe != nil {
			p.observe(e.key, tr)
		}
	}
	e.ls.brk = nil
	e.reject.Store(nil)
	e.ls.probes = probeLog{}
	e.ls.removed = true
	p.publishLocked(e, Removed, now)
	p.reapLocked(e, &fx)
	e.mu.Unlock()
	p.run(key, &fx)
}
