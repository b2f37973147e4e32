// Package reqguard guards the requests sent on one cluster's established
// client: it rejects them at once after the client was stopped (the
// cluster's breaker opened, or the cluster was removed), cancels the ones in
// flight when that happens, caps the cluster's counted requests in flight (a
// bulkhead once the cluster stops answering, and a limit that adapts to its
// latency, so that a cluster answering far slower than usual holds only a
// few of the caller's workers: slowlimit.go), ends a counted request that
// has not received its response headers within a deadline learned from the
// cluster's observed latency during which the cluster showed no sign of
// life (a slow answer is not a hang), and reports every outcome to the
// cluster's breaker (passive health).
//
// It knows nothing of HTTP: kube's RoundTripper and bench/sim's model of a
// request both drive a Guard, so the simulation measures this code.
package reqguard

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

// Sentinel errors, matched with errors.Is; kube re-exports them.
var (
	// ErrBulkheadFull: the cluster already has its cap of counted requests
	// in flight; the request was not sent. The error is a *pool.Error, so
	// pool.RetryAfter gives when a slot is sure to be free: the earliest
	// deadline among the requests holding the slots (see slotFreeLocked);
	// at the slow-cluster limit, no later than the cluster's recent latency
	// from now (see slowFullLocked).
	ErrBulkheadFull = errors.New("kube: request bulkhead full")
	// ErrFirstByteTimeout: the cluster sent no response headers within the
	// request's first-byte deadline; the request was canceled and counts as
	// a failure of the cluster.
	ErrFirstByteTimeout = errors.New("kube: no response within the first-byte deadline")
)

// Class says which rules a request is subject to.
type Class uint8

const (
	// Counted requests (what a reconciler sends through its clients) hold a
	// bulkhead slot and have a first-byte deadline.
	Counted Class = iota
	// Exempt requests (watches, logs, exec, attach, port-forward, and the
	// informers' lists) hold no slot and have no first-byte deadline.
	Exempt
	// Unreported requests are exempt and their outcome is not reported:
	// health probes, whose owner reports the outcome itself.
	Unreported
	// CountedWrite requests are Counted requests that may wait long for
	// reasons that say nothing of the cluster's health: a write waits for
	// admission webhooks (10 s by default, 30 s at most). Past half its
	// first-byte deadline with no sign of life, the Guard asks the cluster
	// for one (see SetProbe).
	CountedWrite
)

// counted reports whether c holds a bulkhead slot and has a first-byte
// deadline.
func (c Class) counted() bool { return c == Counted || c == CountedWrite }

// Settings configures a Guard. Zero values disable a rule.
type Settings struct {
	// Cluster names the cluster in errors; never credentials.
	Cluster string
	// MaxInFlight caps the Counted requests in flight while the cluster
	// is not answering as usual (see responsiveLocked); 0 means no cap.
	MaxInFlight int
	// Slow caps the Counted requests in flight by a limit that adapts to
	// the cluster's latency (see slowlimit.go); the zero value is off.
	Slow SlowLimit
	// MinFirstByte and MaxFirstByte clamp the learned first-byte deadline
	// of Counted requests; MinFirstByte 0 means no deadline. MaxFirstByte
	// is also the bound on how long a request holds its slot once its
	// headers came, or if it has no first-byte deadline (kube's
	// RequestTimeout, which bounds a whole request).
	MinFirstByte, MaxFirstByte time.Duration
	// Report receives the outcomes that count in a row once Live was
	// called: the first-byte timeouts (a cluster that showed no sign of
	// life for a whole deadline); nil disables passive health.
	Report func(error)
	// ReportRequest receives every other reported outcome (nil for a
	// success): answers, transport errors, the request timeout, judged by
	// the breaker by rate (pool.Pool.ReportRequest). nil means Report.
	ReportRequest func(error)
	// Stopped returns the error of requests rejected or canceled after
	// Stop, e.g. a *pool.Error of kind pool.ErrCircuitOpen with the next
	// probe as RetryAt (see StoppedError). It is called without the Guard's
	// lock held. nil means ErrClusterStopped.
	Stopped func() error
	// Metrics counts rejections and cancellations; nil counts nothing.
	Metrics *Metrics
}

// Guard guards one cluster's requests. Invariants: once stopped, it admits
// nothing and every flight that was in it has been canceled; counted is
// the number of Counted flights in flights; a flight leaves flights exactly
// once (End), releasing its slot.
type Guard struct {
	s    Settings
	live atomic.Bool

	mu      sync.Mutex
	stopped bool
	flights map[*Flight]struct{}
	counted int
	est     estimator
	grad    gradient // the slow-cluster rule's state (slowlimit.go)
	// lastAnswer is when response headers last arrived, of any request.
	lastAnswer time.Time
	// timeouts counts first-byte timeouts since the last answer; each
	// halves the deadline (see firstbyte.go).
	timeouts int
	// The probe (see SetProbe): lastProbe is when it last answered,
	// probeSent when it was last sent, probing whether it is out.
	probe       func(context.Context) error
	lastProbe   time.Time
	probeSent   time.Time
	probing     bool
	probeCancel context.CancelFunc
}

// New returns a Guard with settings s.
func New(s Settings) *Guard {
	if s.Stopped == nil {
		s.Stopped = func() error { return StoppedError(s.Cluster, pool.ClusterState{}, 0) }
	}
	s.Slow = s.Slow.normalized()
	return &Guard{s: s, flights: map[*Flight]struct{}{}}
}

// Live turns passive health on: outcomes are reported from now on. A dialer
// calls it once the client is handed to the pool, so that the requests of
// the dial itself are not counted twice (the dial's own outcome is).
func (g *Guard) Live() { g.live.Store(true) }

// InFlight returns how many requests are in flight, and how many of them
// are Counted.
func (g *Guard) InFlight() (all, counted int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.flights), g.counted
}

// FirstByteDeadline returns the deadline a Counted request would get now;
// 0 if the rule is off.
func (g *Guard) FirstByteDeadline() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.firstByteLocked()
}

func (g *Guard) firstByteLocked() time.Duration {
	if g.s.MinFirstByte <= 0 {
		return 0
	}
	d := g.est.deadline(g.s.MinFirstByte, g.s.MaxFirstByte)
	return max(d>>min(g.timeouts, 3), min(g.est.rto(), d))
}

// Begin admits a request of class c sent under ctx. It returns the context
// to send it with (canceled on Stop, and at the first-byte deadline) and
// the flight, whose End must be called exactly once; or a rejection: the
// Stopped error, or ErrBulkheadFull. A 429 answered to another request
// rejects nothing (see throttle.go). A rejection is counted and added as an
// event to ctx's span.
func (g *Guard) Begin(ctx context.Context, c Class) (context.Context, *Flight, error) {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		err := g.s.Stopped()
		g.s.Metrics.rejected(ctx, g.s.Cluster, err)
		return nil, nil, err
	}
	now := time.Now()
	if at, full := g.fullLocked(c, now); full {
		g.mu.Unlock()
		err := &pool.Error{Kind: ErrBulkheadFull, Cluster: g.s.Cluster, RetryAt: at}
		g.s.Metrics.rejected(ctx, g.s.Cluster, err)
		return nil, nil, err
	}
	fctx, cancel := context.WithCancelCause(ctx)
	f := &Flight{g: g, class: c, parent: ctx, ctx: fctx, cancel: cancel, start: now, ownDeadline: g.ownDeadline(ctx, now)}
	g.flights[f] = struct{}{}
	if c.counted() {
		g.counted++
		g.armLocked(f)
	}
	g.mu.Unlock()
	return fctx, f, nil
}

// fullLocked reports whether a request of class c beginning at now finds
// the bulkhead full, and if so when to come back: a Counted request over
// MaxInFlight while the cluster is not answering as usual, or over the
// slow-cluster limit (see slowFullLocked).
func (g *Guard) fullLocked(c Class, now time.Time) (time.Time, bool) {
	switch {
	case !c.counted():
		return time.Time{}, false
	case g.s.MaxInFlight > 0 && g.counted >= g.s.MaxInFlight && !g.responsiveLocked(now):
		return g.slotFreeLocked(now), true
	}
	return g.slowFullLocked(now)
}

// Responsive reports whether the cluster is answering as usual, in which
// case the bulkhead lets counted requests past its cap (see
// responsiveLocked).
func (g *Guard) Responsive() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.responsiveLocked(time.Now())
}

// responsiveLocked reports whether the cluster is answering as it
// usually does, so that the bulkhead lets counted requests past its cap: no
// first-byte timeout since its last answer, and fewer than the cap of its
// requests in flight are late: sent no earlier than the last answer and
// waiting longer than lateAfterLocked (for a write, the probe's answer
// counts as an answer). The cap is for a cluster that stopped answering,
// and holds on evidence only: a busy healthy cluster is not throttled, nor
// is a burst of requests to a cluster that was idle or has just connected,
// nor a cluster that answers slower than its first answers but still
// answers (a request sent before an answer that came is not a sign that
// the cluster stopped); a cluster that stops answering is held to the cap
// once cap requests sent since are late, or one timed out.
func (g *Guard) responsiveLocked(now time.Time) bool {
	if g.timeouts > 0 {
		return false
	}
	after, late := g.lateAfterLocked(), 0
	for f := range g.flights {
		if f.class.counted() && now.Sub(f.start) > after && !f.start.Before(g.lifeLocked(f)) {
			late++
		}
	}
	return late < g.s.MaxInFlight
}

// lateAfterLocked is how long a Counted request may wait for its answer
// before it counts as late: the cluster's retransmission timeout (smoothed
// latency plus four deviations) but at least a tenth of MinFirstByte (200
// ms with kube's default, Linux's minimum TCP retransmission timeout: a few
// fast answers must not make a burst's first 20 ms look like an outage),
// or, before any answer, MinFirstByte (MaxFirstByte if that rule is off).
func (g *Guard) lateAfterLocked() time.Duration {
	if rto := g.est.rto(); rto > 0 {
		return max(rto, g.s.MinFirstByte/10)
	}
	if g.s.MinFirstByte > 0 {
		return g.s.MinFirstByte
	}
	return g.s.MaxFirstByte
}

// slotFreeLocked is when a slot is sure to be free: the earliest end of
// the Counted flights holding the slots. A flight waiting for its headers
// ends at its first-byte deadline from its start or the cluster's last
// sign of life (the rule cancels it then, unless the cluster shows life
// again: the cap holds only while it shows none); one whose headers came,
// or with no deadline, at MaxFirstByte from its start (kube's
// RequestTimeout, which bounds the whole request). The cluster's usual
// latency is no bound: the cap holds only once the cluster stopped
// answering as usual, so its requests in flight end by a deadline, not by
// an answer, and a RetryAfter of its latency made a caller that requeues
// on it spin until then. With no bound at all (no deadline and no
// MaxFirstByte) it is lateAfterLocked from now.
func (g *Guard) slotFreeLocked(now time.Time) time.Time {
	var at time.Time
	for f := range g.flights {
		if !f.class.counted() {
			continue
		}
		end, ok := g.flightEndLocked(f)
		if ok && (at.IsZero() || end.Before(at)) {
			at = end
		}
	}
	if at.IsZero() {
		at = now.Add(max(g.lateAfterLocked(), time.Millisecond))
	}
	return at
}

// flightEndLocked is the latest a Counted flight can hold its slot, if
// anything bounds it.
func (g *Guard) flightEndLocked(f *Flight) (time.Time, bool) {
	if !f.headers && f.deadline > 0 {
		return g.baseLocked(f).Add(f.deadline), true
	}
	if g.s.MaxFirstByte > 0 {
		return f.start.Add(g.s.MaxFirstByte), true
	}
	return time.Time{}, false
}

// Stop rejects every later request and cancels those in flight with the
// Stopped error. It is idempotent.
func (g *Guard) Stop() {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return
	}
	g.stopped = true
	g.probe = nil // it holds the cluster's transport, which a pending timer would keep
	if g.probeCancel != nil {
		g.probeCancel()
	}
	flights := make([]*Flight, 0, len(g.flights))
	for f := range g.flights {
		flights = append(flights, f)
	}
	g.mu.Unlock()
	if len(flights) == 0 {
		return
	}
	cause := &tripped{err: g.s.Stopped()}
	for _, f := range flights {
		if f.ended.Load() {
			continue
		}
		f.cancel(cause)
		g.s.Metrics.canceled(f.parent, g.s.Cluster, cause.err)
	}
}

// errFirstByte is the cancel cause of a flight whose deadline passed.
var errFirstByte = errors.New("first-byte deadline")

// tripped is the cancel cause of a flight canceled by Stop.
type tripped struct{ err error }

func (t *tripped) Error() string { return t.err.Error() }
func (t *tripped) Unwrap() error { return t.err }

// ErrClusterStopped: the client was stopped while its breaker is closed
// (removed from the pool, replaced, the pool closed); kube re-exports it.
var ErrClusterStopped = errors.New("kube: cluster client stopped")

// StoppedError is the error of a request on a stopped client of cluster,
// whose pool state is s: pool.ErrCircuitOpen with the next probe as RetryAt
// while the breaker is not closed (probeBound from now if the probe is
// already out), else ErrClusterStopped with RetryAt now, to be retried at
// once with a new client.
func StoppedError(cluster string, s pool.ClusterState, probeBound time.Duration) error {
	now := time.Now()
	if s.Known && s.Breaker != breaker.StateClosed {
		at := s.NextProbe
		if !at.After(now) {
			at = now.Add(probeBound)
		}
		return &pool.Error{Kind: pool.ErrCircuitOpen, Cluster: cluster, RetryAt: at}
	}
	return &pool.Error{Kind: ErrClusterStopped, Cluster: cluster, RetryAt: now}
}
