package breaker

import (
	"errors"
	"sync"
	"time"
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
	OpenFor  time.Duration // the open period it starts; zero unless To is StateOpen
	At       time.Time
}

// Snapshot is the state of a Breaker at one instant.
type Snapshot struct {
	State               State
	ConsecutiveFailures uint32 // Failure outcomes in a row while closed
	// WindowRequests and WindowFailures are the outcomes and failures in
	// the closed breaker's rate window (zero with none: no failure since
	// the window was last dropped).
	WindowRequests, WindowFailures uint32
	// Opens is the number of open periods in a row since the breaker last
	// closed: 1 after the trip, 2 after the first failed probe, and so on.
	Opens     uint32
	OpenUntil time.Time // end of the current open period; zero unless open
}

// Breaker is a circuit breaker with a growing open period: a [Machine]
// behind a mutex, reading the clock; safe for concurrent use.
type Breaker struct {
	mu sync.Mutex // guards m; every call into gobreaker is made with it held
	m  Machine
}

// New returns a closed Breaker, or an error matching [ErrInvalidSettings]
// that names the first invalid field.
func New(s Settings) (*Breaker, error) {
	m, err := NewMachine(s)
	if err != nil {
		return nil, err
	}
	return &Breaker{m: *m}, nil
}

// Settings returns the settings in force, defaults applied.
func (b *Breaker) Settings() Settings { return b.m.s }

// Allow asks for permission for one request: always granted while closed;
// while open ErrOpen until the period is over, then exactly one ticket,
// the probe, which moves the breaker to half-open ([Ticket.Transition]);
// ErrOpen while the probe is out (a discarded one lets the next Allow be
// the probe).
func (b *Breaker) Allow() (Ticket, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t, err := b.m.Allow(time.Now())
	if err == nil {
		t.b = b
	}
	return t, err
}

// Expire ends an open breaker's period now, so that the next Allow is the
// probe: for an outside reason to retry early (an operator's request).
func (b *Breaker) Expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.m.Expire(time.Now())
}

// State returns the current state.
func (b *Breaker) State() State {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m.State(time.Now())
}

// Snapshot returns the current state with its counts.
func (b *Breaker) Snapshot() Snapshot {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.m.Snapshot(time.Now())
}
