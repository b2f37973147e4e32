package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// A dial's life: a step registers it (entry.newCall), launch starts its
// span and queues it after the entry's lock, the lanes decide when it
// starts (dispatchLocked) and start runs it on its own goroutine, and
// finish settles it exactly once, whoever comes first: the dialer, the
// deadline (expire), a cancel of a queued dial, or Close giving up.

// runDial calls the dialer for c on c's goroutine and settles the result.
func (p *Pool[K, C]) runDial(c *call[K, C]) {
	defer p.dialerDone(c)
	ctx, cancel := context.WithDeadline(c.slot.ctx, time.Unix(0, c.slot.deadline.Load()))
	defer cancel()
	client, err := p.safeDial(ctx, c.spanOrNil(), c.e.key)
	r := result[C]{client: client, err: err, end: endReturned, took: time.Since(time.Unix(0, c.slot.started.Load()))}
	if c.slot.ctx.Err() != nil {
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
// deadline, or ended with a timeout error of its own (client-go's may fire
// a little before the pool's) after at least half of dialTimeout.
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
// not returned (a client it returns later goes to OnClose).
func (p *Pool[K, C]) expire(c *call[K, C]) {
	err := fmt.Errorf("dial did not return by its deadline (%v): %w", c.e.set.dialTimeout, context.DeadlineExceeded)
	o := p.classify(c.e.set, err)
	if o == breaker.Failure {
		o = breaker.Trip
	}
	end := endExpired
	if c.slot.ctx.Err() != nil {
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
