// Package pool is a context-aware dial gate for per-cluster clients.
//
// A [Pool] hands out one client per cluster key. A Get for a connected
// cluster is a lock-free map read. A Get for a cluster without a client
// starts a dial on a goroutine the pool owns, or joins the one in flight,
// and waits for it only while it can end within the wait bound
// (Options.MaxWait, never past the caller's deadline): a herd of callers
// causes exactly one dial and all of them get its client, while a dial to
// an unreachable cluster costs a caller at most the bound, and nothing once
// the pool knows the cluster hangs.
//
// Invariants:
//   - At most one dial per cluster is joined by callers; dials of one
//     cluster running at once (one canceled by Remove that has not returned
//     yet, and its successor) never exceed Options.MaxConcurrentDials.
//   - Pending dials wait in one FIFO queue (two, for ordinary and suspect
//     dials, served oldest first) with no goroutine each; a dial gets a
//     goroutine when it starts. The normal lane runs at most
//     Options.MaxTotalDials dials; dials of clusters that failed their last
//     dial or use, and half-open probes, hold at most half of it.
//   - No fixed budget that hanging dials can fill: a dial that has run
//     4× the pool's healthy dial latency (p90 of recent successes, at least
//     MaxWait) leaves the normal lane for the slow lane
//     (Options.MaxSlowDials), where it goes on until its deadline, so first
//     dials of healthy clusters never queue behind hanging ones. Slots are
//     x/sync weighted semaphores taken with TryAcquire; nobody blocks on
//     them.
//   - A Get waits only for a dial expected to end within its bound: not for
//     a queued dial, not for a dial already slow, not for a cluster whose
//     last dial took longer than the bound. It returns ErrWaitTimeout at
//     once instead, with a RetryAfter of the expected end, and an event
//     follows when the dial ends (Connected, BreakerOpened or DialFailed).
//     A caller requeued by those events says so per call (Requeued(ctx),
//     for a controller that watches kube.Source): its Get never waits
//     blindly before a dial's length is known, and its RetryAfter is the
//     latest the dial can end, so that the event, not the timer, brings it
//     back (in controller-runtime's priority queue that keeps its place in
//     line). Other callers of the same pool are not affected.
//   - A dial runs under the pool's context and its DialTimeout, never under
//     a caller's context; the pool enforces the deadline even if the dialer
//     ignores it (the dial is settled as a timeout failure, its slots come
//     back; a late client goes to OnClose).
//   - Each cluster has a circuit breaker (package breaker; made on the
//     cluster's first failure, a closed breaker until then). Once it opens,
//     Get rejects at once with ErrCircuitOpen without calling the dialer,
//     and the pool runs the half-open probe in the background when the open
//     period ends (or at once on Probe); every probe ends in a decision, and
//     the open period doubles (with jitter, capped; exact at the cap) after
//     every failed one, and is never shorter than the one before it until
//     the breaker closes. A dial or probe that hung until its deadline (or
//     ended with a timeout error of its own after at least half of
//     DialTimeout) opens the breaker at once for its longest period
//     (breaker.Trip).
//   - No user code (dialer, OnClose, IsFailure, FormatKey, ForKey, and the
//     TracerProvider's and MeterProvider's span processors and
//     instruments) runs with a pool lock held; a panic in a callback is
//     recovered and counted. Each cluster's state changes in one pure step
//     (entry.step: functional core, see core.go) under its entry's lock;
//     what the step leaves to do (effects) runs after the lock, events
//     included (in the key's order, through the entry's outbox).
//     ForKey is called once per key the pool starts holding state for,
//     also when its first Gets race.
//   - Every client a dial returned is either cached, or passed to
//     Options.OnClose exactly once; a cached client is passed to OnClose
//     exactly once when it leaves the pool (eviction, Remove, Close).
//   - A Get that returns without waiting (a done context, an instant
//     rejection) keeps no state; Report never creates state; nothing is
//     created, and no dial starts, once Close began.
//   - Close and Shutdown return within their bound whatever the dialers do,
//     after every other goroutine of the pool has exited; dialers still
//     running at the bound are named in the error (ErrAbandoned).
//   - Events agree with the state they carry: DialFailed is sent only
//     with the breaker closed (see DialFailed).
//
// Locks, in the order they may be taken (a lock is only ever taken while
// holding locks above it; none is held while user code runs):
//
//  1. entry.mu: one key's state (entryState and its breaker.Machine, the
//     views client and reject, call.answered). Held around
//     entry.step and its view (Pool.step, Pool.view) and by the readers
//     State, Keys, finish and drain, never two entries' at once. Taken
//     under it: only gobreaker's own mutex (inside breaker.Machine, which
//     has no lock of its own) and sync.Map's (deleting the entry).
//  2. lanes.mu: the queues, the running lists, a call's lane, ctx and
//     cancel (see lanes). The x/sync semaphores' own mutexes nest inside it
//     (TryAcquire and Release only, never blocking), and Pool.mu and
//     timers.mu when a dial starts or ends. Every …Locked method of Pool
//     needs lanes.mu.
//  3. Pool.mu: closing, the WaitGroup, the dialer set, the subscriber set.
//  4. subscriber.mu: one subscriber's coalescing queue, under Pool.mu
//     when an event is published.
//  5. latency.mu: the latency samples; taken with no other lock held.
//  6. timers.mu: the pool's one timer heap (probes, dial deadlines,
//     demotion) and the entries' probe timers (entry.probeTimer); taken
//     under lanes.mu or alone, and nothing is taken under it (timers'
//     pushLocked needs it). Due timers run on goroutines of their own with
//     no lock held.
//
// Lock-free state read on the hot paths: entry.client and entry.reject
// (written under entry.mu by step; reject carries the breaker state it was
// made for, and the lanes refine a probe's rejection by compare-and-swap),
// Pool.closed (written under lanes.mu and Pool.mu), call.started,
// call.deadline and call.span, and the latency estimate.
//
// Errors are sentinel values matched with errors.Is: [ErrWaitTimeout],
// [ErrCircuitOpen], [ErrClosed], [ErrRemoved], [ErrDialFailed] (wrapping the
// dialer's error), [ErrInvalidOptions], [ErrAbandoned], and the caller's own
// context errors. [RetryAfter] says when a caller should come back, for a
// controller's RequeueAfter. Error strings start with "pool:".
package pool
