package shard

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// EventType says how a cluster's ownership changed.
type EventType uint8

// The event types.
const (
	// Gained: this replica owns the cluster from Time on.
	Gained EventType = iota + 1
	// Lost: this replica does not own the cluster from Time on.
	Lost
)

// String returns "Gained" or "Lost".
func (t EventType) String() string {
	switch t {
	case Gained:
		return "Gained"
	case Lost:
		return "Lost"
	}
	return "EventType(?)"
}

// Event is one change of this replica's ownership of one cluster. Time is
// the instant Sharder.Owns changed for the key; for a Lost event caused by
// a missed renewal it is the fence instant, which may be a little earlier
// than the event is sent.
type Event struct {
	Type EventType
	Key  client.ObjectKey
	Time time.Time
}

// subscriber is one Subscribe call: an unbounded FIFO of events and the
// goroutine that hands them out. Ownership changes are few (at most two per
// cluster per membership change), so nothing is coalesced or dropped: a
// subscriber sees every change, in order.
type subscriber struct {
	mu    sync.Mutex
	queue []Event
	wake  chan struct{} // capacity 1: a pending wake-up
	out   chan Event
}

// push appends evs without blocking.
func (s *subscriber) push(evs []Event) {
	s.mu.Lock()
	s.queue = append(s.queue, evs...)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run hands out the queue until ctx is done, then closes out.
func (s *subscriber) run(ctx context.Context, unsubscribe func()) {
	defer close(s.out)
	defer unsubscribe()
	for {
		s.mu.Lock()
		batch := s.queue
		s.queue = nil
		s.mu.Unlock()
		for _, ev := range batch {
			select {
			case s.out <- ev:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		}
	}
}

// hub fans events out to subscribers.
type hub struct {
	mu   sync.Mutex
	subs map[*subscriber]struct{}
}

// subscribe adds a subscriber until ctx is done; see Sharder.Subscribe.
func (h *hub) subscribe(ctx context.Context) <-chan Event {
	s := &subscriber{wake: make(chan struct{}, 1), out: make(chan Event)}
	h.mu.Lock()
	if h.subs == nil {
		h.subs = map[*subscriber]struct{}{}
	}
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	go s.run(ctx, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	})
	return s.out
}

// publish queues evs for every subscriber.
func (h *hub) publish(evs []Event) {
	if len(evs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.push(evs)
	}
}
