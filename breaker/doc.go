// Package breaker is a per-cluster circuit breaker whose open period grows.
//
// A Breaker adds to a [gobreaker.TwoStepCircuitBreaker]
// (github.com/sony/gobreaker/v2) what a dial gate needs: an open period that
// starts at [Settings.OpenTimeout], doubles with ±20 % jitter after every
// failed half-open probe, never exceeds [Settings.MaxOpenTimeout] (a period
// at the cap is exact: the cap bounds both the probe rate and the time to
// notice a recovery) and is never shorter than the one before it until the
// breaker closes; and state changes returned as values instead of
// callbacks run under a lock.
//
// gobreaker's open period is its Timeout, fixed when it is made, so the two
// split the states, each with one owner:
//
//   - Closed belongs to two rules. Failures in a row: Failure outcomes
//     (dials, probes, Report) open the breaker at
//     Settings.ConsecutiveFailures; a success breaks the row, a RateFailure
//     neither counts nor breaks it. Failures by rate: gobreaker's rolling
//     counts (Settings.BucketPeriod, a tenth of Settings.Window) hold every
//     outcome of the last Window, and its ReadyToTrip opens the breaker
//     when failures (Failure and RateFailure) are at least
//     Settings.FailureRate of at least Settings.MinRequests of them. The
//     window is made on the first failure of a closed period and dropped
//     once a success finds it holding no failure, so a healthy breaker
//     holds none.
//   - Open and half-open belong to this package: when either rule trips (or
//     a Trip outcome opens the breaker at once), the window is dropped, and
//     the open period, its growth and the single probe are kept here.
//
// A [Machine] is the breaker as a value whose every method takes now: the
// functional core, for an owner that serializes access (the pool keeps one
// per cluster under its entry's lock). Its gobreaker takes its own mutex
// and ages its buckets by time.Now(), so now must be time.Now() (see
// Machine; tests run on virtual time). A [Breaker] is
// a Machine behind a mutex that reads the clock. Only this package's error
// and ReadyToTrip reach gobreaker: no user code runs under either lock.
//
//	Closed --ConsecutiveFailures Failures in a row, FailureRate of the
//	         window's outcomes, or one Trip--> Open
//	Open --Allow after the open period--> HalfOpen (that Allow is the probe)
//	HalfOpen --probe succeeds--> Closed (period reset to OpenTimeout)
//	HalfOpen --probe fails--> Open (period doubled, capped, never shorter
//	                                than the last; MaxOpenTimeout for a Trip)
//
// An open breaker whose period is over reads as half-open: the next Allow
// is the probe. A probe that never reports keeps it half-open and rejecting
// for ever: bound every request made with a ticket.
package breaker
