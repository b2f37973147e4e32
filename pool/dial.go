package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// A dial's life: newCallLocked registers it on its entry, submit queues it
// in the lanes, startLocked runs it on its own goroutine under an enforced
// deadline, and finish settles it exactly once — whoever comes first of the
// dialer returning, the deadline (expire), Remove or Close of a queued dial,
// or Close giving up on a dialer that ignores its context.

// startDialLocked starts the dial callers of e will join. The breaker must
// be closed (e.reject is nil).
func (p *Pool[K, C]) startDialLocked(e *entry[K, C]) (*call[K, C], error) {
	ticket, _, _, err := e.ls.brk.Allow()
	if err != nil {
		// Unreachable while reject is nil; kept as a rejection, not a panic.
		return nil, &Error{Kind: ErrCircuitOpen, Cluster: e.name, Cause: err}
	}
	c := p.newCallLocked(e, ticket, false)
	if !p.submit(c) {
		p.dropLocked(c)
		return nil, p.errorf(ErrClosed, e, nil)
	}
	return c, nil
}

// dropLocked settles a call that never started (the pool closed before it
// was queued, or Remove took it out of the queue). No client exists and no
// breaker transition follows, so nothing is left for after the lock.
func (p *Pool[K, C]) dropLocked(c *call[K, C]) {
	p.settleLocked(c, result[C]{canceled: true})
	p.rec.EndDial(c.span, tracing.DialCanceled, 0, nil)
}

// newCallLocked registers a new dial of e as e's joinable call and starts
// its span.
func (p *Pool[K, C]) newCallLocked(e *entry[K, C], ticket breaker.Ticket, probe bool) *call[K, C] {
	c := &call[K, C]{e: e, done: make(chan struct{}), gen: e.ls.gen, probe: probe, ticket: ticket,
		suspect: probe || e.ls.brk.Snapshot().ConsecutiveFailures > 0}
	_, c.span = p.rec.StartDial(context.Background(), e.name, probe)
	e.ls.call = c
	e.ls.pending++
	return c
}

// result is how a dial ended, as given to finish.
type result[C any] struct {
	client C
	err    error
	o      breaker.Outcome // err classified, outside any lock
	took   time.Duration
	// canceled: Close or Remove canceled the dial; not the cluster's fault.
	canceled bool
	// dialer: the dialer returned (false: the deadline, Remove or Close
	// settled the dial without it).
	dialer bool
	// abandoned: Close gave up waiting for the dialer.
	abandoned bool
}

// runDial calls the dialer for c on c's goroutine and settles the result.
func (p *Pool[K, C]) runDial(c *call[K, C]) {
	defer p.dialerDone(c)
	ctx, cancel := context.WithDeadline(c.ctx, time.Unix(0, c.deadline.Load()))
	defer cancel()
	client, err := p.safeDial(ctx, c.span, c.e.key)
	r := result[C]{client: client, err: err, dialer: true, canceled: c.ctx.Err() != nil,
		took: time.Since(time.Unix(0, c.started.Load()))}
	if !r.canceled {
		r.o = p.classify(&c.e.set, err)
		if r.o == breaker.Failure && hung(ctx, err, r.took, c.e.set.dialTimeout) {
			r.o = breaker.Trip
		}
	}
	p.finish(c, r)
}

// hung reports whether a failed dial hung: it ran until the pool's
// deadline, or it ended with a timeout error (the dialer's own timeout, as
// client-go's, which may fire a little before the pool's) after at least
// half of dialTimeout. A quick timeout error (a short connect timeout) is a
// plain failure.
func hung(ctx context.Context, err error, took, dialTimeout time.Duration) bool {
	if ctx.Err() == context.DeadlineExceeded {
		return true
	}
	if took < dialTimeout/2 {
		return false
	}
	var ne interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// expire settles c as a timeout failure at its deadline if the dialer has
// not returned: the pool's DialTimeout holds whatever the dialer does. A
// dialer that returns later has its client passed to OnClose.
func (p *Pool[K, C]) expire(c *call[K, C]) {
	err := fmt.Errorf("dial did not return by its deadline (%v): %w", c.e.set.dialTimeout, context.DeadlineExceeded)
	o := p.classify(&c.e.set, err)
	if o == breaker.Failure {
		o = breaker.Trip
	}
	p.finish(c, result[C]{err: err, o: o, canceled: c.ctx.Err() != nil, took: c.e.set.dialTimeout})
}

// finish settles c with r unless it is settled already; a client the
// dialer returns after that is passed to OnClose.
func (p *Pool[K, C]) finish(c *call[K, C], r result[C]) {
	e := c.e
	e.mu.Lock()
	if c.settled {
		e.mu.Unlock()
		if r.dialer && !isZero(r.client) {
			p.closeClient(e.key, r.client)
		}
		return
	}
	toClose, res := p.settleLocked(c, r)
	e.mu.Unlock()
	p.afterSettle(c, toClose, res, r)
}

// afterSettle does what settling leaves for after the entry's lock.
func (p *Pool[K, C]) afterSettle(c *call[K, C], toClose []C, res tracing.DialResult, r result[C]) {
	p.closeAll(c.e.key, toClose)
	p.rec.EndDial(c.span, res, r.took, r.err)
	p.cancelCall(c)
}

// settleLocked is the one place a dial's outcome is applied: the lane is
// released, the breaker told, the client cached or closed, the waiters
// woken, the entry reaped if it was removed. It returns the clients to pass
// to OnClose once e.mu is released.
func (p *Pool[K, C]) settleLocked(c *call[K, C], r result[C]) (toClose []C, res tracing.DialResult) {
	e := c.e
	c.settled = true
	p.release(c)
	current := c.gen == e.ls.gen && !e.ls.dead
	var tr breaker.Transition
	var changed bool
	if r.canceled || r.abandoned || !current {
		c.ticket.Discard()
	} else {
		tr, changed = c.ticket.Record(r.o)
	}
	ok := r.err == nil && r.dialer
	if ok && !r.canceled {
		p.lat.observe(r.took)
	}
	// Another dial of the same cluster may have landed first (one that was
	// in flight when Report opened the breaker, and the probe that closed
	// it): the client already cached stays, the newcomer is closed. A
	// client is kept only if it is still wanted: the pool open, the cluster
	// not removed, the breaker closed by this dial or before.
	held := e.client.Load()
	stored := ok && current && !r.canceled && !p.closed.Load() && held == nil &&
		(e.reject.Load() == nil || (changed && tr.To == breaker.StateClosed))
	if !r.canceled && !r.abandoned && current {
		e.ls.lastTook = max(r.took, time.Nanosecond)
		e.ls.probes.record(r.o, time.Now())
	}
	if stored {
		e.client.Store(&r.client) // before applyLocked clears reject
	} else if r.dialer && !isZero(r.client) { // also a client returned with an error
		toClose = append(toClose, r.client)
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
		c.endLocked(r.client, nil)
	case p.closed.Load():
		c.endLocked(zero, p.errorf(ErrClosed, e, nil))
	case r.canceled || !current:
		c.endLocked(zero, p.errorf(ErrRemoved, e, nil))
	case ok && held != nil:
		c.endLocked(*held, nil)
	case ok && rej != nil: // dialed fine, but the breaker opened meanwhile
		c.endLocked(zero, rej)
	default:
		// Come back at the first probe if this failure opened the breaker;
		// else after the wait bound (the next Get dials again), or as long
		// as this dial took if that is longer: a retry storm against a
		// cluster that fails slowly helps nobody.
		de := &Error{Kind: ErrDialFailed, Cluster: e.name, Cause: r.err,
			RetryAt: time.Now().Add(max(e.set.maxWait, r.took))}
		if changed && tr.To == breaker.StateOpen {
			de.RetryAt = tr.At.Add(tr.OpenFor)
		} else if current && !r.canceled {
			p.dialFailedLocked(e)
		}
		c.endLocked(zero, de)
	}
	if e.ls.call == c {
		e.ls.call = nil
	}
	e.ls.pending--
	p.reapLocked(e)
	return toClose, dialResult(r)
}

// dialFailedLocked publishes DialFailed for a failed dial of e that left
// the breaker as it was, if it is closed. A dial that was in flight when
// Report opened the breaker fails with the breaker open (or half-open, its
// probe out): BreakerOpened has told subscribers already, and DialFailed
// means the breaker is closed.
func (p *Pool[K, C]) dialFailedLocked(e *entry[K, C]) {
	if e.breakerState() == breaker.StateClosed {
		p.publishLocked(e, DialFailed, time.Now())
	}
}

func dialResult[C any](r result[C]) tracing.DialResult {
	switch {
	case r.abandoned:
		return tracing.DialAbandoned
	case r.canceled:
		return tracing.DialCanceled
	case errors.Is(r.err, ErrDialPanic):
		return tracing.DialPanic
	case r.err != nil:
		return tracing.DialError
	}
	return tracing.DialSuccess
}
