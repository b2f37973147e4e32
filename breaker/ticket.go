package breaker

import "time"

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

// Ticket is permission for one request, returned by [Breaker.Allow]. Report
// its outcome exactly once, with Done, Record or Discard. The zero Ticket
// was not granted: reporting its outcome does nothing.
type Ticket struct {
	b       *Breaker // nil for a Machine's ticket
	granted bool
	gen     uint32 // the breaker's gen when granted
	probe   bool
	// halfOpenAt is when granting this probe moved the breaker to
	// half-open; zero otherwise.
	halfOpenAt time.Time
}

// Granted reports whether the ticket was granted by Allow (the zero Ticket
// was not).
func (t Ticket) Granted() bool { return t.granted }

// Probe reports whether the ticket is the half-open probe.
func (t Ticket) Probe() bool { return t.probe }

// Transition returns the change of state that granting the ticket caused:
// open to half-open, for the first probe of an open period (a probe
// granted after a discarded one causes none).
func (t Ticket) Transition() (Transition, bool) {
	if t.halfOpenAt.IsZero() {
		return Transition{}, false
	}
	return Transition{From: StateOpen, To: StateHalfOpen, At: t.halfOpenAt}, true
}

// Done reports the outcome of the ticket's request: nil is a success, an
// error is a failure if Settings.IsFailure says so and ignored otherwise
// (but see [Ticket.Record] for the probe). It returns the transition the
// outcome caused, if any. Outcomes of tickets granted before the last change
// of state are ignored. IsFailure runs before any lock is taken: if it
// panics, the panic reaches the caller and the ticket is still
// outstanding.
func (t Ticket) Done(err error) (Transition, bool) {
	if t.b == nil {
		return Transition{}, false
	}
	return t.Record(t.b.Classify(err))
}

// Classify turns a request's error into an Outcome with
// Settings.IsFailure: nil is Success. It takes no lock.
func (b *Breaker) Classify(err error) Outcome {
	switch {
	case err == nil:
		return Success
	case b.m.s.IsFailure(err):
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
	if t.b == nil {
		return Transition{}, false
	}
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	return t.b.m.Record(t, o, time.Now())
}

// Discard gives the ticket back without an outcome: it counts as neither
// success nor failure. A discarded probe leaves the breaker half-open and
// lets the next Allow be the probe; use it only when the request was
// abandoned for reasons that are not the far end's (shutdown).
func (t Ticket) Discard() {
	if t.b == nil {
		return
	}
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	t.b.m.Discard(t)
}
