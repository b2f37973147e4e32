package reqguard

import (
	"math"
	"slices"
	"time"
)

// The slow-cluster rule (a gradient limit, after Netflix concurrency-limits'
// Gradient2 and failsafe-go's adaptive limiter): a cluster's Counted
// requests in flight are capped by a limit that adapts to the cluster's own
// latency, so that a cluster answering far slower than it usually does
// holds only a few of the caller's workers, while one answering as usual is
// never held back.
//
// The latency is the time to response headers of Counted reads (writes may
// wait on admission webhooks, which says nothing of the cluster's speed).
// Samples are taken in windows of windowSamples; a window's median (robust
// to the outliers of one stalled connection) is the cluster's recent
// latency. The baseline is the cluster's usual latency: the mean of the
// first warmupWindows medians, then an average of the medians weighted by
// the time between windows (time constant SlowLimit.Baseline, so that how
// fast a lasting slowdown becomes usual does not depend on how many
// requests the cluster gets; one window weighs at most an eighth, so that
// the first window after an idle time does not replace it), falling
// faster when the cluster is far faster than its baseline (its first
// answers, with connection setup, were slow).
//
// The short-term latency is the lesser of the last two windows' medians: a
// stall of the caller's own process (a collection, the scheduler) holds
// back every request in flight, so it can slow a whole window, while a
// slow cluster slows every window. At each window after the warm-up the
// limit moves by the gradient g = Tolerance × baseline / short-term,
// clamped to [1/2, 1]: a cluster within Tolerance of its baseline (g = 1)
// sees its limit rise by half a request a window up to Ceiling; one slower
// for two windows sees it fall, by at most a quarter a window, toward
// Floor. The fixed point of a cluster slower than twice the tolerance is
// two requests, so the limit settles at Floor; it recovers once one
// window's latency is back within Tolerance of its baseline, or once a
// lasting slowdown has become the baseline.

// SlowLimit configures the slow-cluster rule. Ceiling 0 turns it off.
type SlowLimit struct {
	// Floor and Ceiling bound the limit; the limit starts at Ceiling.
	// 0 < Floor ≤ Ceiling.
	Floor, Ceiling int
	// Tolerance is how many times its baseline a cluster's recent latency
	// may be before its limit falls; at least 1.
	Tolerance float64
	// Baseline is the time constant of the baseline: a lasting change of
	// latency becomes the cluster's usual latency over about this long.
	Baseline time.Duration
}

// on reports whether the rule is on.
func (s SlowLimit) on() bool { return s.Ceiling > 0 }

const (
	// windowSamples is how many latency samples make a window.
	windowSamples = 8
	// warmupWindows is how many windows set the baseline before the limit
	// may move.
	warmupWindows = 3
	// minGradient bounds how far one window lowers the limit (Gradient2's
	// outlier filter).
	minGradient = 0.5
	// maxWindowWeight is the most one window weighs in the baseline: the
	// first window after a long idle time does not replace it.
	maxWindowWeight = 1.0 / 8
	// smoothing weighs a window's new limit against the current one.
	smoothing = 0.5
	// queueAllowance is what a window adds to the gradient's limit: the
	// growth of a cluster answering as usual, and, with minGradient, the
	// fixed point 2·queueAllowance of a cluster far slower than usual.
	queueAllowance = 1.0
)

// gradient is the state of the slow-cluster rule, guarded by the Guard's
// lock. Invariants: Floor ≤ limit ≤ Ceiling once started (limit 0 before
// the first sample, read as Ceiling); n < windowSamples; baseline and
// recent are 0 until the first window closed; the limit has not moved
// before warmupWindows windows closed.
type gradient struct {
	limit    float64
	baseline time.Duration
	recent   time.Duration // the last window's median
	windows  int           // windows closed
	closedAt time.Time     // when the last window closed
	window   [windowSamples]time.Duration
	n        int // samples in window
}

// observe returns the state after a sample of latency took at now.
func (g gradient) observe(s SlowLimit, took time.Duration, now time.Time) gradient {
	if g.limit == 0 {
		g.limit = float64(s.Ceiling)
	}
	g.window[g.n] = took
	if g.n++; g.n < windowSamples {
		return g
	}
	g.n = 0
	m := median(g.window)
	short := m // the lesser of the last two windows' medians
	if g.recent > 0 && g.recent < m {
		short = g.recent
	}
	dt := now.Sub(g.closedAt)
	g.baseline = nextBaseline(s, g.baseline, m, g.windows, dt)
	g.recent, g.closedAt = m, now
	if g.windows++; g.windows > warmupWindows {
		g.limit = nextLimit(s, g.limit, g.baseline, short)
	}
	return g
}

// cap returns the limit in whole requests.
func (g gradient) cap(s SlowLimit) int {
	if g.limit == 0 {
		return s.Ceiling
	}
	return int(g.limit)
}

// median returns the median of w (the upper one of an even count).
func median(w [windowSamples]time.Duration) time.Duration {
	s := w // a copy
	slices.Sort(s[:])
	return s[windowSamples/2]
}

// nextBaseline returns the baseline after a window of median m closed dt
// after the previous one, when windows had closed before: the mean of the
// medians during the warm-up, then an average weighted by dt/s.Baseline,
// at most maxWindowWeight, cut by a tenth more when m is under half of it.
func nextBaseline(s SlowLimit, b, m time.Duration, windows int, dt time.Duration) time.Duration {
	if windows < warmupWindows {
		return b + (m-b)/time.Duration(windows+1)
	}
	w := min(maxWindowWeight, max(0, float64(dt)/float64(s.Baseline)))
	next := time.Duration(math.Round(float64(b) + w*float64(m-b)))
	if m < next/2 {
		next -= next / 10
	}
	return next
}

// nextLimit returns the limit after a window of median m against
// baseline b: Gradient2's step with gradient g = s.Tolerance·b/m in
// [minGradient, 1], new = (1-smoothing)·limit + smoothing·(g·limit +
// queueAllowance), within [s.Floor, s.Ceiling].
func nextLimit(s SlowLimit, limit float64, b, m time.Duration) float64 {
	g := 1.0
	if m > 0 {
		g = min(1, max(minGradient, s.Tolerance*float64(b)/float64(m)))
	}
	next := (1-smoothing)*limit + smoothing*(g*limit+queueAllowance)
	return min(float64(s.Ceiling), max(float64(s.Floor), next))
}

// normalized returns s with its bounds made consistent when the rule is
// on: 1 ≤ Floor ≤ Ceiling, Tolerance ≥ 1, Baseline > 0 (a zero Baseline
// follows each window).
func (s SlowLimit) normalized() SlowLimit {
	if !s.on() {
		return SlowLimit{}
	}
	s.Floor = min(max(s.Floor, 1), s.Ceiling)
	if !(s.Tolerance >= 1) { // NaN too
		s.Tolerance = 1
	}
	s.Baseline = max(s.Baseline, time.Nanosecond)
	return s
}

// Limit returns the slow-cluster rule's cap on Counted requests in flight
// now; 0 if the rule is off.
func (g *Guard) Limit() int {
	if !g.s.Slow.on() {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.grad.cap(g.s.Slow)
}

// slowFullLocked reports whether the Counted requests in flight are at the
// slow-cluster limit at now, and if so when a slot is likely free: after
// the cluster's recent latency (one of the requests holding the slots has
// then likely been answered), and no later than slotFreeLocked's sure
// bound.
func (g *Guard) slowFullLocked(now time.Time) (time.Time, bool) {
	if !g.s.Slow.on() || g.counted < g.grad.cap(g.s.Slow) {
		return time.Time{}, false
	}
	at := g.slotFreeLocked(now)
	if r := g.grad.recent; r > 0 && now.Add(r).Before(at) {
		at = now.Add(r)
	}
	return at, true
}

// observeSlowLocked feeds a Counted read's time to headers, took, to the
// slow-cluster rule.
func (g *Guard) observeSlowLocked(class Class, took time.Duration, now time.Time) {
	if class == Counted && g.s.Slow.on() {
		g.grad = g.grad.observe(g.s.Slow, took, now)
	}
}
