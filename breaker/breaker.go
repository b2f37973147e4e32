package breaker

import (
	"errors"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// State is the state of a [Breaker].
type State int8

// The states of a Breaker. The zero value is StateClosed.
const (
	StateClosed State = iota
	StateHalfOpen
	StateOpen
)

// String returns "closed", "half-open" or "open".
func (s State) String() string {
	switch s {
	case StateClosed:
		return "closed"
	case StateHalfOpen:
		return "half-open"
	case StateOpen:
		return "open"
	}
	return "unknown"
}

// ErrOpen is returned by [Breaker.Allow] while the breaker is open, and while
// it is half-open with its one probe already out.
var ErrOpen = errors.New("breaker: circuit open")

// errFailure is the one error gobreaker is ever given: no user callback
// runs under its lock or the Breaker's.
var errFailure = errors.New("breaker: failure")

// Transition is one change of state, as returned by the method that caused it.
type Transition struct {
	From, To State
	// OpenFor is the length of the open period that starts with this
	// transition; zero unless To is StateOpen.
	OpenFor time.Duration
	// At is when the transition happened.
	At time.Time
}

// Snapshot is the state of a Breaker at one instant.
type Snapshot struct {
	State State
	// ConsecutiveFailures counts failures in a row while closed; zero
	// otherwise.
	ConsecutiveFailures uint32
	// Opens is the number of open periods in a row since the breaker was last
	// closed: 1 after the trip, 2 after the first failed probe, and so on.
	Opens uint32
	// OpenUntil is when the current open period ends; zero unless open.
	OpenUntil time.Time
}

// Breaker is a circuit breaker with a growing open period. It is safe for
// concurrent use. Create it with [New].
type Breaker struct {
	s Settings // defaults applied

	mu sync.Mutex // guards everything below and every call into cb
	// state is the breaker's state as last changed; an open breaker whose
	// period is over reads as half-open (stateLocked).
	state State
	// cb counts the failures of the closed state: made on the first one,
	// dropped when the count is back to zero or the breaker opens.
	cb *gobreaker.TwoStepCircuitBreaker[struct{}]
	// gen counts changes of state: a ticket granted before the last one is
	// stale.
	gen       uint32
	opens     uint32        // open periods in a row; 0 while closed
	probeOut  bool          // half-open: the probe is granted and not reported
	openFor   time.Duration // length of the last open period; 0 while closed
	openUntil time.Time     // end of the current open period
}

// New returns a closed Breaker, or an error matching [ErrInvalidSettings]
// that names the first invalid field.
func New(s Settings) (*Breaker, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &Breaker{s: s.withDefaults()}, nil
}

// counter returns the gobreaker that counts the closed state's failures,
// making it if there is none. Needs b.mu.
func (b *Breaker) counter() *gobreaker.TwoStepCircuitBreaker[struct{}] {
	if b.cb == nil {
		threshold := b.s.ConsecutiveFailures
		b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
			// Runs under gobreaker's mutex inside a call made with b.mu
			// held; it reads only its own argument.
			ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= threshold },
		})
	}
	return b.cb
}

// Settings returns the settings in force, defaults applied.
func (b *Breaker) Settings() Settings { return b.s }

// Allow asks for permission for one request. While closed it always grants
// it. While open it returns ErrOpen until the open period is over; then it
// grants exactly one ticket, the probe, and the first probe of an open
// period moves the breaker to half-open (see [Ticket.Transition]). While
// the probe is out it returns ErrOpen; a discarded probe lets the next
// Allow be the probe.
func (b *Breaker) Allow() (Ticket, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	switch {
	case b.state == StateClosed:
		return Ticket{b: b, gen: b.gen}, nil
	case b.probeOut, now.Before(b.openUntil):
		return Ticket{}, ErrOpen
	}
	t := Ticket{b: b, probe: true}
	if b.state == StateOpen {
		b.state = StateHalfOpen
		b.gen++
		t.halfOpenAt = now
	}
	b.probeOut = true
	t.gen = b.gen
	return t, nil
}

// Expire ends the current open period now, so that the next Allow is the
// half-open probe. It does nothing unless the breaker is open. It is for an
// outside reason to retry early (new credentials, an operator's request).
func (b *Breaker) Expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := time.Now(); b.state == StateOpen && now.Before(b.openUntil) {
		b.openUntil = now
	}
}

// State returns the current state.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stateLocked(time.Now())
}

// Snapshot returns the current state with its counts.
func (b *Breaker) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := Snapshot{State: b.stateLocked(time.Now()), Opens: b.opens}
	switch {
	case s.State == StateOpen:
		s.OpenUntil = b.openUntil
	case s.State == StateClosed && b.cb != nil:
		s.ConsecutiveFailures = b.cb.Counts().ConsecutiveFailures
	}
	return s
}

// stateLocked is the state at now: an open breaker whose period is over is
// half-open (the next Allow is the probe). Needs b.mu.
func (b *Breaker) stateLocked(now time.Time) State {
	if b.state == StateOpen && !now.Before(b.openUntil) {
		return StateHalfOpen
	}
	return b.state
}
