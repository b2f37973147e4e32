package breaker

import (
	"time"

	"github.com/sony/gobreaker/v2"
)

// Machine is the breaker's functional core: a [Breaker]'s whole state as a
// value, not safe for concurrent use (its owner serializes access, as the
// pool does under its entry's lock). Its own code takes no lock and reads
// no clock: every method takes now; the jitter is its only other input.
// The closed state's rate window is a gobreaker.TwoStepCircuitBreaker
// (window.go), whose calls take gobreaker's own mutex and age its buckets
// by time.Now(), which gobreaker reads itself: the one clock a Machine does
// not take, so now must be time.Now() (the pool's and Breaker's is; the
// tests run on virtual time, testing/synctest, where time.Now is the
// bubble's clock and every run is deterministic). Its tickets are reported
// with [Machine.Record] and [Machine.Discard] (their own methods do
// nothing).
type Machine struct {
	s     Settings // defaults applied
	state State    // as last changed (open past its period reads half-open)
	// cb is the closed state's rate window (window.go): made on the first
	// failure, dropped when it holds none or the machine opens.
	cb        *gobreaker.TwoStepCircuitBreaker[struct{}]
	row       uint32        // Failure outcomes in a row while closed
	gen       uint32        // changes of state: older tickets are stale
	opens     uint32        // open periods in a row; 0 while closed
	probeOut  bool          // half-open: the probe is granted and not reported
	openFor   time.Duration // length of the last open period; 0 while closed
	openUntil time.Time     // end of the current open period
}

// NewMachine returns a closed Machine, or an error matching
// [ErrInvalidSettings] that names the first invalid field.
func NewMachine(s Settings) (*Machine, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &Machine{s: s.withDefaults()}, nil
}

// Settings returns the settings in force, defaults applied.
func (m *Machine) Settings() Settings { return m.s }

// Allow is [Breaker.Allow] at now.
func (m *Machine) Allow(now time.Time) (Ticket, error) {
	switch {
	case m.state == StateClosed:
		return Ticket{granted: true, gen: m.gen}, nil
	case m.probeOut, now.Before(m.openUntil):
		return Ticket{}, ErrOpen
	}
	t := Ticket{granted: true, probe: true}
	if m.state == StateOpen {
		m.state = StateHalfOpen
		m.gen++
		t.halfOpenAt = now
	}
	m.probeOut = true
	t.gen = m.gen
	return t, nil
}

// Record is [Ticket.Record] of t, at now.
func (m *Machine) Record(t Ticket, o Outcome, now time.Time) (Transition, bool) {
	if !t.granted || t.gen != m.gen {
		return Transition{}, false // not granted, or before the last change of state
	}
	if o == Trip && m.s.DisableTrip {
		o = Failure
	}
	switch {
	case t.probe && o == Success:
		return m.close(now), true
	case t.probe, o == Trip:
		return m.open(now, o == Trip), true
	case o == Failure, o == RateFailure:
		return m.countFailure(now, o == Failure)
	case o == Success:
		m.countSuccess()
	}
	return Transition{}, false
}

// Discard is [Ticket.Discard] of t.
func (m *Machine) Discard(t Ticket) {
	if t.granted && t.probe && t.gen == m.gen {
		m.probeOut = false
	}
}

// Expire is [Breaker.Expire] at now.
func (m *Machine) Expire(now time.Time) {
	if m.state == StateOpen && now.Before(m.openUntil) {
		m.openUntil = now
	}
}

// State is [Breaker.State] at now: an open machine whose period is over is
// half-open (the next Allow is the probe).
func (m *Machine) State(now time.Time) State {
	if m.state == StateOpen && !now.Before(m.openUntil) {
		return StateHalfOpen
	}
	return m.state
}

// Snapshot is [Breaker.Snapshot] at now.
func (m *Machine) Snapshot(now time.Time) Snapshot {
	s := Snapshot{State: m.State(now), Opens: m.opens}
	switch {
	case s.State == StateOpen:
		s.OpenUntil = m.openUntil
	case s.State == StateClosed:
		s.ConsecutiveFailures = m.row
		s.WindowRequests, s.WindowFailures = windowCounts(m.cb)
	}
	return s
}

// open opens the machine for its next period: OpenTimeout·2^(n-1) for the
// n-th period in a row (jittered, capped), MaxOpenTimeout after a Trip, and
// never shorter than the period before it until the machine closes.
func (m *Machine) open(now time.Time, trip bool) Transition {
	from := m.state
	m.opens++
	base := m.s.OpenTimeout
	if trip { // no quick retry of a request that hung
		base = m.s.MaxOpenTimeout
	}
	d := max(openPeriod(m.opens, base, m.s.MaxOpenTimeout, m.s.Jitter), m.openFor)
	m.state, m.cb, m.row, m.probeOut, m.gen = StateOpen, nil, 0, false, m.gen+1
	m.openFor, m.openUntil = d, now.Add(d)
	return Transition{From: from, To: StateOpen, OpenFor: d, At: now}
}

// close closes the machine after a successful probe.
func (m *Machine) close(now time.Time) Transition {
	from := m.state
	m.state, m.probeOut, m.gen = StateClosed, false, m.gen+1
	m.opens, m.openFor, m.openUntil = 0, 0, time.Time{}
	return Transition{From: from, To: StateClosed, At: now}
}
