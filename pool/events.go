package pool

import (
	"context"
	"sync"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// EventType says what happened to a cluster.
type EventType uint8

// The event types.
const (
	// Connected: a client was cached (a dial or a probe succeeded),
	// whether or not anyone was still waiting for it.
	Connected EventType = iota + 1
	// Disconnected: a cached client left the pool (breaker opened, Remove).
	Disconnected
	// BreakerOpened: the breaker opened, or re-opened after a failed probe.
	BreakerOpened
	// BreakerHalfOpen: the pool sent the half-open probe.
	BreakerHalfOpen
	// BreakerClosed: a probe succeeded and the breaker closed.
	BreakerClosed
	// Removed: Remove forgot the cluster (not connected, breaker reset).
	Removed
	// DialFailed: a dial failed and the breaker stayed closed (had it
	// opened, BreakerOpened says so): Breaker is always closed in it. A
	// dial that was in flight when Report opened the breaker, and then
	// fails, sends no event: the breaker is open (or half-open, its probe
	// out), BreakerOpened was sent when it opened, and the probe's outcome
	// will be sent (BreakerClosed or BreakerOpened). With Connected and
	// BreakerOpened it makes every end of a dial an event, so that callers
	// sent away with ErrWaitTimeout while it ran are brought back by it,
	// whatever its outcome, before their RetryAfter (those of a dial that
	// outlived the breaker's opening were sent away before it opened, and
	// BreakerOpened brings them back).
	DialFailed
)

var eventNames = [...]string{"", "Connected", "Disconnected", "BreakerOpened", "BreakerHalfOpen", "BreakerClosed", "Removed", "DialFailed"}

// String returns the type's name, such as "Connected".
func (t EventType) String() string {
	if int(t) < len(eventNames) && t != 0 {
		return eventNames[t]
	}
	return "EventType(?)"
}

// Event is a change of one cluster's state. Connected and Breaker are the
// cluster's state right after the change, so the latest event of a key
// tells its current state even when earlier ones were coalesced away.
type Event[K comparable] struct {
	Type EventType
	Key  K
	Time time.Time
	// Connected reports whether a client is cached after the event.
	Connected bool
	// Breaker is the breaker's state after the event.
	Breaker breaker.State
}

// Subscribe returns a channel of the pool's events from now on. The channel
// is closed when ctx is done or the pool is closed.
//
// Publishing never blocks the pool. Events wait in a queue per subscriber
// that holds at most one event per key: a newer event for a key replaces the
// one not yet received, keeping its place. A slow subscriber therefore loses
// intermediate events of a key but always receives the key's latest one, so
// the event's Connected and Breaker fields give the key's current state,
// and it never misses that a key changed. Example: Disconnected followed
// at once by BreakerOpened may arrive as BreakerOpened with Connected
// false. The queue's size is bounded by the number of keys.
func (p *Pool[K, C]) Subscribe(ctx context.Context) <-chan Event[K] { return p.subscribe(ctx) }

// SubscribeRequeue is Subscribe for a subscriber that enqueues a cluster's
// callers again on each of its events, as kube.Source does for a
// controller. It is kept for compatibility and behaves as Subscribe: the
// event-driven requeue is chosen per call, by the callers it brings back,
// with Requeued(ctx); an open subscription no longer changes how other
// callers' Gets wait.
func (p *Pool[K, C]) SubscribeRequeue(ctx context.Context) <-chan Event[K] {
	return p.Subscribe(ctx)
}

func (p *Pool[K, C]) subscribe(ctx context.Context) <-chan Event[K] {
	s := &subscriber[K]{
		pending: map[K]Event[K]{},
		wake:    make(chan struct{}, 1),
		out:     make(chan Event[K]),
	}
	if !p.track() {
		close(s.out)
		return s.out
	}
	p.mu.Lock()
	p.subs[s] = struct{}{}
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		defer close(s.out)
		defer func() {
			p.mu.Lock()
			delete(p.subs, s)
			p.mu.Unlock()
		}()
		s.run(ctx, p.ctx.Done())
	}()
	return s.out
}

// publish hands ev to every subscriber without blocking.
func (p *Pool[K, C]) publish(ev Event[K]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.subs {
		s.push(ev)
	}
}

// subscriber is one Subscribe call: a coalescing queue and the goroutine
// that drains it into out.
type subscriber[K comparable] struct {
	mu      sync.Mutex
	pending map[K]Event[K] // the latest unsent event of each key in order
	order   []K            // keys with a pending event, oldest first
	wake    chan struct{}  // capacity 1: "pending is not empty"
	out     chan Event[K]
}

func (s *subscriber[K]) push(ev Event[K]) {
	s.mu.Lock()
	if _, ok := s.pending[ev.Key]; !ok {
		s.order = append(s.order, ev.Key)
	}
	s.pending[ev.Key] = ev
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *subscriber[K]) pop() (Event[K], bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) == 0 {
		return Event[K]{}, false
	}
	k := s.order[0]
	var zero K
	s.order[0] = zero
	s.order = s.order[1:]
	ev := s.pending[k]
	delete(s.pending, k)
	return ev, true
}

func (s *subscriber[K]) run(ctx context.Context, closing <-chan struct{}) {
	for {
		ev, ok := s.pop()
		if !ok {
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				return
			case <-closing:
				return
			}
		}
		select {
		case s.out <- ev:
		case <-ctx.Done():
			return
		case <-closing:
			return
		}
	}
}
