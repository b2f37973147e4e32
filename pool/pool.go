package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// DialFunc creates the client for one cluster. It must honour ctx, which
// carries the pool's deadline (Options.DialTimeout) and is canceled by Close
// and Remove. A panic is recovered and counted as a failure.
type DialFunc[K comparable, C any] func(ctx context.Context, key K) (C, error)

// Pool hands out one client per cluster key; see the package documentation
// for its invariants. It is safe for concurrent use. Create it with [New].
type Pool[K comparable, C any] struct {
	dial DialFunc[K, C]
	opts Options[K, C] // defaults applied
	rec  *tracing.Recorder

	entries sync.Map            // K -> *entry[K, C]
	total   *semaphore.Weighted // MaxTotalDials
	suspect *semaphore.Weighted // suspectPermits(MaxTotalDials): dials of failing clusters and probes

	ctx     context.Context // parent of every dial; canceled by Close
	cancel  context.CancelFunc
	closing chan struct{} // closed by Close: wakes waiters and subscribers
	closed  atomic.Bool

	life      sync.RWMutex // orders wg.Add against Close
	wg        sync.WaitGroup
	closeOnce sync.Once

	subMu sync.RWMutex
	subs  map[*subscriber[K]]struct{}
}

// New returns a pool that dials with dial. It returns an error matching
// ErrInvalidOptions, naming the field, when dial is nil or opts is invalid.
func New[K comparable, C any](dial DialFunc[K, C], opts Options[K, C]) (*Pool[K, C], error) {
	if dial == nil {
		return nil, invalid("dial", "nil", "must not be nil")
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	rec, err := tracing.New(opts.TracerProvider, opts.MeterProvider)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pool[K, C]{
		dial:    dial,
		opts:    opts,
		rec:     rec,
		total:   semaphore.NewWeighted(opts.MaxTotalDials),
		suspect: semaphore.NewWeighted(suspectPermits(opts.MaxTotalDials)),
		ctx:     ctx,
		cancel:  cancel,
		closing: make(chan struct{}),
		subs:    map[*subscriber[K]]struct{}{},
	}, nil
}

// suspectPermits is how many pool-wide permits dials of failing clusters
// and half-open probes may hold at once: half of them, at least one.
func suspectPermits(total int64) int64 { return max(1, total/2) }

// Get returns the client for key. A connected cluster's client is returned
// at once, with no lock, allocation or span. Otherwise Get starts a dial or
// joins the one in flight and waits for it at most the wait bound (MaxWait,
// halved per consecutive failure) or until ctx is done, whichever is first.
// It does not wait for a dial that has to queue for a pool-wide permit
// (Options.MaxTotalDials): it returns ErrWaitTimeout once the dial queues,
// and the Connected event tells when the client is there.
//
// Errors: ErrWaitTimeout (the dial goes on), ErrCircuitOpen, ErrDialFailed,
// ErrClosed, ErrRemoved, or ctx.Err() when ctx is canceled.
func (p *Pool[K, C]) Get(ctx context.Context, key K) (C, error) {
	if v, ok := p.entries.Load(key); ok && !p.closed.Load() {
		if c := v.(*entry[K, C]).client.Load(); c != nil {
			return *c, nil
		}
	}
	return p.miss(ctx, key)
}

// miss is Get for a cluster without a client: the traced wait.
func (p *Pool[K, C]) miss(ctx context.Context, key K) (C, error) {
	var zero C
	if p.closed.Load() { // no entry is created after Close
		err := &Error{Kind: ErrClosed, Cluster: p.opts.FormatKey(key)}
		p.rec.EndWait(p.rec.StartWait(ctx, err.Cluster), tracing.Closed, 0, "", trace.SpanContext{})
		return zero, err
	}
	e := p.entry(key)
	if rej := e.reject.Load(); rej != nil && !p.closed.Load() {
		// An instant rejection waits for nothing: it costs no clock read,
		// and gets a span only as part of a caller's recording trace.
		p.rec.Reject(ctx, e.name, e.breakerState().String())
		return zero, rej
	}
	start := time.Now()
	span := p.rec.StartWait(ctx, e.name)
	c, o, dial, err := p.wait(ctx, e)
	p.rec.EndWait(span, o, time.Since(start), e.breakerState().String(), dial)
	return c, err
}

// wait does the work of miss. dial is the span context of the dial waited
// for, if any.
func (p *Pool[K, C]) wait(ctx context.Context, e *entry[K, C]) (client C, o tracing.Outcome, dial trace.SpanContext, err error) {
	var zero C
	for {
		if p.closed.Load() {
			return zero, tracing.Closed, dial, p.errorf(ErrClosed, e, nil)
		}
		if rej := e.reject.Load(); rej != nil {
			return zero, tracing.Rejected, dial, rej
		}
		if err := ctx.Err(); err != nil {
			return zero, p.ctxOutcome(err), dial, p.ctxError(e, err, time.Time{})
		}
		e.mu.Lock()
		if !e.dead {
			break
		}
		// Removed between the map read and the lock: take the new entry.
		e.mu.Unlock()
		e = p.entry(e.key)
	}
	if c := e.client.Load(); c != nil { // connected while we looked
		e.mu.Unlock()
		return *c, tracing.Acquired, dial, nil
	}
	if rej := e.reject.Load(); rej != nil {
		e.mu.Unlock()
		return zero, tracing.Rejected, dial, rej
	}
	e.removed = false
	call := e.call
	if call == nil {
		var err error
		if call, err = p.startDialLocked(e); err != nil {
			e.mu.Unlock()
			return zero, outcomeOf(err), dial, err
		}
	}
	bound := p.waitBoundLocked(e)
	e.mu.Unlock()
	dial = call.span.SpanContext()
	queued := call.queued
	if call.deadline.Load() != 0 {
		queued = nil // the dialer runs: wait for it
	}

	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case <-call.done:
		if call.err != nil {
			return zero, outcomeOf(call.err), dial, call.err
		}
		return call.client, tracing.Acquired, dial, nil
	case <-timer.C:
		return zero, tracing.Timeout, dial, p.waitTimeout(e, call)
	case <-queued:
		return zero, tracing.Queued, dial, p.waitTimeout(e, call)
	case <-ctx.Done():
		return zero, p.ctxOutcome(ctx.Err()), dial, p.ctxError(e, ctx.Err(), call.retryAt(p.opts.DialTimeout))
	case <-p.closing:
		return zero, tracing.Closed, dial, p.errorf(ErrClosed, e, nil)
	}
}

// waitTimeout is the ErrWaitTimeout of a wait for call that did not end.
func (p *Pool[K, C]) waitTimeout(e *entry[K, C], call *call[C]) error {
	return &Error{Kind: ErrWaitTimeout, Cluster: e.name, RetryAt: call.retryAt(p.opts.DialTimeout)}
}

// waitBoundLocked is MaxWait halved once per consecutive failure.
func (p *Pool[K, C]) waitBoundLocked(e *entry[K, C]) time.Duration {
	f := e.brk.Snapshot().ConsecutiveFailures
	if f >= 63 {
		return 0
	}
	return p.opts.MaxWait >> f
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
		if retryAt.IsZero() {
			retryAt = time.Now().Add(p.opts.MaxWait)
		}
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
	}
	return tracing.Failed
}

// track counts one more pool goroutine (or pending probe timer) unless the
// pool is closed. Every true must be matched by one p.wg.Done.
func (p *Pool[K, C]) track() bool {
	p.life.RLock()
	defer p.life.RUnlock()
	if p.closed.Load() {
		return false
	}
	p.wg.Add(1)
	return true
}

// Close cancels every dial in flight, wakes every waiter with ErrClosed,
// stops every probe and subscription, waits for every pool goroutine to
// exit, then passes every cached client to OnClose. It is idempotent and
// always returns nil; Get after Close returns ErrClosed.
func (p *Pool[K, C]) Close() error {
	p.closeOnce.Do(func() {
		p.life.Lock()
		p.closed.Store(true)
		p.life.Unlock()
		p.cancel()
		close(p.closing)
		p.entries.Range(func(_, v any) bool {
			e := v.(*entry[K, C])
			e.mu.Lock()
			p.stopProbeLocked(e)
			e.mu.Unlock()
			return true
		})
		p.wg.Wait()
		p.entries.Range(func(k, v any) bool {
			e := v.(*entry[K, C])
			if c := e.client.Swap(nil); c != nil {
				p.opts.OnClose(e.key, *c)
			}
			p.rec.ClusterRemoved(e.breakerState().String())
			p.entries.Delete(k)
			return true
		})
	})
	return nil
}

// newBreaker returns a breaker with the pool's settings, validated in New.
func (p *Pool[K, C]) newBreaker() *breaker.Breaker {
	b, err := breaker.New(p.opts.Breaker)
	if err != nil {
		panic("clusterpool: settings validated in New: " + err.Error())
	}
	return b
}
