package breaker

import (
	"time"

	"github.com/sony/gobreaker/v2"
)

// The closed state's counts: failures in a row (Machine.row) and the rate
// window, a gobreaker.TwoStepCircuitBreaker with rolling counts
// (Settings.BucketPeriod: Window / windowBuckets), whose ReadyToTrip judges
// the failure rate. The window is made on a closed breaker's first failure
// and dropped once a success finds it holding no failure, or when the
// machine opens: a healthy breaker holds none. gobreaker ages its buckets
// by time.Now (it takes no clock): the owner's now must be the same clock
// (the pool's and Breaker's is time.Now; tests run on virtual time, see
// Machine).

// newWindow returns a rate window judging by s (defaults applied).
func newWindow(s Settings) *gobreaker.TwoStepCircuitBreaker[struct{}] {
	minRequests, rate := s.MinRequests, s.FailureRate
	return gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Interval:     s.Window,
		BucketPeriod: s.Window / windowBuckets,
		// Runs under gobreaker's own mutex; it reads only its argument.
		ReadyToTrip: func(c gobreaker.Counts) bool { return tooManyFailures(c, minRequests, rate) },
	})
}

// tooManyFailures is the rate rule: failures are at least rate of at least
// minRequests outcomes.
func tooManyFailures(c gobreaker.Counts, minRequests uint32, rate float64) bool {
	n := c.TotalSuccesses + c.TotalFailures
	return n >= minRequests && float64(c.TotalFailures) >= rate*float64(n)
}

// feed records one outcome in the window (failed or not) and reports
// whether the window trips.
func feed(cb *gobreaker.TwoStepCircuitBreaker[struct{}], failed bool) bool {
	if done, err := cb.Allow(); err == nil {
		if failed {
			done(errFailure)
		} else {
			done(nil)
		}
	}
	return cb.State() != gobreaker.StateClosed
}

// windowCounts returns the window's outcomes and failures now (zero with
// no window).
func windowCounts(cb *gobreaker.TwoStepCircuitBreaker[struct{}]) (requests, failures uint32) {
	if cb == nil {
		return 0, 0
	}
	cb.State() // rolls the buckets past
	c := cb.Counts()
	return c.TotalSuccesses + c.TotalFailures, c.TotalFailures
}

// countFailure feeds a failure of the closed state at now: in a row if
// inRow, and to the window (made if there is none) unless the rate rule is
// off. It opens the machine if either rule trips.
func (m *Machine) countFailure(now time.Time, inRow bool) (Transition, bool) {
	if inRow {
		m.row++
	}
	tripped := false
	if !m.s.DisableFailureRate {
		if m.cb == nil {
			m.cb = newWindow(m.s)
		}
		tripped = feed(m.cb, true)
	}
	if tripped || m.row >= m.s.ConsecutiveFailures {
		return m.open(now, false), true
	}
	return Transition{}, false
}

// countSuccess feeds a success of the closed state: it breaks the row and
// counts in the window, which is dropped if it holds no failure.
func (m *Machine) countSuccess() {
	m.row = 0
	if m.cb == nil {
		return
	}
	feed(m.cb, false)
	if _, failures := windowCounts(m.cb); failures == 0 {
		m.cb = nil
	}
}
