package pool

import (
	"cmp"
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/clusterpool/clusterpool/tracing"
)

// wait does the work of miss: join or start e's dial and wait for it if it
// can end within the bound; dial is the dial's span context, if any.
func (p *Pool[K, C]) wait(ctx context.Context, e *entry[K, C]) (client C, o tracing.Outcome, dial trace.SpanContext, err error) {
	var zero C
	r := p.step(e, input[K, C]{kind: inMiss})
	for r.retry { // removed between the map read and the step: take the new entry
		if e, err = p.entry(ctx, e.key); err != nil {
			return zero, outcomeOf(err), dial, err
		}
		r = p.step(e, input[K, C]{kind: inMiss})
	}
	switch {
	case r.client != nil: // connected while we looked
		return *r.client, tracing.Acquired, dial, nil
	case r.err != nil:
		return zero, tracing.Rejected, dial, r.err
	}
	call, lastTook := r.call, r.lastTook
	if o, err := p.awaitLaunch(ctx, e, call); err != nil {
		return zero, o, dial, err
	}
	dial = call.spanOrNil().SpanContext()

	retryAt, o := p.plan(ctx, e, call, lastTook)
	if o != tracing.Acquired { // not worth waiting for
		return zero, o, dial, &Error{Kind: ErrWaitTimeout, Cluster: e.name, RetryAt: retryAt}
	}
	client, o, err = p.await(ctx, e, call)
	return client, o, dial, err
}

// await waits for call's result, at most the key's MaxWait (the caller's
// earlier deadline ends it through ctx, so that its error says so).
func (p *Pool[K, C]) await(ctx context.Context, e *entry[K, C], call *call[K, C]) (C, tracing.Outcome, error) {
	var zero C
	timer := time.NewTimer(e.set.maxWait)
	defer timer.Stop()
	select {
	case <-call.done:
		if call.err != nil {
			return zero, outcomeOf(call.err), call.err
		}
		return call.client, tracing.Acquired, nil
	case <-timer.C:
		return zero, tracing.Timeout, &Error{Kind: ErrWaitTimeout, Cluster: e.name, RetryAt: p.retryAt(call)}
	case <-ctx.Done():
		return zero, p.ctxOutcome(ctx.Err()), p.ctxError(e, ctx.Err(), p.retryAt(call))
	case <-p.ctx.Done():
		return zero, tracing.Closed, &Error{Kind: ErrClosed, Cluster: e.name}
	}
}

// awaitLaunch waits, within the bound, until call is queued: a joiner may
// find a dial registered but not yet launched (its span being started).
func (p *Pool[K, C]) awaitLaunch(ctx context.Context, e *entry[K, C], call *call[K, C]) (tracing.Outcome, error) {
	select {
	case <-call.launched:
		return tracing.Acquired, nil
	default:
	}
	timer := time.NewTimer(e.set.maxWait)
	defer timer.Stop()
	retryAt := time.Now().Add(e.set.dialTimeout) // not queued yet: at least its deadline
	select {
	case <-call.launched:
		return tracing.Acquired, nil
	case <-timer.C:
		return tracing.Timeout, &Error{Kind: ErrWaitTimeout, Cluster: e.name, RetryAt: retryAt}
	case <-ctx.Done():
		return p.ctxOutcome(ctx.Err()), p.ctxError(e, ctx.Err(), retryAt)
	}
}

// plan decides whether a Get waits for call (Acquired), or the outcome
// (Queued, Skipped) and when to come back: wait only for a running dial,
// not yet slow, expected to end within the bound (its start plus the
// cluster's last dial's duration, or the pool's p90); with nothing learned,
// the bound, unless Requeued. Back at the expected end, or the latest.
func (p *Pool[K, C]) plan(ctx context.Context, e *entry[K, C], call *call[K, C], lastTook time.Duration) (retryAt time.Time, o tracing.Outcome) {
	now := time.Now()
	started := call.slot.started.Load()
	switch {
	case call.ended():
		return time.Time{}, tracing.Acquired // its result is there: take it
	case started == 0:
		return p.retryAt(call), tracing.Queued
	}
	start := time.Unix(0, started)
	elapsed := now.Sub(start)
	if elapsed >= p.lat.slowAfter(p.opts.MaxWait) {
		return p.retryAt(call), tracing.Skipped
	}
	est := cmp.Or(lastTook, p.lat.estimate())
	requeued := isRequeued(ctx)
	if est == 0 && !requeued {
		return time.Time{}, tracing.Acquired
	}
	end := start.Add(est)
	if est != 0 && !end.After(now.Add(bound(ctx, e, now))) {
		return time.Time{}, tracing.Acquired
	}
	latest := p.retryAt(call)
	if requeued || latest.Before(end) {
		return latest, tracing.Skipped
	}
	return end, tracing.Skipped
}

// bound is how long a Get of e may wait from now.
func bound[K comparable, C any](ctx context.Context, e *entry[K, C], now time.Time) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return min(e.set.maxWait, d.Sub(now))
	}
	return e.set.maxWait
}

func (p *Pool[K, C]) ctxOutcome(err error) tracing.Outcome {
	if errors.Is(err, context.DeadlineExceeded) {
		return tracing.Timeout
	}
	return tracing.Canceled
}

// ctxError is the error of a wait ended by ctx: its deadline is a wait
// timeout, anything else is returned as it is.
func (p *Pool[K, C]) ctxError(e *entry[K, C], err error, retryAt time.Time) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Kind: ErrWaitTimeout, Cluster: e.name, Cause: err, RetryAt: retryAt}
	}
	return err
}

func outcomeOf(err error) tracing.Outcome {
	switch {
	case errors.Is(err, ErrWaitTimeout):
		return tracing.Timeout
	case errors.Is(err, ErrCircuitOpen):
		return tracing.Rejected
	case errors.Is(err, ErrClosed):
		return tracing.Closed
	case errors.Is(err, ErrRemoved):
		return tracing.Removed
	case errors.Is(err, ErrInvalidOptions):
		return tracing.Invalid
	}
	return tracing.Failed
}
