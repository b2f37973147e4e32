package pool

import (
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// ClusterState is one cluster's state in the pool, for status conditions
// and debugging.
type ClusterState struct {
	// Known is false if the pool holds nothing for the key; the other fields
	// are then zero.
	Known bool
	// Connected reports whether a client is cached.
	Connected bool
	// Dialing reports whether a dial (or the half-open probe) is in flight.
	Dialing bool
	// Breaker is the breaker's state.
	Breaker breaker.State
	// ConsecutiveFailures counts failed dials and reported errors in a row
	// while the breaker is closed.
	ConsecutiveFailures uint32
	// Opens is the number of open periods in a row (0 while closed).
	Opens uint32
	// NextProbe is when the pool will probe; zero unless the breaker is
	// open.
	NextProbe time.Time
	// LastProbe is when the pool last learned whether the cluster works:
	// a dial ended, or Report fed the breaker an outcome (see Report). It
	// is zero until then. Cluster API's ClusterCache counts connect
	// attempts and health checks the same way.
	LastProbe time.Time
	// LastProbeSuccess is when a dial last succeeded or Report last fed a
	// success; zero if never.
	LastProbeSuccess time.Time
	// ProbeFailures counts the failed probes (dials and reported failures)
	// since LastProbeSuccess. Unlike ConsecutiveFailures it goes on
	// counting while the breaker is open, and an Ignored outcome leaves it
	// as it is.
	ProbeFailures uint32
}

// State returns key's state.
func (p *Pool[K, C]) State(key K) ClusterState {
	v, ok := p.entries.Load(key)
	if !ok {
		return ClusterState{}
	}
	e := v.(*entry[K, C])
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ls.dead {
		return ClusterState{}
	}
	s := e.snapshot(time.Now())
	return ClusterState{
		Known:               true,
		Connected:           e.client.Load() != nil,
		Dialing:             e.ls.call != nil,
		Breaker:             s.State,
		ConsecutiveFailures: s.ConsecutiveFailures,
		Opens:               s.Opens,
		NextProbe:           s.OpenUntil,
		LastProbe:           unixTime(e.ls.probes.last),
		LastProbeSuccess:    unixTime(e.ls.probes.lastOK),
		ProbeFailures:       e.ls.probes.failures,
	}
}

// Peek returns key's cached client without dialing, waiting or recording
// anything: for health probes and status reporting.
func (p *Pool[K, C]) Peek(key K) (C, bool) {
	if v, ok := p.entries.Load(key); ok && !p.closed.Load() {
		if c := v.(*entry[K, C]).client.Load(); c != nil {
			return *c, true
		}
	}
	var zero C
	return zero, false
}

// Keys returns the keys the pool holds state for, in no particular order.
func (p *Pool[K, C]) Keys() []K {
	var keys []K
	p.entries.Range(func(k, v any) bool {
		e := v.(*entry[K, C])
		e.mu.Lock()
		if !e.ls.removed && !e.ls.dead {
			keys = append(keys, k.(K))
		}
		e.mu.Unlock()
		return true
	})
	return keys
}
