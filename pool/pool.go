package pool

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// DialFunc creates the client for one cluster. It should honour ctx, which
// carries the pool's deadline (Options.DialTimeout) and is canceled by Close
// and Remove; the pool enforces the deadline even if it does not. A panic
// is recovered and counted as a failure; a nil client with a nil error is
// an ErrDialFailed failure; a non-zero client returned with an error is
// passed to OnClose.
type DialFunc[K comparable, C any] func(ctx context.Context, key K) (C, error)

// Pool hands out one client per cluster key; see the package documentation
// for its invariants. It is safe for concurrent use. Create it with [New].
type Pool[K comparable, C any] struct {
	dial DialFunc[K, C]
	opts Options[K, C] // defaults applied
	base *keySettings  // the settings of keys without overrides
	rec  *tracing.Recorder
	lat  latency

	entries  sync.Map // K -> *entry[K, C]
	creating sync.Map // K -> *creation[K, C]: entries being made (ForKey runs)
	lanes    lanes[K, C]
	timers   timers // probes, dial deadlines and demotion

	// ctx is the one shutdown signal: the parent of every dial, canceled by
	// Close; its Done channel wakes waiters and subscribers. closed is set
	// just before (closeLanes, under lanes.mu and mu): the lanes, track and
	// the lock-free paths read it.
	ctx    context.Context
	cancel context.CancelFunc
	closed atomic.Bool

	mu        sync.Mutex               // guards closed transitions, track's wg.Add, dialers and subs
	wg        sync.WaitGroup           // subscribers' goroutines and fired timers' (see timers)
	dialers   map[*call[K, C]]struct{} // dial goroutines that have not returned
	dialerOut chan struct{}            // closed and replaced when a dialer returns after Close
	subs      map[*subscriber[K]]struct{}

	// observe, if set (by this package's tests, before any call), sees
	// every breaker transition the pool applies, and Remove's reset as a
	// transition to closed, in order, with the entry's mu held.
	observe func(key K, tr breaker.Transition)

	shutdownOnce sync.Once
	shutdownDone chan struct{} // closed once Shutdown finished its work
	shutdownErr  error
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
	base, err := opts.settingsFor(Overrides{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool[K, C]{
		dial: dial, opts: opts, base: base, rec: rec,
		ctx: ctx, cancel: cancel,
		dialers: map[*call[K, C]]struct{}{}, dialerOut: make(chan struct{}),
		subs:         map[*subscriber[K]]struct{}{},
		shutdownDone: make(chan struct{}),
	}
	p.lanes.init(opts.MaxTotalDials, opts.MaxSlowDials)
	p.timers.init(&p.wg)
	return p, nil
}

// Get returns the client for key. A connected cluster's client is returned
// at once, with no lock, allocation or span. Otherwise Get starts a dial or
// joins the one in flight, and waits for it only if it is expected to end
// within the wait bound (Options.MaxWait, or ctx's earlier deadline): not
// for a dial queued for a slot, nor for a dial already slower than the
// healthy dials the pool has seen, nor for a cluster whose last dial took
// longer than the bound. It then returns ErrWaitTimeout at once with a
// RetryAfter of the expected end, the dial goes on, and an event tells when
// it ended (Connected when the client is there). A Get whose ctx is marked
// by Requeued does not wait for a dial whose length the pool cannot
// predict yet, and its RetryAfter is the latest the dial can end.
//
// A Get whose ctx is already done when it would have to wait returns
// ctx.Err() as it is, starts nothing and keeps no state. The first Get of a
// key runs Options.ForKey; a Get of the key that comes meanwhile waits for
// that answer within the same bound.
//
// Errors: ErrWaitTimeout (the dial goes on), ErrCircuitOpen, ErrDialFailed,
// ErrClosed, ErrRemoved, ErrInvalidOptions (Options.ForKey), or ctx's error.
func (p *Pool[K, C]) Get(ctx context.Context, key K) (C, error) {
	if v, ok := p.entries.Load(key); ok && !p.closed.Load() {
		e := v.(*entry[K, C])
		if c := e.client.Load(); c != nil {
			return *c, nil
		}
		if rej := e.reject.Load(); rej != nil {
			// An instant rejection waits for nothing: it costs no clock
			// read, and gets a span only as part of a caller's recording
			// trace.
			p.rec.Reject(ctx, e.name, rej.state.String())
			var zero C
			return zero, rej
		}
	}
	return p.miss(ctx, key)
}

// miss is Get for a cluster without a client or an instant rejection: the
// traced wait.
func (p *Pool[K, C]) miss(ctx context.Context, key K) (C, error) {
	var zero C
	if p.closed.Load() { // no entry is created after Close
		err := &Error{Kind: ErrClosed, Cluster: p.format(key)}
		p.rec.EndWait(p.rec.StartWait(ctx, err.Cluster), tracing.Closed, 0, "", trace.SpanContext{})
		return zero, err
	}
	if err := ctx.Err(); err != nil {
		return zero, err // nothing started, nothing kept
	}
	e, err := p.entry(ctx, key)
	if err != nil {
		p.rec.EndWait(p.rec.StartWait(ctx, p.format(key)), p.entryOutcome(ctx, err), 0, "", trace.SpanContext{})
		return zero, err
	}
	start := time.Now()
	span := p.rec.StartWait(ctx, e.name)
	c, o, dial, err := p.wait(ctx, e)
	p.rec.EndWait(span, o, time.Since(start), e.breakerState().String(), dial)
	return c, err
}

// entryOutcome is the outcome of a Get that got no entry: invalid
// overrides, the pool closed, or its wait for another caller's ForKey
// ended (its ctx, or MaxWait).
func (p *Pool[K, C]) entryOutcome(ctx context.Context, err error) tracing.Outcome {
	switch {
	case p.closed.Load():
		return tracing.Closed
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return p.ctxOutcome(err)
	case errors.Is(err, ErrWaitTimeout):
		return tracing.Timeout
	}
	return outcomeOf(err)
}

// track counts one more subscriber goroutine unless the pool is closed.
// Every true must be matched by one p.wg.Done.
func (p *Pool[K, C]) track() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return false
	}
	p.wg.Add(1)
	return true
}

// dialerAdd and dialerDone keep the set of dial goroutines that have not
// returned, which Close waits for (within its bound).
func (p *Pool[K, C]) dialerAdd(c *call[K, C]) {
	p.mu.Lock()
	p.dialers[c] = struct{}{}
	p.mu.Unlock()
}

func (p *Pool[K, C]) dialerDone(c *call[K, C]) {
	p.mu.Lock()
	delete(p.dialers, c)
	if p.closed.Load() {
		close(p.dialerOut)
		p.dialerOut = make(chan struct{})
	}
	p.mu.Unlock()
}

// Probe asks the pool to try key now, off the caller's path, without
// waiting: an open breaker's probe is brought forward (coalesced with a
// probe already out), and a cluster that is not connected and has no dial
// in flight is dialed. It does nothing for a connected cluster, one with a
// dial in flight, or after Close. The first Probe of a key runs ForKey;
// one that comes while another caller runs it waits for that answer, at
// most MaxWait. Use it when something outside the pool says the cluster
// may work again (its kubeconfig Secret changed, an operator asked); the
// Connected event tells when it does.
func (p *Pool[K, C]) Probe(key K) {
	for !p.closed.Load() {
		e, err := p.entry(context.Background(), key)
		if err != nil || !p.step(e, input[K, C]{kind: inProbe}).retry {
			return
		}
	}
}

// Report feeds the outcome of using key's client into its breaker: a caller
// saw err talking to the cluster (nil for a success). Errors count as
// failures as the cluster's Breaker.IsFailure says, which is called before
// any lock is taken. When the breaker opens, the client is evicted
// (OnClose), and Disconnected and BreakerOpened are sent. Report does
// nothing for an unknown key, a key removed and not used since, or while
// the breaker is not closed: it never creates state nor starts a dial.
func (p *Pool[K, C]) Report(key K, err error) {
	if v, ok := p.entries.Load(key); ok && !p.closed.Load() {
		e := v.(*entry[K, C])
		p.step(e, input[K, C]{kind: inReport, o: p.classify(e.set, err)})
	}
}

// Remove forgets key: a dial in flight is canceled and its waiters get
// ErrRemoved, the cached client is passed to OnClose (and Disconnected
// sent), the breaker is reset, a pending probe dropped, and a Removed event
// sent. A dial that returns after Remove has its client closed, not cached;
// Report does nothing until the key is used again. A later Get starts
// afresh; its dial waits for the canceled one to return if
// MaxConcurrentDials is 1.
func (p *Pool[K, C]) Remove(key K) {
	if v, ok := p.entries.Load(key); ok {
		p.step(v.(*entry[K, C]), input[K, C]{kind: inRemove})
	}
}
