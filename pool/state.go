package pool

import (
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// ClusterState is one cluster's state in the pool, for status conditions
// and debugging.
type ClusterState struct {
	Known               bool          // false if the pool holds nothing for the key (all zero)
	Connected           bool          // a client is cached
	Dialing             bool          // a dial (or the half-open probe) is in flight
	Breaker             breaker.State // the breaker's state
	ConsecutiveFailures uint32        // failures in a row while closed (not ReportRequest's)
	// WindowRequests and WindowFailures are the outcomes and failures in
	// the closed breaker's rate window (breaker.Snapshot).
	WindowRequests, WindowFailures uint32
	Opens                          uint32    // open periods in a row (0 while closed)
	NextProbe                      time.Time // when the pool will probe; zero unless open
	// LastProbe is when the pool last learned whether the cluster works (a
	// dial ended, or Report fed an outcome, as ClusterCache counts connect
	// attempts and health checks); zero until then.
	LastProbe time.Time
	// LastProbeSuccess is the last such success; zero if never.
	LastProbeSuccess time.Time
	// ProbeFailures counts failed probes since LastProbeSuccess, also
	// while the breaker is open; an Ignored outcome leaves it.
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
		WindowRequests:      s.WindowRequests,
		WindowFailures:      s.WindowFailures,
		Opens:               s.Opens,
		NextProbe:           s.OpenUntil,
		LastProbe:           unixTime(e.ls.probes.last),
		LastProbeSuccess:    unixTime(e.ls.probes.lastOK),
		ProbeFailures:       e.ls.probes.failures,
	}
}

// Peek returns key's cached client without dialing, waiting or recording.
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
