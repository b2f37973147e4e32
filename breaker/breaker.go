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

// errDiscard is the outcome a discarded or ignored ticket reports; gobreaker
// excludes it. errFailure is the outcome of a failure. Only these two errors
// and nil ever reach gobreaker, so no user callback runs under its lock or
// the Breaker's.
var (
	errDiscard = errors.New("breaker: outcome discarded")
	errFailure = errors.New("breaker: failure")
)

// Outcome is a classified result of one request, for [Ticket.Record].
type Outcome int8

// The outcomes.
const (
	// Success resets the failure count (and closes a half-open breaker).
	Success Outcome = iota
	// Failure counts toward opening (and re-opens a half-open breaker).
	Failure
	// Ignored counts as neither, except for the half-open probe, which
	// must end in a decision: an ignored probe outcome is a Failure.
	Ignored
	// Trip is a Failure that opens a closed breaker at once, whatever the
	// count, for MaxOpenTimeout: a failure so costly that repeating it soon
	// helps nobody, such as a dial that hung until its deadline. Every
	// later open period stays at MaxOpenTimeout until the breaker closes
	// (periods never shrink). With Settings.DisableTrip it is a plain
	// Failure.
	Trip
)

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
	// ConsecutiveFailures counts failures in a row while closed. gobreaker
	// clears it on every change of state.
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

	mu        sync.Mutex // guards everything below and every call into cb
	cb        *gobreaker.TwoStepCircuitBreaker[struct{}]
	opens     uint32        // open periods in a row
	openFor   time.Duration // length of the last open period; 0 while closed
	openUntil time.Time     // end of the current open period
	openedAt  time.Time     // start of the current open period
	hookTo    State         // last state gobreaker reported through OnStateChange
	hooked    bool          // OnStateChange ran during the current call
	reported  State         // state most recently returned in a Transition
	trip      bool          // the outcome being recorded is a Trip
}

// New returns a closed Breaker, or an error matching [ErrInvalidSettings]
// that names the first invalid field.
func New(s Settings) (*Breaker, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	b := &Breaker{s: s.withDefaults()}
	threshold := b.s.ConsecutiveFailures
	b.cb = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		MaxRequests: 1,
		// The open period is this package's: gobreaker may go half-open at
		// once, and is not asked until the period is over.
		Timeout: time.Nanosecond,
		// Runs inside a call made with b.mu held, like OnStateChange.
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return b.trip || c.ConsecutiveFailures >= threshold
		},
		IsExcluded: func(err error) bool { return err == errDiscard },
		// Runs under gobreaker's mutex, inside a call made with b.mu held:
		// record only, never call back into gobreaker.
		OnStateChange: func(_ string, _, to gobreaker.State) {
			b.hooked, b.hookTo = true, fromGobreaker(to)
		},
	})
	return b, nil
}

func fromGobreaker(s gobreaker.State) State {
	switch s {
	case gobreaker.StateOpen:
		return StateOpen
	case gobreaker.StateHalfOpen:
		return StateHalfOpen
	}
	return StateClosed
}

// Settings returns the settings in force, defaults applied.
func (b *Breaker) Settings() Settings { return b.s }

// Ticket is permission for one request, returned by [Breaker.Allow]. Report
// its outcome exactly once, with Done or Discard.
type Ticket struct {
	b     *Breaker
	done  func(error)
	probe bool
}

// Probe reports whether the ticket is the half-open probe.
func (t Ticket) Probe() bool { return t.probe }

// Allow asks for permission for one request. While closed it always grants
// it; once the open period is over it grants exactly one, the probe, and
// moves the breaker to half-open (returned as a Transition); otherwise it
// returns ErrOpen.
func (b *Breaker) Allow() (Ticket, Transition, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if now.Before(b.openUntil) {
		return Ticket{}, Transition{}, false, ErrOpen
	}
	from := b.stateLocked(now)
	done, err := b.cb.Allow()
	if err != nil {
		return Ticket{}, Transition{}, false, ErrOpen
	}
	t := Ticket{b: b, done: done, probe: from != StateClosed}
	if t.probe && b.reported == StateOpen {
		b.reported = StateHalfOpen
		return t, Transition{From: StateOpen, To: StateHalfOpen, At: now}, true, nil
	}
	return t, Transition{}, false, nil
}

// Done reports the outcome of the ticket's request: nil is a success, an
// error is a failure if Settings.IsFailure says so and ignored otherwise
// (but see [Ticket.Record] for the probe). It returns the transition the
// outcome caused, if any. Outcomes of tickets issued before the last change
// of state are ignored. IsFailure runs before any lock is taken: if it
// panics, the panic reaches the caller and the ticket is still
// outstanding.
func (t Ticket) Done(err error) (Transition, bool) {
	return t.Record(t.b.Classify(err))
}

// Classify turns a request's error into an Outcome with
// Settings.IsFailure: nil is Success. It takes no lock.
func (b *Breaker) Classify(err error) Outcome {
	switch {
	case err == nil:
		return Success
	case b.s.IsFailure(err):
		return Failure
	}
	return Ignored
}

// Record reports the ticket's classified outcome and returns the transition
// it caused, if any. It runs no user code. The half-open probe always ends in
// a decision: Ignored counts as a Failure for it, so a probe whose error the
// classifier does not count re-opens the breaker for its next period instead
// of leaving it half-open for ever.
func (t Ticket) Record(o Outcome) (Transition, bool) {
	switch {
	case o == Success:
		return t.b.finish(t.done, nil, false)
	case o == Trip:
		return t.b.finish(t.done, errFailure, !t.b.s.DisableTrip)
	case o == Failure, t.probe:
		return t.b.finish(t.done, errFailure, false)
	}
	return t.b.finish(t.done, errDiscard, false)
}

// Discard gives the ticket back without an outcome: it counts as neither
// success nor failure. A discarded probe leaves the breaker half-open and
// lets the next Allow be the probe; use it only when the request was
// abandoned for reasons that are not the far end's (shutdown).
func (t Ticket) Discard() {
	t.b.finish(t.done, errDiscard, false)
}

// Expire ends the current open period now, so that the next Allow is the
// half-open probe. It does nothing unless the breaker is open. It is for an
// outside reason to retry early (new credentials, an operator's request).
// The period never ends less than gobreakerTick after it began: gobreaker
// leaves its own open state only once a tick has passed (this matters only
// on a virtual clock, where no time passes between two calls).
func (b *Breaker) Expire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := time.Now(); now.Before(b.openUntil) {
		b.openUntil = now
		if earliest := b.openedAt.Add(gobreakerTick); b.openUntil.Before(earliest) {
			b.openUntil = earliest
		}
	}
}

// gobreakerTick is how long after opening gobreaker lets a request through:
// more than its Timeout of one nanosecond.
const gobreakerTick = 2 * time.Nanosecond

func (b *Breaker) finish(done func(error), err error, trip bool) (Transition, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	from := b.stateLocked(now)
	b.hooked, b.trip = false, trip
	done(err)
	b.trip = false
	if !b.hooked {
		return Transition{}, false
	}
	switch b.hookTo {
	case StateOpen:
		b.reported = StateOpen
		b.opens++
		base := b.s.OpenTimeout
		if trip { // no quick retry of a request that hung
			base = b.s.MaxOpenTimeout
		}
		// Never shorter than the period before it until the breaker
		// closes: after a Trip's MaxOpenTimeout a plain failed probe must
		// not bring the probes back sooner (nor may jitter).
		d := max(openPeriod(b.opens, base, b.s.MaxOpenTimeout, b.s.Jitter), b.openFor)
		b.openFor, b.openUntil, b.openedAt = d, now.Add(d), now
		return Transition{From: from, To: StateOpen, OpenFor: d, At: now}, true
	case StateClosed:
		b.reported = StateClosed
		b.opens, b.openFor, b.openUntil = 0, 0, time.Time{}
		return Transition{From: from, To: StateClosed, At: now}, true
	}
	return Transition{}, false
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
	if s.State == StateOpen {
		s.OpenUntil = b.openUntil
	}
	if s.State == StateClosed {
		s.ConsecutiveFailures = b.cb.Counts().ConsecutiveFailures
	}
	return s
}

// stateLocked is the state at now. Needs b.mu.
func (b *Breaker) stateLocked(now time.Time) State {
	if now.Before(b.openUntil) {
		return StateOpen
	}
	if b.cb.State() == gobreaker.StateClosed {
		return StateClosed
	}
	return StateHalfOpen
}
