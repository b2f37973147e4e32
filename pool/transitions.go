package pool

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/clusterpool/clusterpool/breaker"
)

// applyLocked carries out a breaker transition of e: the rejection error,
// eviction, the next probe, events and telemetry. It returns the clients to
// pass to OnClose once e.mu is released. span is the dial that caused the
// transition, or nil.
func (p *Pool[K, C]) applyLocked(e *entry[K, C], tr breaker.Transition, span trace.Span) []C {
	var toClose []C
	e.state.Store(int32(tr.To))
	p.rec.Transition(span, e.name, tr.From.String(), tr.To.String(), tr.OpenFor)
	if p.observe != nil {
		p.observe(e.key, tr)
	}
	switch tr.To {
	case breaker.StateOpen:
		// Once the open period is over the probe is due: come back after
		// its DialTimeout, not every millisecond until its timer has run.
		until, timeout := tr.At.Add(tr.OpenFor), e.set.dialTimeout
		e.reject.Store(&Error{Kind: ErrCircuitOpen, Cluster: e.name, RetryAt: until, retryAt: func() time.Time {
			if now := time.Now(); now.After(until) {
				return now.Add(timeout)
			}
			return until
		}})
		if c := e.client.Swap(nil); c != nil {
			toClose = append(toClose, *c)
			p.publishLocked(e, Disconnected, tr.At)
		}
		p.publishLocked(e, BreakerOpened, tr.At)
		p.scheduleProbeLocked(e, tr.OpenFor)
	case breaker.StateHalfOpen:
		// Callers are still rejected; they should come back once the probe
		// has surely ended, not in a busy loop (its success is announced):
		// at its deadline, or the queue's bound on its end while it is
		// queued (Pool.retryAt).
		rej := &Error{Kind: ErrCircuitOpen, Cluster: e.name, RetryAt: tr.At.Add(e.set.dialTimeout)}
		if c := e.ls.call; c != nil {
			rej.retryAt = func() time.Time { return p.retryAt(c) }
		}
		e.reject.Store(rej)
		p.publishLocked(e, BreakerHalfOpen, tr.At)
	case breaker.StateClosed:
		e.reject.Store(nil)
		p.publishLocked(e, BreakerClosed, tr.At)
	}
	return toClose
}

// scheduleProbeLocked arranges for the pool to probe e after d.
func (p *Pool[K, C]) scheduleProbeLocked(e *entry[K, C], d time.Duration) {
	p.stopProbeLocked(e)
	if !p.track() {
		return
	}
	gen := e.ls.gen
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		defer p.wg.Done()
		e.mu.Lock() // t was set under this lock
		if e.ls.probe != t {
			e.mu.Unlock() // stopped too late, or replaced: not this timer's turn
			return
		}
		e.ls.probe = nil
		toClose := p.probeLocked(e, gen)
		e.mu.Unlock()
		p.closeAll(e.key, toClose)
	})
	e.ls.probe = t
}

// stopProbeLocked cancels e's pending probe, if any.
func (p *Pool[K, C]) stopProbeLocked(e *entry[K, C]) {
	if e.ls.probe != nil && e.ls.probe.Stop() {
		p.wg.Done() // the timer's func will not run
	}
	e.ls.probe = nil
}

// probeLocked starts the half-open probe of e: one dial, off every caller's
// path, while callers are still rejected. It does nothing if the pool is
// closed, e was removed since gen, or a probe is out.
func (p *Pool[K, C]) probeLocked(e *entry[K, C], gen uint64) []C {
	if p.closed.Load() || e.ls.dead || e.ls.gen != gen || (e.ls.call != nil && e.ls.call.probe) {
		return nil
	}
	ticket, tr, changed, err := e.ls.brk.Allow()
	if err != nil {
		// Not due yet: a timer may fire a hair early on some clocks, and
		// right after the trip Expire leaves a tick of the open period.
		if e.ls.probe == nil {
			p.scheduleProbeLocked(e, max(time.Until(e.ls.brk.Snapshot().OpenUntil), time.Nanosecond))
		}
		return nil
	}
	c := p.newCallLocked(e, ticket, true)
	var toClose []C
	if changed {
		toClose = p.applyLocked(e, tr, c.span)
	}
	if !p.submit(c) {
		p.dropLocked(c)
	}
	return toClose
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
		var toClose []C
		switch {
		case e.client.Load() != nil: // connected
		case e.reject.Load() == nil: // closed breaker: dial unless a dial is in flight
			if e.ls.call == nil {
				p.startDialLocked(e) //nolint:errcheck // only ErrClosed: nothing to do
			}
		case e.ls.call != nil && e.ls.call.probe: // the probe is out already
		default:
			e.ls.brk.Expire()
			p.stopProbeLocked(e)
			toClose = p.probeLocked(e, e.ls.gen)
		}
		e.mu.Unlock()
		p.closeAll(key, toClose)
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
	o := p.classify(&e.set, err)
	e.mu.Lock()
	if e.ls.dead || e.ls.removed || e.reject.Load() != nil {
		e.mu.Unlock()
		return
	}
	var toClose []C
	if ticket, _, _, aerr := e.ls.brk.Allow(); aerr == nil {
		e.ls.probes.record(o, time.Now())
		if tr, changed := ticket.Record(o); changed {
			toClose = p.applyLocked(e, tr, nil)
		}
	}
	e.mu.Unlock()
	p.closeAll(key, toClose)
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
	var toClose []C
	if c := e.ls.call; c != nil {
		p.cancelCall(c)
		var zero C
		c.endLocked(zero, p.errorf(ErrRemoved, e, nil))
		e.ls.call = nil
		if p.dequeue(c) { // never started: settle it here
			p.dropLocked(c)
		}
	}
	p.stopProbeLocked(e)
	now := time.Now()
	if c := e.client.Swap(nil); c != nil {
		toClose = append(toClose, *c)
		p.publishLocked(e, Disconnected, now)
	}
	if from := e.breakerState(); from != breaker.StateClosed {
		p.rec.Transition(nil, e.name, from.String(), breaker.StateClosed.String(), 0)
		if p.observe != nil {
			p.observe(e.key, breaker.Transition{From: from, To: breaker.StateClosed, At: now})
		}
	}
	if brk, err := breaker.New(e.set.breaker); err == nil { // validated when e was made
		e.ls.brk = brk
	}
	e.reject.Store(nil)
	e.state.Store(int32(breaker.StateClosed))
	e.ls.probes = probeLog{}
	e.ls.removed = true
	p.publishLocked(e, Removed, now)
	p.reapLocked(e)
	e.mu.Unlock()
	p.closeAll(key, toClose)
}
