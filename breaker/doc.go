// Package breaker is a per-cluster circuit breaker whose open period grows.
//
// A Breaker adds to a [gobreaker.TwoStepCircuitBreaker]
// (github.com/sony/gobreaker/v2) what a dial gate needs: an open period that
// starts at [Settings.OpenTimeout], doubles with ±20 % jitter after every
// failed half-open probe and never exceeds [Settings.MaxOpenTimeout] (a
// period at the cap is exact, so the cap bounds both the probe rate and the
// time to notice a recovery), is never shorter than the period before it
// until the breaker closes (neither jitter nor a plain failure after a Trip
// shortens it), and state changes returned to the caller as values instead
// of callbacks run under a lock.
//
// How the two are layered. gobreaker's open period is its Timeout, fixed
// when it is made, so it cannot grow; the two therefore split the states,
// and each state has exactly one owner:
//
//   - Closed belongs to gobreaker. It counts the consecutive failures and
//     decides when to trip (its ReadyToTrip: Settings.ConsecutiveFailures in
//     a row). A Breaker makes its gobreaker on the first failure of a
//     closed period; a success, which would reset the count, drops it
//     instead, so a healthy breaker holds none.
//   - Open and half-open belong to the Breaker. When gobreaker trips (or a
//     Trip outcome opens the breaker at once), the Breaker drops it and
//     keeps the open period, its growth and the single half-open probe
//     itself. When the probe succeeds the breaker is closed, with nothing
//     counted: the next failure starts a new gobreaker.
//
// The state lives in the Machine's own state field (closed, open,
// half-open) and, while closed, in gobreaker's counts; nothing mirrors them.
// A [Machine] is the breaker as a value, with no lock and no clock (every
// method takes now): the functional core, for an owner that already
// serializes access (the pool keeps one per cluster under its entry's
// lock). A [Breaker] is a Machine behind a mutex that reads the clock.
// Only this package's own error and ReadyToTrip ever reach gobreaker: no
// user code runs under its lock or the Breaker's.
//
// The state machine is the classic one:
//
//	Closed --ConsecutiveFailures failures, or one Trip--> Open
//	Open --Allow after the open period--> HalfOpen (that Allow is the single probe)
//	HalfOpen --probe succeeds--> Closed (open period reset to OpenTimeout)
//	HalfOpen --probe fails--> Open (open period doubled, capped, never
//	                                 shorter than the last one;
//	                                 MaxOpenTimeout for a Trip)
//
// An open breaker whose period is over reads as half-open ([Breaker.State]):
// the next Allow is the probe. A probe that never reports keeps the Breaker
// half-open and rejecting for ever; callers must bound every request they
// make with a ticket (the pool runs every dial under a deadline).
package breaker
