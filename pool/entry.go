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
)

// entry is the pool's state for one cluster key (see core.go), changed only
// by step with mu held. client and reject are its lock-free views, read by
// the hit and the instant rejection. With mu held: client != nil implies
// reject == nil; reject != nil exactly while the breaker (ls.brk, the one
// owner of its state) is not closed, and carries the state it was made
// for.
type entry[K comparable, C any] struct {
	key  K
	name string       // Options.FormatKey(key)
	set  *keySettings // the key's settings, Options.ForKey applied (shared)

	client atomic.Pointer[C]     // the connected client, or nil
	reject atomic.Pointer[Error] // ErrCircuitOpen error of the open period, or nil

	mu sync.Mutex
	ls entryState[K, C] // guarded by mu

	probeTimer *versioned // armed with ls.probeVer by the shell; guarded by timers.mu
}

// entryState is everything of an entry that its mu guards.
type entryState[K comparable, C any] struct {
	brk *breaker.Machine // nil until the key's first failure; Remove drops it
	// call is the dial callers join, or nil. Other dials of the key may be
	// pending: canceled ones, one running when Report opened the breaker.
	call     *call[K, C]
	pending  int32  // dials of the key not yet settled, call included
	probeVer uint32 // version of the probe timer (setProbe)
	// sem: one permit per running dial of the key (MaxConcurrentDials),
	// from the first pending dial until none is left.
	sem      *semaphore.Weighted
	gen      uint64        // bumped by Remove and Redial: older dials never cache
	probeAt  int64         // when the probe is due (Unix ns; 0: none)
	lastTook time.Duration // the last uncanceled dial's duration (0: none)
	probes   probeLog      // the key's dials and reported outcomes, for State
	outbox   *[]Event[K]   // events not yet published while Pool.drain runs
	removed  bool          // Remove ran and nothing used the entry since
	dead     bool          // deleted from the map: a Get that finds it retries
}

// breakerState is the breaker's state as last applied, read without a
// lock: the rejection's, or closed.
func (e *entry[K, C]) breakerState() breaker.State {
	if rej := e.reject.Load(); rej != nil {
		return rej.state
	}
	return breaker.StateClosed
}

// call is one dial as the core records it. Its fields are set when the
// core makes it and never change, except ticket, answered and followers
// (entry.mu); client and err (set under entry.mu before done is closed,
// read after); the atomics; and slot, the lanes'.
type call[K comparable, C any] struct {
	e        *entry[K, C]
	gen      uint64
	sem      *semaphore.Weighted // the key's dial cap (entryState.sem)
	probe    bool                // the half-open probe
	suspect  bool                // probe, or the key failed its last dial or use
	done     chan struct{}       // closed once the waiters have their result
	launched chan struct{}       // closed once launch queued the call (or dropped it)

	ticket    breaker.Ticket // the breaker's permission for this dial
	answered  bool           // the waiters' result is decided, or they follow next
	followers []*call[K, C]  // calls Redial dropped, whose waiters get this one's result
	client    C
	err       error

	span    atomic.Pointer[trace.Span] // set by launch (nil before: a joiner may come first)
	next    atomic.Pointer[call[K, C]] // the dial that replaced this one (Redial)
	settled atomic.Bool                // finish took the call's end, once
	slot    slot[K, C]
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

// entry returns key's entry, creating it if needed. It fails when ForKey
// gives invalid settings for a new key (nothing is kept), when the pool is
// closed, and when ctx ends or MaxWait passes while another caller creates
// the key's entry: the first caller of a new key runs FormatKey and ForKey,
// with no lock, and those of the key that come meanwhile wait for its
// answer, the error included. Callers of other keys are not held up.
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

// create makes and stores key's entry for cr, whose place in p.creating it
// holds, and gives cr's waiters the answer. The entry is in p.entries
// before cr leaves p.creating: a caller who misses both finds it.
func (p *Pool[K, C]) create(key K, cr *creation[K, C]) (e *entry[K, C], err error) {
	defer func() {
		cr.e, cr.err = e, err
		p.creating.Delete(key)
		close(cr.done)
	}()
	if v, ok := p.entries.Load(key); ok { // made since our miss
		return v.(*entry[K, C]), nil
	}
	name := p.format(key)
	set, err := p.settingsFor(key, name)
	if err != nil {
		return nil, err
	}
	e = &entry[K, C]{key: key, name: name, set: set}
	if v, loaded := p.entries.LoadOrStore(key, e); loaded { // cannot happen while creations are coalesced
		return v.(*entry[K, C]), nil
	}
	p.rec.ClusterAdded(breaker.StateClosed.String())
	if p.closed.Load() { // Close may have swept the map before the store: nothing is left after it
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
