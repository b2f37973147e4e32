package pool

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"

	"github.com/clusterpool/clusterpool/breaker"
)

// entry is the pool's state for one cluster key.
//
// client and reject are read without e.mu (the hit and the rejection are
// lock-free) and written only with e.mu held. Invariants, with e.mu held:
// client != nil implies reject == nil; reject != nil exactly while the
// breaker is not closed; call != nil while a dial callers may join is in
// flight.
type entry[K comparable, C any] struct {
	key  K
	name string // Options.FormatKey(key)
	sem  *semaphore.Weighted

	client atomic.Pointer[C]     // the connected client, or nil
	reject atomic.Pointer[Error] // ErrCircuitOpen error of the open period, or nil
	state  atomic.Int32          // breaker.State as last transitioned, for telemetry

	mu      sync.Mutex
	brk     *breaker.Breaker // replaced by Remove
	call    *call[C]         // the dial callers join, or nil
	gen     uint64           // bumped by Remove; older dials never cache
	running int              // dials holding or queued for sem
	probe   *time.Timer      // the scheduled half-open probe, or nil
	removed bool             // Remove ran and no Get used the entry since
	dead    bool             // deleted from the map: a Get that finds it retries
}

func (e *entry[K, C]) breakerState() breaker.State { return breaker.State(e.state.Load()) }

// entry returns key's entry, creating it if needed.
func (p *Pool[K, C]) entry(key K) *entry[K, C] {
	if v, ok := p.entries.Load(key); ok {
		return v.(*entry[K, C])
	}
	e := &entry[K, C]{
		key:  key,
		name: p.opts.FormatKey(key),
		sem:  semaphore.NewWeighted(p.opts.MaxConcurrentDials),
		brk:  p.newBreaker(),
	}
	v, loaded := p.entries.LoadOrStore(key, e)
	if !loaded {
		p.rec.ClusterAdded(breaker.StateClosed.String())
	}
	return v.(*entry[K, C])
}

// call is one dial and its result. done is closed once the result is set;
// client and err are read only after that.
type call[C any] struct {
	done   chan struct{}
	client C
	err    error
	ended  bool // done is closed (guarded by the entry's mu)

	gen      uint64
	ctx      context.Context // the pool's context, with the dial span; canceled by Remove and Close
	cancel   context.CancelFunc
	span     trace.Span
	deadline atomic.Int64 // UnixNano when the dialer's deadline passes; 0 while queued

	// suspect: the cluster failed its last dial or use, or this is the
	// half-open probe; the dial takes a permit of Pool.suspect too.
	suspect bool
	// queued is closed when the dial has to wait for a pool-wide permit;
	// waiters stop waiting for it then.
	queued chan struct{}
}

// markQueued wakes the call's waiters: it cannot start soon. Called only by
// the dial's goroutine, so the check and the close do not race.
func (c *call[C]) markQueued() {
	select {
	case <-c.queued:
	default:
		close(c.queued)
	}
}

// retryAt is when the call is sure to have ended: its deadline once the
// dialer runs, a whole DialTimeout from now while it waits for a permit.
func (c *call[C]) retryAt(dialTimeout time.Duration) time.Time {
	if d := c.deadline.Load(); d != 0 {
		return time.Unix(0, d)
	}
	return time.Now().Add(dialTimeout)
}

// endLocked publishes the call's result and wakes its waiters, once.
func (c *call[C]) endLocked(client C, err error) {
	if c.ended {
		return
	}
	c.ended = true
	c.client, c.err = client, err
	close(c.done)
}
