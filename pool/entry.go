package pool

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"

	"github.com/clusterpool/clusterpool/breaker"
)

// entry is the pool's state for one cluster key: its functional core's
// state (see core.go), changed only by step with mu held.
//
// client and reject are the lock-free views of the state (the hit and the
// instant rejection read them without mu); step writes them. Invariants,
// with mu held: client != nil implies reject == nil; reject != nil exactly
// while the breaker is not closed, and it carries the state it was made
// for: the breaker's state lives in the breaker (ls.brk), and reject is the
// one lock-free view of it.
type entry[K comparable, C any] struct {
	key  K
	name string       // Options.FormatKey(key)
	set  *keySettings // the key's settings, Options.ForKey applied (shared)

	client atomic.Pointer[C]     // the connected client, or nil
	reject atomic.Pointer[Error] // ErrCircuitOpen error of the open period, or nil

	mu sync.Mutex
	ls entryState[K, C] // guarded by mu

	probeTimer *slot // armed by the shell with ls.probeVer (nil until then); guarded by timers.mu
}

// entryState is everything of an entry that its mu guards.
type entryState[K comparable, C any] struct {
	brk *breaker.Machine // nil until the key's first failure; Remove drops it
	// call is the dial callers join (queued or running), or nil. Other
	// dials of the key may still be pending: one canceled by Remove, or
	// one that was running when Report opened the breaker.
	call *call[K, C]
	// pending counts dials of the key not yet settled, call included.
	pending int32
	// probeVer is the version of the probe timer that fires the probe
	// (setProbe; it wraps after 2³² changes of one key's probe).
	probeVer uint32
	// sem holds one permit per running dial of the key
	// (MaxConcurrentDials): made for the first pending dial, dropped when
	// none is left (each call keeps its own pointer for the lanes).
	sem *semaphore.Weighted
	gen uint64 // bumped by Remove; older dials never cache
	// probeAt is when the half-open probe is due (Unix nanoseconds; 0:
	// none scheduled).
	probeAt int64
	// lastTook is how long the key's last dial took, whatever its outcome
	// (0: none yet; a canceled dial does not count).
	lastTook time.Duration
	probes   probeLog // the key's dials and reported outcomes, for State
	// outbox holds events not yet published while a goroutine publishes
	// them (Pool.drain); nil otherwise.
	outbox  *[]Event[K]
	removed bool // Remove ran and nothing used the entry since
	dead    bool // deleted from the map: a Get that finds it retries
}

// breakerState is the breaker's state as the pool last applied it, read
// without a lock (for telemetry and events): the state the rejection was
// made for, closed if there is none.
func (e *entry[K, C]) breakerState() breaker.State {
	if rej := e.reject.Load(); rej != nil {
		return rej.state
	}
	return breaker.StateClosed
}

// lane is where a dial stands in the pool's lanes.
type lane uint8

const (
	laneNone   lane = iota // not submitted yet, or released
	laneQueued             // waiting in the queue for a slot
	laneNormal             // running in the normal lane (MaxTotalDials)
	laneSlow               // running, moved to the slow lane (MaxSlowDials)
)

// call is one dial and its result. done is closed once client and err are
// set; they are read only after that.
type call[K comparable, C any] struct {
	e      *entry[K, C]
	done   chan struct{}
	client C
	err    error

	gen     uint64
	sem     *semaphore.Weighted // the key's dial cap (entryState.sem)
	probe   bool                // the half-open probe
	suspect bool                // probe, or the key failed its last dial or use
	ticket  breaker.Ticket      // the breaker's permission for this dial
	// span is the dial's span, set by launch before the call is queued
	// (nil until then: a joiner may see the call first).
	span atomic.Pointer[trace.Span]
	// launched is closed once launch has queued the call (or dropped
	// it): a joiner that comes before waits for it, within its bound.
	launched chan struct{}
	// rejection is the entry's half-open rejection for this probe: set by
	// entry.apply (e.mu) before the call is submitted, then read and
	// replaced under lanes.mu only (refineLocked).
	rejection *Error
	seq       uint64 // submission order, for FIFO across the queues

	started  atomic.Int64 // UnixNano when the dialer was called; 0 while queued
	deadline atomic.Int64 // UnixNano of the enforced DialTimeout; 0 while queued

	settled atomic.Bool // finish took the call's end, once
	// answered: its waiters have their result (done is closed under the
	// entry's mu, maybe before the call is settled: Remove wakes waiters
	// at once). Guarded by the entry's mu.
	answered bool

	// Guarded by the pool's lanes.mu. ctx is made when the dial starts (a
	// queued dial has none: thousands of children of the pool's context
	// would contend on its lock); the dial's goroutine reads it after
	// that.
	lane     lane
	elem     *list.Element // in the queue or the running list
	expiry   *timer        // enforces the deadline; nil unless running
	ctx      context.Context
	cancel   context.CancelFunc // canceled by Remove and Close
	canceled bool               // Remove or Close canceled the dial
}

// spanOrNil is c's span, or nil (for a nil c, or before launch).
func (c *call[K, C]) spanOrNil() trace.Span {
	if c == nil {
		return nil
	}
	if s := c.span.Load(); s != nil {
		return *s
	}
	return nil
}

// entry returns key's entry, creating it if needed. It fails when
// Options.ForKey gives invalid settings for a new key (nothing is kept
// then), when the pool is closed, and when ctx ends or MaxWait passes while
// another caller creates the key's entry.
//
// ForKey is called once per entry: the first caller of a new key runs it
// (and FormatKey), without any lock, and callers of the same key that come
// meanwhile wait for its answer, the error included, instead of calling it
// again. Callers of other keys are not held up.
func (p *Pool[K, C]) entry(ctx context.Context, key K) (*entry[K, C], error) {
	if v, ok := p.entries.Load(key); ok {
		return v.(*entry[K, C]), nil
	}
	mine := &creation[K, C]{done: make(chan struct{})}
	v, loaded := p.creating.LoadOrStore(key, mine)
	if !loaded {
		return p.create(key, mine)
	}
	return p.awaitCreation(ctx, key, v.(*creation[K, C]))
}

// awaitCreation waits for another caller's creation of key's entry, at
// most MaxWait or until ctx ends (ErrWaitTimeout, wrapping ctx's deadline
// if that was the bound; a canceled ctx's error as it is) or the pool
// closes.
func (p *Pool[K, C]) awaitCreation(ctx context.Context, key K, cr *creation[K, C]) (*entry[K, C], error) {
	timer := time.NewTimer(p.opts.MaxWait)
	defer timer.Stop()
	var cause error
	select {
	case <-cr.done:
		return cr.e, cr.err
	case <-ctx.Done():
		if cause = ctx.Err(); !errors.Is(cause, context.DeadlineExceeded) {
			return nil, cause
		}
	case <-timer.C:
	case <-p.ctx.Done():
		return nil, &Error{Kind: ErrClosed, Cluster: p.format(key)}
	}
	return nil, &Error{Kind: ErrWaitTimeout, Cluster: p.format(key), Cause: cause, RetryAt: time.Now().Add(p.opts.MaxWait)}
}

// creation is a new entry being made by the first caller of its key; the
// others wait for done, then read e and err.
type creation[K comparable, C any] struct {
	done chan struct{}
	e    *entry[K, C]
	err  error
}

// create makes key's entry for cr, whose slot in p.creating it holds, and
// publishes the answer to cr's waiters. The entry is in p.entries before
// cr leaves p.creating, so that a caller who misses both finds it.
func (p *Pool[K, C]) create(key K, cr *creation[K, C]) (*entry[K, C], error) {
	defer func() {
		p.creating.Delete(key)
		close(cr.done)
	}()
	if v, ok := p.entries.Load(key); ok { // made since our miss
		cr.e = v.(*entry[K, C])
		return cr.e, nil
	}
	cr.e, cr.err = p.newEntry(key)
	return cr.e, cr.err
}

// newEntry makes key's entry and stores it, running FormatKey and ForKey.
func (p *Pool[K, C]) newEntry(key K) (*entry[K, C], error) {
	name := p.format(key)
	set, err := p.settingsFor(key, name)
	if err != nil {
		return nil, err
	}
	e := &entry[K, C]{key: key, name: name, set: set}
	v, loaded := p.entries.LoadOrStore(key, e)
	if loaded { // cannot happen while creations are coalesced; harmless
		return v.(*entry[K, C]), nil
	}
	p.rec.ClusterAdded(breaker.StateClosed.String())
	if p.closed.Load() {
		// Close may have swept the map before this store: take the entry
		// out again, so that nothing is left behind after Close returns.
		p.step(e, input[K, C]{kind: inClose})
		return nil, &Error{Kind: ErrClosed, Cluster: name}
	}
	return e, nil
}

// ended reports whether the call's result is published.
func (c *call[K, C]) ended() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
