package pool

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/clusterpool/clusterpool/tracing"
)

// wait does the work of miss: join or start e's dial and wait for it if it
// can end within the bound. dial is the span context of the dial, if any.
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
	// The caller's earlier deadline ends the wait through ctx (so its error
	// says so); the timer is the pool's own bound.
	timer := time.NewTimer(e.set.maxWait)
	defer timer.Stop()
	select {
	case <-call.done:
		if call.err != nil {
			return zero, outcomeOf(call.err), dial, call.err
		}
		return call.client, tracing.Acquired, dial, nil
	case <-timer.C:
		return zero, tracing.Timeout, dial, &Error{Kind: ErrWaitTimeout, Cluster: e.name, RetryAt: p.retryAt(call)}
	case <-ctx.Done():
		return zero, p.ctxOutcome(ctx.Err()), dial, p.ctxError(e, ctx.Err(), p.retryAt(call))
	case <-p.ctx.Done():
		return zero, tracing.Closed, dial, p.errorf(ErrClosed, e, nil)
	}
}

// awaitLaunch waits, within the wait's bound, until call is queued: a
// joiner may find a dial its launcher has registered but not queued yet
// (its span is being started, with no lock held). It returns
// ErrWaitTimeout if the bound passed first, ctx's error if it was
// canceled, with the wait's outcome.
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

// plan decides whether a Get waits for call: it returns Acquired if so,
// else the outcome to report (Queued or Skipped) and when the caller should
// come back.
//
// The rule: wait only for a dial that runs (not queued), has not yet run
// past slowAfter, and is expected to end within the bound: its start plus
// how long the cluster's last dial took, whatever its outcome (a cluster
// whose last dial hung until its deadline is not waited for; one refused
// at once is), or the pool's p90 of successful dials for a cluster never
// dialed. With nothing learned yet, wait the bound, unless the caller is
// requeued by events (ctx marked by Requeued). The caller comes back at
// the dial's expected end, or if requeued at the latest it can end (the
// event comes first).
func (p *Pool[K, C]) plan(ctx context.Context, e *entry[K, C], call *call[K, C], lastTook time.Duration) (retryAt time.Time, o tracing.Outcome) {
	now := time.Now()
	bound := e.set.maxWait
	if d, ok := ctx.Deadline(); ok {
		bound = min(bound, d.Sub(now))
	}
	started := call.started.Load()
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
	est := lastTook
	if est == 0 {
		est = p.lat.estimate()
	}
	requeued := isRequeued(ctx)
	if est == 0 && !requeued {
		return time.Time{}, tracing.Acquired
	}
	end := start.Add(est)
	if est != 0 && !end.After(now.Add(bound)) {
		return time.Time{}, tracing.Acquired
	}
	latest := p.retryAt(call)
	if requeued || latest.Before(end) {
		return latest, tracing.Skipped
	}
	return end, tracing.Skipped
}

func (p *Pool[K, C]) ctxOutcome(err error) tracing.Outcome {
	if errors.Is(err, context.DeadlineExceeded) {
		return tracing.Timeout
	}
	return tracing.Canceled
}

// ctxError is the error for a wait ended by the caller's context: its
// deadline is a wait timeout, anything else is returned as it is.
func (p *Pool[K, C]) ctxError(e *entry[K, C], err error, retryAt time.Time) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &Error{Kind: ErrWaitTimeout, Cluster: e.name, Cause: err, RetryAt: retryAt}
	}
	return err
}

func (p *Pool[K, C]) errorf(kind error, e *entry[K, C], cause error) error {
	return &Error{Kind: kind, Cluster: e.name, Cause: cause}
}

func outcomeOf(err error) tracing.Outcome {
	switch {
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
