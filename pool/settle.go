package pool

import (
	"errors"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// A dial's end, part of the functional core (see core.go): settle decides,
// from an explicit input (settleIn), everything that follows a dial's end;
// dialEnded gathers that input from the entry, records the outcome in the
// breaker, and applies the decision to the entry.

// dialEnd is how a dial ended: who settled it, and whether Remove or Close
// had canceled it. These are the only legal combinations; a dropped or
// abandoned dial is always canceled, and only endReturned* carry a client
// from the dialer.
type dialEnd uint8

const (
	// endReturned: the dialer returned; nobody had canceled the dial.
	endReturned dialEnd = iota
	// endReturnedCanceled: the dialer returned after Remove or Close
	// canceled its context.
	endReturnedCanceled
	// endExpired: the pool's deadline passed before the dialer returned.
	endExpired
	// endExpiredCanceled: the deadline passed before the dialer returned,
	// after Remove or Close canceled it.
	endExpiredCanceled
	// endDropped: the dial never started (Remove or Close took it out of
	// the queue, or the pool closed before it was queued).
	endDropped
	// endAbandoned: Close gave up waiting for the dialer.
	endAbandoned
)

// canceled reports whether Remove or Close ended the dial's chances: its
// outcome is not the cluster's.
func (d dialEnd) canceled() bool { return d != endReturned && d != endExpired }

// dialer reports whether the dialer returned (with a client, an error, or
// both).
func (d dialEnd) dialer() bool { return d == endReturned || d == endReturnedCanceled }

// result is how a dial ended, as given to finish.
type result[C any] struct {
	end    dialEnd
	client C
	err    error
	o      breaker.Outcome // err classified, outside any lock
	took   time.Duration
}

// settleIn is everything settle decides from: the dial's result and the
// entry's state when it is settled.
type settleIn[C any] struct {
	result[C]
	now time.Time
	// current: the dial is of the entry's generation (no Remove since it
	// began) and the entry is still in the pool's map.
	current bool
	closed  bool // the pool is closed
	held    bool // a client is cached already (another dial landed first)
	// rejected: the breaker was not closed before this dial's outcome was
	// recorded (the entry had a rejection).
	rejected bool
	// tr and changed are the breaker's answer to the outcome, recorded
	// when records() says so.
	tr      breaker.Transition
	changed bool
	maxWait time.Duration // the key's wait bound
}

// records reports whether the dial's outcome is the cluster's and is fed to
// the breaker (else its ticket is discarded).
func (in *settleIn[C]) records() bool { return in.current && !in.end.canceled() }

// answer is what a dial's waiters get.
type answer uint8

const (
	answerClient   answer = iota // the dial's client
	answerHeld                   // the client cached before this dial landed
	answerClosed                 // ErrClosed
	answerRemoved                // ErrRemoved
	answerRejected               // the entry's rejection: the breaker opened meanwhile
	answerFailed                 // ErrDialFailed, come back at settleOut.retryAt
)

// settleOut is settle's decision: what the shell does to the entry, and
// what it leaves for after the lock.
type settleOut struct {
	cache    bool // cache the dial's client
	closeNew bool // pass the dial's client to OnClose instead
	apply    bool // apply in.tr to the entry
	// learn: note the dial's duration and outcome (lastTook, probe log).
	learn bool
	// observe: feed the dial's duration to the pool's latency estimate.
	observe    bool
	connected  bool // publish Connected
	dialFailed bool // publish DialFailed
	answer     answer
	retryAt    time.Time // for answerFailed
	res        tracing.DialResult
}

// settle decides what a dial's end does. A client is cached only if it is
// still wanted: the pool open, the cluster not removed, no client cached
// already (a dial in flight when Report opened the breaker may land after
// the probe that closed it), and the breaker closed by this dial or before.
func settle[C any](in settleIn[C]) settleOut {
	ok := in.err == nil && in.end.dialer()
	canceled := in.end.canceled()
	closes := in.changed && in.tr.To == breaker.StateClosed
	out := settleOut{
		learn:   in.records(),
		observe: ok && !canceled,
		apply:   in.changed && in.current,
		res:     dialResult(in.end, in.err),
	}
	out.cache = ok && in.current && !canceled && !in.closed && !in.held && (!in.rejected || closes)
	out.closeNew = !out.cache && in.end.dialer() && !isZero(in.client) // also a client returned with an error
	out.connected = out.cache
	rejectedAfter := in.rejected
	if out.apply {
		rejectedAfter = in.tr.To != breaker.StateClosed
	}
	out.answer = answerOf(in, out.cache, ok, rejectedAfter)
	if out.answer == answerFailed {
		out.retryAt, out.dialFailed = failedRetry(in, rejectedAfter)
	}
	return out
}

// answerOf is the answer for a dial's waiters.
func answerOf[C any](in settleIn[C], cached, ok, rejected bool) answer {
	switch {
	case cached:
		return answerClient
	case in.closed:
		return answerClosed
	case in.end.canceled() || !in.current:
		return answerRemoved
	case ok && in.held:
		return answerHeld
	case ok && rejected: // dialed fine, but the breaker opened meanwhile
		return answerRejected
	}
	return answerFailed
}

// failedRetry is when the waiters of a failed dial come back, and whether
// DialFailed is published. Come back at the first probe if this failure
// opened the breaker; else after the wait bound (the next Get dials again),
// or as long as this dial took if that is longer: a retry storm against a
// cluster that fails slowly helps nobody. DialFailed means the breaker is
// closed: a dial that was in flight when Report opened it sends none
// (BreakerOpened has told subscribers already).
func failedRetry[C any](in settleIn[C], rejected bool) (time.Time, bool) {
	if in.changed && in.tr.To == breaker.StateOpen {
		return in.tr.At.Add(in.tr.OpenFor), false
	}
	return in.now.Add(max(in.maxWait, in.took)), in.records() && !rejected
}

// dialResult is the dial span's result.
func dialResult(end dialEnd, err error) tracing.DialResult {
	switch {
	case end == endAbandoned:
		return tracing.DialAbandoned
	case end.canceled():
		return tracing.DialCanceled
	case errors.Is(err, ErrDialPanic):
		return tracing.DialPanic
	case err != nil:
		return tracing.DialError
	}
	return tracing.DialSuccess
}

// dialEnded settles dial c, whose lane the shell has released, with
// in.res: the one place a dial's outcome is decided.
func (e *entry[K, C]) dialEnded(in input[K, C], fx *effects[K, C]) {
	c, r := in.call, in.res
	held := e.client.Load()
	sin := settleIn[C]{result: r, now: in.now, current: c.gen == e.ls.gen && !e.ls.dead, closed: in.closed,
		held: held != nil, rejected: e.reject.Load() != nil, maxWait: e.set.maxWait}
	if sin.records() {
		sin.tr, sin.changed = e.record(c.ticket, r.o, in.now)
	} else {
		e.discard(c.ticket)
	}
	out := settle(sin)
	if out.learn {
		e.ls.lastTook = max(r.took, time.Nanosecond)
		e.ls.probes.record(r.o, in.now)
	}
	if out.cache {
		cl := r.client      // a copy: &r.client would keep all of r
		e.client.Store(&cl) // before apply clears reject
	} else if out.closeNew {
		fx.close = append(fx.close, r.client)
	}
	if out.apply {
		e.apply(sin.tr, c, fx)
	}
	if out.connected {
		e.event(Connected, in.now, fx)
	}
	if out.dialFailed {
		e.event(DialFailed, in.now, fx)
	}
	client, err := e.answerOf(out, r, held)
	e.answer(c, client, err, fx)
	if e.ls.call == c {
		e.ls.call = nil
	}
	if e.ls.pending--; e.ls.pending == 0 {
		e.ls.sem = nil // no dial of the key holds or waits for a slot
	}
	e.reap(fx)
	if out.observe {
		fx.sample = max(r.took, time.Nanosecond)
	}
	fx.ended = append(fx.ended, ended[K, C]{call: c, res: out.res, took: r.took, err: r.err})
	fx.done = c
}

// answerOf turns settle's answer into the waiters' client and error.
func (e *entry[K, C]) answerOf(out settleOut, r result[C], held *C) (C, error) {
	var zero C
	switch out.answer {
	case answerClient:
		return r.client, nil
	case answerHeld:
		return *held, nil
	case answerClosed:
		return zero, &Error{Kind: ErrClosed, Cluster: e.name}
	case answerRemoved:
		return zero, &Error{Kind: ErrRemoved, Cluster: e.name}
	case answerRejected:
		return zero, e.reject.Load()
	}
	return zero, &Error{Kind: ErrDialFailed, Cluster: e.name, Cause: r.err, RetryAt: out.retryAt}
}
