// Package breaker is a per-cluster circuit breaker whose open period grows.
//
// A Breaker wraps a [gobreaker.TwoStepCircuitBreaker] (github.com/sony/gobreaker/v2)
// and adds what a dial gate needs and gobreaker lacks: an open period that starts
// at [Settings.OpenTimeout], doubles with ±20 % jitter after every failed
// half-open probe and never exceeds [Settings.MaxOpenTimeout] (a period at the
// cap is exact, so the cap bounds both the probe rate and the time to notice a
// recovery), is never shorter than the period before it until the breaker
// closes (neither jitter nor a plain failure after a Trip shortens it), and
// state changes
// returned to the caller as values instead of callbacks run under a lock.
//
// gobreaker keeps the counts, classifies outcomes and owns the half-open
// request limit; this package owns time. gobreaker's own Timeout is set to one
// nanosecond, so gobreaker is ready to go half-open the moment it opens, and the
// Breaker keeps it shut for the open period by not asking it anything until the
// period is over. All calls into gobreaker are made with the Breaker's mutex
// held, so gobreaker's OnStateChange hook, which runs under gobreaker's own
// mutex, only records the change in fields that mutex already guards and never
// re-enters gobreaker (see gobreaker issue #37).
//
// The state machine is the classic one:
//
//	Closed --ConsecutiveFailures failures, or one Trip--> Open
//	Open --open period over--> HalfOpen (the next Allow is the single probe)
//	HalfOpen --probe succeeds--> Closed (open period reset to OpenTimeout)
//	HalfOpen --probe fails--> Open (open period doubled, capped, never
//	                                 shorter than the last one;
//	                                 MaxOpenTimeout for a Trip)
//
// A probe that never reports keeps the Breaker half-open and rejecting for
// ever; callers must bound every request they make with a ticket (the pool
// runs every dial under a deadline).
package breaker
