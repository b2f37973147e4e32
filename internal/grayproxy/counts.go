package grayproxy

import "sync/atomic"

// Counts counts the requests the proxy received in one mode (the mode in
// force when each arrived).
type Counts struct {
	// Passed is how many the proxy forwarded to the apiserver: they
	// reached it, whatever it answered (Slow's too).
	Passed uint64
	// Faulted is how many the proxy answered itself with a fault (500 or
	// 503 in Errors, 429 in Throttled); they never reached the apiserver.
	Faulted uint64
	// Slowed is how many of the Passed had their answer held (Slow); a
	// request that failed before the apiserver answered is not.
	Slowed uint64
	// Refused is how many the proxy refused to forward: a client
	// certificate it could not verify, or one with impersonation headers.
	Refused uint64
}

// Received is how many requests the proxy received: Passed, Faulted and
// Refused.
func (c Counts) Received() uint64 { return c.Passed + c.Faulted + c.Refused }

// modeCounters are one mode's Counts, counted.
type modeCounters struct{ passed, faulted, slowed, refused atomic.Uint64 }

// counters are every mode's.
type counters [numModes]modeCounters

func (c *counters) of(m Mode) *modeCounters { return &c[m] }

func (m *modeCounters) load() Counts {
	return Counts{Passed: m.passed.Load(), Faulted: m.faulted.Load(), Slowed: m.slowed.Load(), Refused: m.refused.Load()}
}

// Counts returns the counts of the requests received in mode m (zero
// for a mode that does not exist).
func (p *Proxy) Counts(m Mode) Counts {
	if m < 0 || m >= numModes {
		return Counts{}
	}
	return p.counts.of(m).load()
}

// Total returns the counts of every request the proxy received.
func (p *Proxy) Total() Counts {
	var t Counts
	for m := range numModes {
		c := p.Counts(m)
		t.Passed += c.Passed
		t.Faulted += c.Faulted
		t.Slowed += c.Slowed
		t.Refused += c.Refused
	}
	return t
}
