package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// startDialLocked starts the dial callers of e will join. The breaker must
// be closed (e.reject is nil).
func (p *Pool[K, C]) startDialLocked(e *entry[K, C]) (*call[C], error) {
	ticket, _, _, err := e.brk.Allow()
	if err != nil {
		// Unreachable while reject is nil; kept as a rejection, not a panic.
		return nil, &Error{Kind: ErrCircuitOpen, Cluster: e.name, Cause: err}
	}
	if !p.track() {
		ticket.Discard()
		return nil, p.errorf(ErrClosed, e, nil)
	}
	c := p.newCallLocked(e, false)
	go func() {
		defer p.wg.Done()
		p.runDial(e, c, ticket)
	}()
	return c, nil
}

// newCallLocked registers a new dial of e as e.call and starts its span.
func (p *Pool[K, C]) newCallLocked(e *entry[K, C], probe bool) *call[C] {
	ctx, cancel := context.WithCancel(p.ctx)
	c := &call[C]{done: make(chan struct{}), gen: e.gen, cancel: cancel, queued: make(chan struct{}),
		suspect: probe || e.brk.Snapshot().ConsecutiveFailures > 0}
	c.ctx, c.span = p.rec.StartDial(ctx, e.name, probe)
	e.call = c
	e.running++
	return c
}

// runDial runs one dial of e on the calling goroutine, which the pool
// tracks: it takes e's permit, then a pool-wide one, calls the dialer under
// DialTimeout, and settles the outcome.
func (p *Pool[K, C]) runDial(e *entry[K, C], c *call[C], ticket breaker.Ticket) {
	start := time.Now()
	client, err := p.dialWithPermits(e, c)
	canceled := c.ctx.Err() != nil // Close or Remove: not the cluster's fault
	res := tracing.DialSuccess
	switch {
	case canceled:
		res = tracing.DialCanceled
	case errors.Is(err, ErrDialPanic):
		res = tracing.DialPanic
	case err != nil:
		res = tracing.DialError
	}
	var tr breaker.Transition
	var changed bool
	if canceled {
		ticket.Discard()
	} else {
		tr, changed = ticket.Done(err)
	}
	p.settle(e, c, client, err, canceled, tr, changed)
	p.rec.EndDial(c.span, res, time.Since(start), err)
	c.cancel()
}

// dialWithPermits calls the dialer holding e's permit, for a suspect dial a
// permit of the suspect lane, and a pool-wide permit. A nil error means
// client is valid.
func (p *Pool[K, C]) dialWithPermits(e *entry[K, C], c *call[C]) (client C, err error) {
	if err := e.sem.Acquire(c.ctx, 1); err != nil {
		return client, err
	}
	defer e.sem.Release(1)
	if c.suspect {
		if err := acquirePooled(c, p.suspect); err != nil {
			return client, err
		}
		defer p.suspect.Release(1)
	}
	if err := acquirePooled(c, p.total); err != nil {
		return client, err
	}
	defer p.total.Release(1)
	ctx, cancel := context.WithTimeout(c.ctx, p.opts.DialTimeout)
	defer cancel()
	if d, ok := ctx.Deadline(); ok {
		c.deadline.Store(d.UnixNano())
	}
	return p.safeDial(ctx, e.key)
}

// acquirePooled takes one permit of a pool-wide semaphore for c, first
// telling c's waiters when it has to queue for it.
func acquirePooled[C any](c *call[C], s *semaphore.Weighted) error {
	if s.TryAcquire(1) {
		return nil
	}
	c.markQueued()
	return s.Acquire(c.ctx, 1)
}

// safeDial calls the dialer, turning a panic into an ErrDialPanic error.
func (p *Pool[K, C]) safeDial(ctx context.Context, key K) (client C, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero C
			client, err = zero, fmt.Errorf("%w: %v", ErrDialPanic, r)
		}
	}()
	return p.dial(ctx, key)
}

// settle records a dial's outcome on e: caches or closes the client, applies
// the breaker transition, and wakes the call's waiters.
func (p *Pool[K, C]) settle(e *entry[K, C], c *call[C], client C, err error, canceled bool, tr breaker.Transition, changed bool) {
	var toClose []C
	e.mu.Lock()
	current := c.gen == e.gen && !e.dead
	// Another dial of the same cluster may have landed first (a dial that
	// was in flight when Report opened the breaker, and the probe that
	// closed it): the client already cached stays, the newcomer is closed.
	held := e.client.Load()
	// A successful dial is kept only if it is still wanted: the pool is
	// open, the cluster not removed, the breaker closed by it or before, and
	// no client cached.
	stored := err == nil && current && !p.closed.Load() && held == nil &&
		(e.reject.Load() == nil || (changed && tr.To == breaker.StateClosed))
	if stored {
		e.client.Store(&client) // before applyLocked clears reject
	} else if err == nil {
		toClose = append(toClose, client)
	}
	if changed && current {
		toClose = append(toClose, p.applyLocked(e, tr, c.span)...)
	}
	if stored {
		p.publishLocked(e, Connected, time.Now())
	}
	var zero C
	switch rej := e.reject.Load(); {
	case stored:
		c.endLocked(client, nil)
	case p.closed.Load():
		c.endLocked(zero, p.errorf(ErrClosed, e, nil))
	case canceled || !current:
		c.endLocked(zero, p.errorf(ErrRemoved, e, nil))
	case err == nil && held != nil:
		c.endLocked(*held, nil)
	case err == nil && rej != nil: // dialed fine, but the breaker opened meanwhile
		c.endLocked(zero, rej)
	default:
		de := &Error{Kind: ErrDialFailed, Cluster: e.name, Cause: err}
		if changed && tr.To == breaker.StateOpen {
			de.RetryAt = tr.At.Add(tr.OpenFor)
		}
		c.endLocked(zero, de)
	}
	if e.call == c {
		e.call = nil
	}
	e.running--
	p.reapLocked(e)
	e.mu.Unlock()
	for _, cl := range toClose {
		p.opts.OnClose(e.key, cl)
	}
}
