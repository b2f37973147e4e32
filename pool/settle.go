package pool

import (
	"errors"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// A dial's end, part of the functional core (see core.go): settle decides,
// from an explicit input (settleIn), all that follows; dialEnded gathers
// that input, records the outcome in the breaker and applies the decision.

// dialEnd is how a dial ended: who settled it, and whether Remove, Redial
// or Close had canceled it. Only these combinations exist.
type dialEnd uint8

const (
	endReturned         dialEnd = iota // the dialer returned, uncanceled
	endReturnedCanceled                // the dialer returned after its cancel
	endExpired                         // the pool's deadline passed first
	endExpiredCanceled                 // the deadline passed first, after a cancel
	endDropped                         // never started: dequeued, or the pool closed
	endAbandoned                       // Close gave up waiting for the dialer
)

// canceled reports whether the dial's outcome is not the cluster's.
func (d dialEnd) canceled() bool { return d != endReturned && d != endExpired }

// dialer reports whether the dialer returned (a client, an error, or both).
func (d dialEnd) dialer() bool { return d == endReturned || d == endReturnedCanceled }

// result is how a dial ended, as given to finish.
type result[C any] struct {
	end    dialEnd
	client C
	err    error
	o      breaker.Outcome // err classified, outside any lock
	took   time.Duration
}

// settleIn is what settle decides from: the dial's result and the entry's
// state when it is settled.
type settleIn[C any] struct {
	result[C]
	now time.Time
	// current: no Remove or Redial since the dial began, and the entry is
	// in the map.
	current  bool
	closed   bool // the pool is closed
	held     bool // another dial's client is cached already
	rejected bool // the breaker was not closed before this outcome
	// tr and changed: the breaker's answer to the outcome (if records()).
	tr      breaker.Transition
	changed bool
	maxWait time.Duration // the key's wait bound
}

// records reports whether the outcome is the cluster's, fed to the
// breaker (else the ticket is discarded).
func (in *settleIn[C]) records() bool { return in.current && !in.end.canceled() }

// caches reports whether the dial's client is cached: it is still wanted
// (the pool open, no Remove or Redial since, no client cached already: a
// dial in flight when Report opened the breaker may land after the probe
// that closed it) and the breaker closed by this dial or before.
func (in *settleIn[C]) caches(ok bool) bool {
	return ok && in.records() && !in.closed && !in.held && (!in.rejected || in.changed && in.tr.To == breaker.StateClosed)
}

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

// settleOut is settle's decision.
type settleOut struct {
	cache      bool // cache the dial's client (and publish Connected)
	closeNew   bool // pass the dial's client to OnClose instead
	apply      bool // apply in.tr to the entry
	learn      bool // note the dial's duration and outcome (lastTook, probe log)
	observe    bool // feed its duration to the latency estimate
	dialFailed bool // publish DialFailed
	answer     answer
	retryAt    time.Time // for answerFailed
	res        tracing.DialResult
}

// settle decides what a dial's end does.
func settle[C any](in settleIn[C]) settleOut {
	ok := in.err == nil && in.end.dialer()
	out := settleOut{learn: in.records(), observe: ok && !in.end.canceled(), apply: in.changed && in.current,
		cache: in.caches(ok), res: dialResult(in.end, in.err)}
	out.closeNew = !out.cache && in.end.dialer() && !isZero(in.client) // also a client returned with an error
	rejected := in.rejected
	if out.apply {
		rejected = in.tr.To != breaker.StateClosed
	}
	out.answer = answerKind(in, out.cache, ok, rejected)
	if out.answer == answerFailed {
		out.retryAt, out.dialFailed = failedRetry(in, rejected)
	}
	return out
}

// answerKind is the answer for a dial's waiters.
func answerKind[C any](in settleIn[C], cached, ok, rejected bool) answer {
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
// DialFailed is published: at the first probe if this failure opened the
// breaker; else after the wait bound, or as long as the dial took if
// longer (a retry storm against a slowly failing cluster helps nobody).
// DialFailed means the breaker is closed: a dial in flight when Report
// opened it sends none (BreakerOpened did).
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
	e.keep(out, r, in.now, fx)
	if out.apply {
		e.apply(sin.tr, c, fx)
	}
	if out.cache {
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
	fx.ended = append(fx.ended, ended[K, C]{call: c, res: out.res, took: r.took, err: r.err})
}

// keep carries out what settle decided of the dial's client and duration:
// learned, sampled, cached or closed.
func (e *entry[K, C]) keep(out settleOut, r result[C], now time.Time, fx *effects[K, C]) {
	if out.learn {
		e.ls.lastTook = max(r.took, time.Nanosecond)
		e.ls.probes.record(r.o, now)
	}
	if out.observe {
		fx.sample = max(r.took, time.Nanosecond)
	}
	if out.cache {
		cl := r.client      // a copy: &r.client would keep all of r
		e.client.Store(&cl) // before apply clears reject
	} else if out.closeNew {
		fx.close = append(fx.close, r.client)
	}
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
