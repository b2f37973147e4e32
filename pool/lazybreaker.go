package pool

import "github.com/clusterpool/clusterpool/breaker"

// An entry's breaker is made on the key's first failure: a key that never
// failed (most of a healthy fleet) holds none, which is a closed breaker
// with nothing counted. Remove drops it again. A dial started while the key
// had no breaker holds the zero Ticket; its outcome is recorded on a ticket
// the breaker grants when the dial ends, if the breaker is closed then (an
// open or half-open breaker has changed state since: the outcome is stale,
// as the breaker ignores a ticket of an earlier state).

// breakerLocked returns e's breaker, making it if e has none. Needs e.mu.
func (e *entry[K, C]) breakerLocked() *breaker.Breaker {
	if e.ls.brk == nil {
		brk, err := breaker.New(e.set.breaker)
		if err != nil { // the settings were validated when they were made
			panic("pool: validated breaker settings refused: " + err.Error())
		}
		e.ls.brk = brk
	}
	return e.ls.brk
}

// allowLocked is e's breaker's permission for a dial while it is closed:
// the zero Ticket if e has no breaker. Needs e.mu.
func (e *entry[K, C]) allowLocked() (breaker.Ticket, error) {
	if e.ls.brk == nil {
		return breaker.Ticket{}, nil
	}
	return e.ls.brk.Allow()
}

// recordLocked records outcome o of a request made with t and returns the
// transition it caused, if any. Needs e.mu.
func (e *entry[K, C]) recordLocked(t breaker.Ticket, o breaker.Outcome) (breaker.Transition, bool) {
	switch {
	case t.Granted():
		return t.Record(o)
	case e.ls.brk == nil && o != breaker.Failure && o != breaker.Trip:
		return breaker.Transition{}, false // nothing to count
	case e.breakerLocked().State() != breaker.StateClosed:
		return breaker.Transition{}, false // stale: the breaker opened since
	}
	now, _ := e.ls.brk.Allow() // closed: granted
	return now.Record(o)
}

// snapshotLocked is e's breaker's state and counts. Needs e.mu.
func (e *entry[K, C]) snapshotLocked() breaker.Snapshot {
	if e.ls.brk == nil {
		return breaker.Snapshot{}
	}
	return e.ls.brk.Snapshot()
}
