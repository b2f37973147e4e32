package pool

import (
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
	switch tr.To {
	case breaker.StateOpen:
		// Once the open period is over the probe is due: come back after
		// its DialTimeout, not every millisecond until its timer has run.
		until, timeout := tr.At.Add(tr.OpenFor), p.opts.DialTimeout
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
		// at its deadline, which is later than At+DialTimeout if the probe
		// queues for a permit.
		rej := &Error{Kind: ErrCircuitOpen, Cluster: e.name, RetryAt: tr.At.Add(p.opts.DialTimeout)}
		if c := e.call; c != nil {
			timeout := p.opts.DialTimeout
			rej.retryAt = func() time.Time { return c.retryAt(timeout) }
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
	gen := e.gen
	e.probe = time.AfterFunc(d, func() {
		defer p.wg.Done()
		p.runProbe(e, gen)
	})
}

// stopProbeLocked cancels e's pending probe, if any.
func (p *Pool[K, C]) stopProbeLocked(e *entry[K, C]) {
	if e.probe != nil && e.probe.Stop() {
		p.wg.Done() // the timer's func will not run
	}
	e.probe = nil
}

// runProbe is the half-open probe: one dial, off every caller's path, while
// callers are still rejected.
func (p *Pool[K, C]) runProbe(e *entry[K, C], gen uint64) {
	e.mu.Lock()
	if p.closed.Load() || e.dead || e.gen != gen {
		e.mu.Unlock()
		return
	}
	e.probe = nil
	ticket, tr, changed, err := e.brk.Allow()
	if err != nil {
		// Not due yet (a timer may fire a hair early on some clocks).
		if until := e.brk.Snapshot().OpenUntil; !until.IsZero() {
			p.scheduleProbeLocked(e, time.Until(until))
		}
		e.mu.Unlock()
		return
	}
	c := p.newCallLocked(e, true)
	var toClose []C
	if changed {
		toClose = p.applyLocked(e, tr, c.span)
	}
	e.mu.Unlock()
	for _, cl := range toClose {
		p.opts.OnClose(e.key, cl)
	}
	p.runDial(e, c, ticket)
}

// Report feeds the outcome of using key's client into its breaker: a caller
// saw err talking to the cluster (nil for a success). Errors count as
// failures as Options.Breaker.IsFailure says. When the breaker opens, the
// client is evicted (OnClose), and Disconnected and BreakerOpened are sent.
// Report does nothing for an unknown key or while the breaker is not
// closed.
func (p *Pool[K, C]) Report(key K, err error) {
	v, ok := p.entries.Load(key)
	if !ok || p.closed.Load() {
		return
	}
	e := v.(*entry[K, C])
	e.mu.Lock()
	if e.dead || e.reject.Load() != nil {
		e.mu.Unlock()
		return
	}
	var toClose []C
	if ticket, _, _, aerr := e.brk.Allow(); aerr == nil {
		if tr, changed := ticket.Done(err); changed {
			toClose = p.applyLocked(e, tr, nil)
		}
	}
	e.mu.Unlock()
	for _, cl := range toClose {
		p.opts.OnClose(e.key, cl)
	}
}

// Remove forgets key: a dial in flight is canceled and its waiters get
// ErrRemoved, the cached client is passed to OnClose (and Disconnected
// sent), the breaker is reset and a pending probe dropped. A dial that
// returns after Remove has its client closed, not cached. A later Get
// starts afresh; its dial waits for the canceled one to return if
// MaxConcurrentDials is 1.
func (p *Pool[K, C]) Remove(key K) {
	v, ok := p.entries.Load(key)
	if !ok {
		return
	}
	e := v.(*entry[K, C])
	e.mu.Lock()
	if e.dead {
		e.mu.Unlock()
		return
	}
	e.gen++
	if c := e.call; c != nil {
		c.cancel()
		var zero C
		c.endLocked(zero, p.errorf(ErrRemoved, e, nil))
		e.call = nil
	}
	p.stopProbeLocked(e)
	var toClose []C
	if c := e.client.Swap(nil); c != nil {
		toClose = append(toClose, *c)
		p.publishLocked(e, Disconnected, time.Now())
	}
	if from := e.breakerState(); from != breaker.StateClosed {
		p.rec.Transition(nil, e.name, from.String(), breaker.StateClosed.String(), 0)
	}
	e.brk = p.newBreaker()
	e.reject.Store(nil)
	e.state.Store(int32(breaker.StateClosed))
	e.removed = true
	p.reapLocked(e)
	e.mu.Unlock()
	for _, cl := range toClose {
		p.opts.OnClose(key, cl)
	}
}

// reapLocked deletes a removed entry from the map once no dial of it is
// left, so its semaphore keeps bounding dials until then.
func (p *Pool[K, C]) reapLocked(e *entry[K, C]) {
	if !e.removed || e.running > 0 || e.call != nil || e.probe != nil || e.client.Load() != nil {
		return
	}
	e.dead = true
	if p.entries.CompareAndDelete(e.key, e) {
		p.rec.ClusterRemoved(breaker.StateClosed.String())
	}
}
