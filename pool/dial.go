package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/clusterpool/clusterpool/breaker"
)

// A dial's life: newCallLocked registers it on its entry, launch starts
// its span and submits it to the lanes once the entry's lock is released, startLocked runs it on its own goroutine under an enforced
// deadline, and finish settles it exactly once — whoever comes first of the
// dialer returning, the deadline (expire), Remove or Close of a queued dial,
// or Close giving up on a dialer that ignores its context.

// startDialLocked registers the dial callers of e will join, for the
// caller to launch (fx) once e.mu is released. The breaker must be closed
// (e.reject is nil). Needs e.mu.
func (p *Pool[K, C]) startDialLocked(e *entry[K, C], fx *effects[K, C]) (*call[K, C], error) {
	ticket, err := e.allowLocked()
	if err != nil {
		// Unreachable while reject is nil; kept as a rejection, not a panic.
		return nil, &Error{Kind: ErrCircuitOpen, Cluster: e.name, Cause: err}
	}
	c := p.newCallLocked(e, ticket, false)
	fx.launch = append(fx.launch, c)
	return c, nil
}

// newCallLocked registers a new dial of e as e's joinable call. Its span
// is started by launch, with no lock held. Needs e.mu.
func (p *Pool[K, C]) newCallLocked(e *entry[K, C], ticket breaker.Ticket, probe bool) *call[K, C] {
	if e.ls.sem == nil {
		e.ls.sem = semaphore.NewWeighted(p.opts.MaxConcurrentDials)
	}
	c := &call[K, C]{e: e, done: make(chan struct{}), launched: make(chan struct{}), gen: e.ls.gen, probe: probe, ticket: ticket,
		sem: e.ls.sem, suspect: probe || e.snapshotLocked().ConsecutiveFailures > 0}
	e.ls.call = c
	e.ls.pending++
	return c
}

// runDial calls the dialer for c on c's goroutine and settles the result.
func (p *Pool[K, C]) runDial(c *call[K, C]) {
	defer p.dialerDone(c)
	ctx, cancel := context.WithDeadline(c.ctx, time.Unix(0, c.deadline.Load()))
	defer cancel()
	client, err := p.safeDial(ctx, c.spanOrNil(), c.e.key)
	r := result[C]{client: client, err: err, end: endReturned, took: time.Since(time.Unix(0, c.started.Load()))}
	if c.ctx.Err() != nil {
		r.end = endReturnedCanceled
	} else {
		r.o = p.classify(c.e.set, err)
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
	o := p.classify(c.e.set, err)
	if o == breaker.Failure {
		o = breaker.Trip
	}
	end := endExpired
	if c.ctx.Err() != nil {
		end = endExpiredCanceled
	}
	p.finish(c, result[C]{end: end, err: err, o: o, took: c.e.set.dialTimeout})
}

// finish settles c with r unless it is settled already; a client the
// dialer returns after that is passed to OnClose.
func (p *Pool[K, C]) finish(c *call[K, C], r result[C]) {
	e := c.e
	fx := effects[K, C]{name: e.name}
	e.mu.Lock()
	if c.settled {
		e.mu.Unlock()
		if r.end.dialer() && !isZero(r.client) {
			p.closeClient(e.key, r.client)
		}
		return
	}
	p.settleLocked(c, r, time.Now(), &fx)
	e.mu.Unlock()
	p.run(e.key, &fx)
}

// settleLocked is the shell around settle, the one place a dial's outcome
// is decided: it releases the lane, gathers settle's input (recording the
// outcome in the breaker when settle's input says so), applies the
// decision to e, wakes the waiters, reaps a removed entry, and leaves the
// rest for after the lock in fx. Needs e.mu (it takes lanes.mu and the
// breaker's lock inside).
func (p *Pool[K, C]) settleLocked(c *call[K, C], r result[C], now time.Time, fx *effects[K, C]) {
	e := c.e
	c.settled = true
	p.release(c)
	held := e.client.Load()
	in := settleIn[C]{result: r, now: now, current: c.gen == e.ls.gen && !e.ls.dead, closed: p.closed.Load(),
		held: held != nil, rejected: e.reject.Load() != nil, maxWait: e.set.maxWait}
	if in.records() {
		in.tr, in.changed = e.recordLocked(c.ticket, r.o)
	} else {
		c.ticket.Discard()
	}
	out := settle(in)
	if out.learn {
		e.ls.lastTook = max(r.took, time.Nanosecond)
		e.ls.probes.record(r.o, now)
	}
	if out.cache {
		cl := r.client      // a copy: &r.client would keep all of r
		e.client.Store(&cl) // before applyLocked clears reject
	} else if out.closeNew {
		fx.close = append(fx.close, r.client)
	}
	if out.apply {
		p.applyLocked(e, in.tr, c, fx)
	}
	if out.connected {
		p.publishLocked(e, Connected, now)
	}
	if out.dialFailed {
		p.publishLocked(e, DialFailed, now)
	}
	c.endLocked(p.answer(e, out, r, held))
	if e.ls.call == c {
		e.ls.call = nil
	}
	if e.ls.pending--; e.ls.pending == 0 {
		e.ls.sem = nil // no dial of the key holds or waits for a slot
	}
	p.reapLocked(e, fx)
	if out.observe {
		fx.sample = max(r.took, time.Nanosecond)
	}
	fx.ended = append(fx.ended, ended[K, C]{call: c, res: out.res, took: r.took, err: r.err})
	fx.cancel = c
}

// answer turns settle's answer into the waiters' client and error.
func (p *Pool[K, C]) answer(e *entry[K, C], out settleOut, r result[C], held *C) (C, error) {
	var zero C
	switch out.answer {
	case answerClient:
		return r.client, nil
	case answerHeld:
		return *held, nil
	case answerClosed:
		return zero, p.errorf(ErrClosed, e, nil)
	case answerRemoved:
		return zero, p.errorf(ErrRemoved, e, nil)
	case answerRejected:
		return zero, e.reject.Load()
	}
	return zero, &Error{Kind: ErrDialFailed, Cluster: e.name, Cause: r.err, RetryAt: out.retryAt}
}

// dropLocked settles a call that never started (the pool closed before it
// was queued, or Remove took it out of the queue). Needs e.mu.
func (p *Pool[K, C]) dropLocked(c *call[K, C], fx *effects[K, C]) {
	p.settleLocked(c, result[C]{end: endDropped}, time.Now(), fx)
}
