// Package pool is a context-aware dial gate for per-cluster clients.
//
// A [Pool] hands out one client per cluster key. A Get for a connected
// cluster is a lock-free map read. Otherwise it starts a dial on a
// goroutine the pool owns, or joins the one in flight, and waits only
// while the dial can end within the wait bound: a herd of callers causes
// one dial, and an unreachable cluster costs a caller at most the bound.
// Connect and Redial ask for a dial without a caller.
//
// Invariants:
//   - At most one dial per cluster is joined by callers; dials of one
//     cluster running at once never exceed MaxConcurrentDials.
//   - Pending dials wait in FIFO queues with no goroutine each. The normal
//     lane runs at most MaxTotalDials, of which suspect dials (clusters that
//     failed their last dial or use, probes) hold at most half; while dials
//     queue, one slower than 4× the healthy p90 moves to the slow lane
//     (MaxSlowDials), so hanging dials never hold up healthy ones. Slots
//     are x/sync semaphores taken with TryAcquire: nobody blocks on them.
//   - A Get waits only for a dial expected to end within its bound; else it
//     returns ErrWaitTimeout at once, and every end of a dial is an event.
//   - A dial runs under the pool's context and DialTimeout, never a
//     caller's; the pool enforces the deadline even if the dialer ignores
//     it.
//   - Each cluster has a breaker (package breaker). While it is open, Get
//     rejects at once with ErrCircuitOpen; the pool probes in the
//     background when the period ends (at once on Probe and Redial), and
//     the period grows after every failed probe, never shrinking until the
//     breaker closes. A dial that hung opens it at once (breaker.Trip).
//   - No user code (dialer, OnClose, IsFailure, FormatKey, ForKey, the
//     tracer's and meter's processors) runs with a pool lock held; a panic
//     in a callback is recovered and counted. Each cluster's state changes
//     in one pure step (entry.step, the functional core: core.go) under its
//     entry's lock; what it leaves to do (effects: shell.go) runs after it,
//     events in the key's order.
//   - Every client a dial returned is cached or passed to OnClose once; a
//     cached client is passed to OnClose once when it leaves the pool.
//   - A Get that returns without waiting keeps no state; Report, Probe and
//     Redial never create state; nothing is created, and no dial starts,
//     once Close began. Close returns within its bound, after every other
//     goroutine of the pool has exited.
//
// Locks, in the order they may be taken (a lock is only ever taken while
// holding locks above it; none is held while user code runs):
//
//  1. entry.mu: one key's state (entryState and its breaker.Machine, the
//     views client and reject, a call's ticket, answered and followers),
//     around entry.step and its view (Pool.step, Pool.view) and in State,
//     Keys and drain; never two entries' at once. Under it: only
//     gobreaker's own mutex (in breaker.Machine) and sync.Map's.
//  2. lanes.mu: the queues, running lists and calls' slots (see lanes);
//     the semaphores' mutexes, Pool.mu and timers.mu nest inside it. Every
//     …Locked method of Pool needs lanes.mu.
//  3. Pool.mu: closing, the WaitGroup, the dialer and subscriber sets.
//  4. subscriber.mu: one subscriber's queue, under Pool.mu when publishing.
//  5. latency.mu: the latency samples; taken with no other lock held.
//  6. timers.mu: the timer heap and the entries' probe timers; taken under
//     lanes.mu or alone, nothing under it.
//
// Read without a lock: entry.client and entry.reject (written by step; the
// lanes refine a probe's rejection by compare-and-swap), Pool.closed, a
// call's span, next, started and deadline, and the latency estimate.
//
// Errors are sentinels matched with errors.Is: [ErrWaitTimeout],
// [ErrCircuitOpen], [ErrClosed], [ErrRemoved], [ErrDialFailed] (wrapping the
// dialer's error), [ErrInvalidOptions], [ErrAbandoned], and the caller's own
// context errors. [RetryAfter] says when to come back. Error strings start
// with "pool:".
package pool
