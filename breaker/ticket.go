package breaker

import "time"

// Outcome is a classified result of one request, for [Ticket.Record].
type Outcome int8

// The outcomes.
const (
	// Success breaks a row of failures, counts in the rate window (and
	// closes a half-open breaker).
	Success Outcome = iota
	// Failure counts toward opening, in a row (ConsecutiveFailures) and
	// by rate (FailureRate), and re-opens a half-open breaker: a dial's,
	// a probe's, Report's.
	Failure
	// Ignored counts as neither, except for the half-open probe, which
	// must end in a decision: an ignored probe outcome is a Failure.
	Ignored
	// Trip is a Failure so costly that repeating it soon helps nobody (a
	// dial that hung until its deadline): it opens a closed breaker at once
	// for MaxOpenTimeout, and periods stay there until it closes. With
	// Settings.DisableTrip it is a plain Failure.
	Trip
	// RateFailure is a failure judged only by rate (FailureRate over
	// Window): one request's answer of a cluster that may answer others
	// (a 5xx, a transport error), which neither counts toward nor breaks a
	// row of Failures. For a half-open probe it is a Failure.
	RateFailure
)

// Ticket is permission for one request, returned by [Breaker.Allow]. Report
// its outcome exactly once, with Done, Record or Discard. The zero Ticket
// was not granted: reporting its outcome does nothing.
type Ticket struct {
	b          *Breaker // nil for a Machine's ticket
	granted    bool
	gen        uint32 // the breaker's gen when granted
	probe      bool
	halfOpenAt time.Time // when granting this probe made the breaker half-open
}

// Granted reports whether Allow granted the ticket.
func (t Ticket) Granted() bool { return t.granted }

// Probe reports whether the ticket is the half-open probe.
func (t Ticket) Probe() bool { return t.probe }

// Transition returns the change granting the ticket caused: open to
// half-open, for the first probe of an open period.
func (t Ticket) Transition() (Transition, bool) {
	if t.halfOpenAt.IsZero() {
		return Transition{}, false
	}
	return Transition{From: StateOpen, To: StateHalfOpen, At: t.halfOpenAt}, true
}

// Done reports the outcome of the ticket's request, classified (Classify)
// before any lock is taken (a panic in IsFailure reaches the caller, the
// ticket still outstanding), and returns the transition it caused, as
// Record does.
func (t Ticket) Done(err error) (Transition, bool) {
	if t.b == nil {
		return Transition{}, false
	}
	return t.Record(t.b.Classify(err))
}

// Classify turns a request's error into an Outcome with
// Settings.IsFailure (nil is Success), taking no lock.
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
// it caused, if any; outcomes of tickets granted before the last change of
// state are ignored. The probe always ends in a decision: Ignored counts as
// a Failure for it.
func (t Ticket) Record(o Outcome) (Transition, bool) {
	if t.b == nil {
		return Transition{}, false
	}
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	return t.b.m.Record(t, o, time.Now())
}

// Discard gives the ticket back without an outcome. A discarded probe
// leaves the breaker half-open, the next Allow being the probe: use it only
// for a request abandoned for reasons not the far end's (shutdown).
func (t Ticket) Discard() {
	if t.b == nil {
		return
	}
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	t.b.m.Discard(t)
}
