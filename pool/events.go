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
	// Connected: a client was cached (a dial or probe succeeded).
	Connected EventType = iota + 1
	// Disconnected: a cached client left the pool (breaker opened, Remove,
	// Redial).
	Disconnected
	// BreakerOpened: the breaker opened, or re-opened after a failed probe.
	BreakerOpened
	// BreakerHalfOpen: the pool sent the half-open probe.
	BreakerHalfOpen
	// BreakerClosed: a probe succeeded and the breaker closed.
	BreakerClosed
	// Removed: Remove forgot the cluster (not connected, breaker reset).
	Removed
	// DialFailed: a dial failed and the breaker stayed closed (Breaker is
	// always closed in it). A dial in flight when Report opened the breaker
	// sends none when it fails: BreakerOpened was sent then. With Connected,
	// BreakerOpened and Redialed, every end of a dial is an event, so that
	// callers sent away with ErrWaitTimeout while it ran are brought back
	// before their RetryAfter.
	DialFailed
	// Redialed: Redial dropped the cluster's client (Disconnected came
	// first) and its dial or probe in flight, if any; a new dial or probe
	// is under way, whose end is an event too.
	Redialed
)

var eventNames = [...]string{"", "Connected", "Disconnected", "BreakerOpened", "BreakerHalfOpen", "BreakerClosed", "Removed",
	"DialFailed", "Redialed"}

// String returns the type's name, such as "Connected".
func (t EventType) String() string {
	if int(t) < len(eventNames) && t != 0 {
		return eventNames[t]
	}
	return "EventType(?)"
}

// Event is a change of one cluster's state. Connected and Breaker are its
// state right after the change: a key's latest event tells its state even
// when earlier ones were coalesced away.
type Event[K comparable] struct {
	Type      EventType
	Key       K
	Time      time.Time
	Connected bool          // a client is cached after the event
	Breaker   breaker.State // the breaker's state after the event
}

// Subscribe returns a channel of the pool's events from now on, closed when
// ctx is done or the pool is closed. Publishing never blocks: a queue per
// subscriber holds one event per key, a newer one replacing the one not
// yet received in its place, so a slow subscriber loses intermediate events
// of a key (Disconnected then BreakerOpened may arrive as BreakerOpened with
// Connected false) but always receives its latest one.
func (p *Pool[K, C]) Subscribe(ctx context.Context) <-chan Event[K] {
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

// SubscribeRequeue is Subscribe, kept for compatibility: the event-driven
// requeue is chosen per call, with Requeued(ctx).
func (p *Pool[K, C]) SubscribeRequeue(ctx context.Context) <-chan Event[K] { return p.Subscribe(ctx) }

// publish hands ev to every subscriber without blocking.
func (p *Pool[K, C]) publish(ev Event[K]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.subs {
		s.push(ev)
	}
}

// subscriber is one Subscribe call: a coalescing queue drained into out.
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

// run sends the queued events on out until ctx is done or closing closed.
func (s *subscriber[K]) run(ctx context.Context, closing <-chan struct{}) {
	for {
		ev, ok := s.pop()
		out, wake := s.out, (<-chan struct{})(nil)
		if !ok { // nothing to send: wait for a push
			out, wake = nil, s.wake
		}
		select {
		case out <- ev:
		case <-wake:
		case <-ctx.Done():
			return
		case <-closing:
			return
		}
	}
}
