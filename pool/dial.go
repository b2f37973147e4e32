package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// A dial's life: a step registers it on its entry (entry.newCall), launch
// starts its span and submits it to the lanes once the entry's lock is
// released, startLocked runs it on its own goroutine under an enforced
// deadline, and finish settles it exactly once — whoever comes first of the
// dialer returning, the deadline (expire), Remove or Close of a queued dial,
// or Close giving up on a dialer that ignores its context.

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

// finish settles c with r unless it is settled already (a client the
// dialer returns after that is passed to OnClose): it takes c out of the
// lanes (freeing its slot, starting the next dial) with no entry lock
// held, then steps c's entry with the dial's end.
func (p *Pool[K, C]) finish(c *call[K, C], r result[C]) {
	e := c.e
	if !c.settled.CompareAndSwap(false, true) {
		if r.end.dialer() && !isZero(r.client) {
			p.closeClient(e.key, r.client)
		}
		return
	}
	p.release(c)
	p.step(e, input[K, C]{kind: inDialEnded, call: c, res: r})
}
