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

// DialFunc creates the client for one cluster. It should honour ctx, which
// carries the pool's deadline (Options.DialTimeout, enforced anyway) and is
// canceled by Close, Remove and Redial. A panic, or a nil client with a nil
// error, is a failure; a non-zero client returned with an error goes to
// OnClose.
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
	// Close. closed is set just before (closeLanes, under lanes.mu and mu).
	ctx    context.Context
	cancel context.CancelFunc
	closed atomic.Bool

	mu        sync.Mutex               // guards closed transitions, track's wg.Add, dialers and subs
	wg        sync.WaitGroup           // subscribers' goroutines and fired timers' (see timers)
	dialers   map[*call[K, C]]struct{} // dial goroutines that have not returned
	dialerOut chan struct{}            // closed and replaced when a dialer returns after Close
	subs      map[*subscriber[K]]struct{}

	// observe, if set (by tests, before any call), sees every breaker
	// transition applied, and Remove's reset, in order, under entry.mu.
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
	p.lanes.total, p.lanes.slow = semaphore.NewWeighted(opts.MaxTotalDials), semaphore.NewWeighted(opts.MaxSlowDials)
	p.lanes.suspect = semaphore.NewWeighted(suspectCap(opts.MaxTotalDials))
	p.timers.init(&p.wg)
	return p, nil
}

// Get returns the client for key: a connected cluster's at once, with no
// lock, allocation or span. Otherwise Get starts a dial or joins the one in
// flight, and waits for it only if it is expected to end within the bound
// (see Options.MaxWait); else it returns ErrWaitTimeout at once with a
// RetryAfter of the expected end (with ctx marked by Requeued: the latest),
// the dial goes on, and an event tells when it ended. A Get whose ctx is
// done when it would wait returns ctx.Err() and keeps no state.
//
// Errors: ErrWaitTimeout (the dial goes on), ErrCircuitOpen, ErrDialFailed,
// ErrClosed, ErrRemoved, ErrInvalidOptions (Options.ForKey), or ctx's error.
func (p *Pool[K, C]) Get(ctx context.Context, key K) (C, error) {
	if v, ok := p.entries.Load(key); ok && !p.closed.Load() {
		e := v.(*entry[K, C])
		if c := e.client.Load(); c != nil {
			return *c, nil
		}
		if rej := e.reject.Load(); rej != nil { // no clock read; a span only in a recording trace
			p.rec.Reject(ctx, e.name, rej.state.String())
			var zero C
			return zero, rej
		}
	}
	return p.miss(ctx, key)
}

// miss is Get without a client or an instant rejection: the traced wait.
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

// entryOutcome is the outcome of a Get that got no entry (see Pool.entry).
func (p *Pool[K, C]) entryOutcome(ctx context.Context, err error) tracing.Outcome {
	switch {
	case p.closed.Load():
		return tracing.Closed
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return p.ctxOutcome(err)
	}
	return outcomeOf(err)
}

// track counts one more subscriber goroutine (one p.wg.Done each) unless
// the pool is closed.
func (p *Pool[K, C]) track() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return false
	}
	p.wg.Add(1)
	return true
}

// dialerAdd and dialerDone keep the set of dial goroutines Close waits for;
// dialerAdd adds nothing and reports false once the pool is closed.
func (p *Pool[K, C]) dialerAdd(c *call[K, C]) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return false
	}
	p.dialers[c] = struct{}{}
	return true
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

// Connect asks for key's cluster to be connected, without waiting: a dial
// starts if it is idle (no client, no dial in flight, breaker closed), also
// if the pool does not hold it (ForKey runs first, as for a Get). Nothing
// else: a cluster connected or dialing is left alone, and an open breaker's
// backoff stands. The dial's end is an event. Nothing after Close.
func (p *Pool[K, C]) Connect(key K) {
	for !p.closed.Load() {
		e, err := p.entry(context.Background(), key)
		if err != nil || !p.step(e, input[K, C]{kind: inConnect}).retry {
			return
		}
	}
}

// Redial replaces key's client, without waiting, when what it was made
// with is no longer right (credentials changed or were refused): the
// client goes to OnClose, a dial or probe in flight is canceled (never
// cached nor counted; its waiters wait for the new dial), and a new dial
// starts, or while the breaker is open its probe, the breaker's history
// kept. Events: Disconnected if a client was cached, Redialed, then the
// new dial's; never Removed. Nothing for a key the pool does not hold
// (Connect dials it), nor after Close.
func (p *Pool[K, C]) Redial(key K) { p.stepHeld(key, inRedial) }

// Probe brings key's probe forward, without waiting: while its breaker is
// open, the open period ends now and the half-open probe goes out (its
// history kept). Nothing for a closed breaker (Connect dials), a probe out,
// or a key the pool does not hold. For when something outside the pool
// says the cluster may work again (an operator asked).
func (p *Pool[K, C]) Probe(key K) { p.stepHeld(key, inProbe) }

// stepHeld steps key's entry, if the pool holds one, with kind.
func (p *Pool[K, C]) stepHeld(key K, kind inputKind) {
	for !p.closed.Load() {
		v, ok := p.entries.Load(key)
		if !ok || !p.step(v.(*entry[K, C]), input[K, C]{kind: kind}).retry {
			return
		}
	}
}

// Report feeds the outcome of using key's client (nil: success) into its
// breaker, classified by Breaker.IsFailure before any lock: a failure
// counts in a row (Breaker.ConsecutiveFailures, as a dial's) and by rate
// (Breaker.FailureRate); when the breaker opens, the client goes to
// OnClose. For a signal that the cluster as a whole is down (a failed
// health probe); one request's answer is ReportRequest's. Nothing for a
// key the pool does not hold or while the breaker is not closed.
func (p *Pool[K, C]) Report(key K, err error) {
	p.report(key, err, false)
}

// ReportRequest is Report for the outcome of one request on key's client,
// judged by rate only: a failure counts toward Breaker.FailureRate over
// Breaker.Window (breaker.RateFailure), neither toward nor against
// Breaker.ConsecutiveFailures; a success breaks a row. A cluster that
// fails some of its answers (one of three apiservers down behind its load
// balancer, a 5xx now and then) is judged by their share, not by three
// that happen to come in a row.
func (p *Pool[K, C]) ReportRequest(key K, err error) {
	p.report(key, err, true)
}

// report is Report, and ReportRequest if byRate.
func (p *Pool[K, C]) report(key K, err error, byRate bool) {
	if v, ok := p.entries.Load(key); ok && !p.closed.Load() {
		e := v.(*entry[K, C])
		o := p.classify(e.set, err)
		if byRate && o == breaker.Failure {
			o = breaker.RateFailure
		}
		p.step(e, input[K, C]{kind: inReport, o: o})
	}
}

// Remove forgets key, for a cluster that leaves: a dial in flight is
// canceled (its waiters get ErrRemoved), the client goes to OnClose
// (Disconnected), the breaker is reset, and Removed is sent. A later Get
// starts afresh (its dial may wait for the canceled one to return).
func (p *Pool[K, C]) Remove(key K) {
	if v, ok := p.entries.Load(key); ok {
		p.step(v.(*entry[K, C]), input[K, C]{kind: inRemove})
	}
}
