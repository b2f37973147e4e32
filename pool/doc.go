// Package pool is a context-aware dial gate for per-cluster clients.
//
// A [Pool] hands out one client per cluster key. A Get for a connected
// cluster is a lock-free map read. A Get for a cluster without a client
// starts a dial on a goroutine the pool owns, or joins the one in flight,
// and waits for it at most Options.MaxWait (and never past the caller's
// deadline): a herd of callers causes exactly one dial and all of them get
// its client, while a dial to an unreachable cluster costs each caller at
// most the wait bound instead of the dial timeout.
//
// Invariants:
//   - At most one dial per cluster is joined by callers; dials for one
//     cluster that run at once (a dial canceled by Remove that has not
//     returned yet, and its successor) never exceed Options.MaxConcurrentDials,
//     and dials across the pool never exceed Options.MaxTotalDials. Both are
//     x/sync weighted semaphores (FIFO).
//   - Suspect dials (of clusters whose last dial or reported use failed, and
//     half-open probes) hold at most half of MaxTotalDials (at least one): a
//     fleet of hanging clusters cannot starve the first dials of the others.
//   - A Get waits only for a dial that runs or is about to: once the dial
//     has to queue for a pool-wide permit, its waiters get ErrWaitTimeout at
//     once instead of spending their bound behind other clusters' dials.
//   - A dial runs under the pool's context and Options.DialTimeout, never
//     under a caller's context: a caller giving up never aborts a dial that
//     others wait for, and a dial that lands after every caller left is still
//     cached and announced with a Connected event.
//   - Each cluster has a circuit breaker (package breaker). While it is
//     closed, the wait bound halves with every consecutive failure. Once it
//     opens, Get rejects at once with ErrCircuitOpen without calling the
//     dialer, and the pool itself runs the half-open probe in the background
//     when the open period ends; the open period doubles (with jitter) after
//     every failed probe.
//   - Every client a dial returned is either cached, or passed to
//     Options.OnClose exactly once; a cached client is passed to OnClose
//     exactly once when it leaves the pool (eviction, Remove, Close).
//   - Close returns after every goroutine of the pool has exited.
//
// Errors are sentinel values matched with errors.Is: [ErrWaitTimeout],
// [ErrCircuitOpen], [ErrClosed], [ErrRemoved], [ErrDialFailed] (wrapping the
// dialer's error) and the caller's own context.Canceled. [RetryAfter] says
// when a caller should come back, for a controller's RequeueAfter.
package pool
