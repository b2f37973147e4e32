package reqguard

import (
	"context"
	"time"
)

// The first-byte rule: a Counted request is canceled with errFirstByte once
// it has waited for its response headers for a whole deadline during which
// the cluster showed no sign of life: its deadline runs from the later of
// its start and the cluster's last answer (response headers of any
// request), so a request answered slowly while the cluster answers others
// is not a hang, and one to a cluster that answers nothing ends at its
// deadline. The deadline is learned from the cluster's answers
// (estimator), clamped to [MinFirstByte, MaxFirstByte], and halved for each
// timeout since the last answer, three times at most and never below the
// cluster's retransmission timeout: once a cluster has hung, the next
// request is given less time. A timeout re-arms the deadlines of the other
// requests in flight with the halved deadline, so that requests that hang
// together end together instead of each taking the full deadline.
//
// A CountedWrite request may wait for admission webhooks while nothing
// else is sent to the cluster, so silence is no evidence there: once it
// has waited half its deadline with no sign of life, the Guard asks the
// cluster for one (the probe, see SetProbe; one at a time, at most one per
// half deadline), and an answer counts as life for the writes waiting.
//
// A request answered after its deadline (kept by the cluster's signs of
// life) does not feed the estimate: its latency is the slow answer's, not
// the cluster's.

// armLocked gives f the current deadline; g.mu is held.
func (g *Guard) armLocked(f *Flight) {
	if d := g.firstByteLocked(); d > 0 {
		f.deadline = d
		_, next := g.dueLocked(f, f.start)
		f.timer = time.AfterFunc(next, func() { g.firstByteFired(f) })
	}
}

// lifeLocked is when the cluster last showed life for f: its last answer,
// or, for a write, the last answer to the probe.
func (g *Guard) lifeLocked(f *Flight) time.Time {
	if f.class == CountedWrite && g.lastProbe.After(g.lastAnswer) {
		return g.lastProbe
	}
	return g.lastAnswer
}

// baseLocked is when f's deadline runs from: its start, or the cluster's
// last sign of life for it if that came later.
func (g *Guard) baseLocked(f *Flight) time.Time {
	if life := g.lifeLocked(f); life.After(f.start) {
		return life
	}
	return f.start
}

// dueLocked says whether f, waiting for its headers, is past its deadline
// at now with no sign of life since it started or since the last one;
// else how long until its next check: its deadline, or, for a write, half
// of it, when the probe is sent.
func (g *Guard) dueLocked(f *Flight, now time.Time) (bool, time.Duration) {
	base := g.baseLocked(f)
	end := base.Add(f.deadline)
	if !now.Before(end) {
		return true, 0
	}
	if f.class == CountedWrite {
		if mid := base.Add(f.deadline / 2); now.Before(mid) {
			return false, mid.Sub(now)
		}
		g.probeLocked(now, f.deadline)
	}
	return false, end.Sub(now)
}

// firstByteFired ends f by the first-byte rule, unless its headers came,
// it ended, or the cluster showed life (then its next check is armed), and
// re-arms the other Counted flights still waiting for their headers.
func (g *Guard) firstByteFired(f *Flight) {
	g.mu.Lock()
	if f.headers || f.timedOut || f.ended.Load() {
		g.mu.Unlock()
		return
	}
	now := time.Now()
	if cut, next := g.dueLocked(f, now); !cut {
		f.timer.Reset(next)
		g.mu.Unlock()
		return
	}
	f.timedOut = true
	g.timeouts++
	late := []*Flight{f}
	d := g.firstByteLocked()
	for o := range g.flights {
		if !o.class.counted() || o.headers || o.timedOut || o.timer == nil || d >= o.deadline {
			continue
		}
		o.deadline = d
		if cut, next := g.dueLocked(o, now); !cut {
			o.timer.Reset(next)
			continue
		}
		o.timer.Stop()
		o.timedOut = true
		g.timeouts++
		late = append(late, o)
	}
	g.mu.Unlock()
	for _, o := range late {
		o.cancel(errFirstByte)
	}
}

// SetProbe sets how the Guard asks the cluster for a sign of life while a
// CountedWrite request waits (kube: a GET of its /readyz, sent below the
// Guard as the cluster's last one was): probe returns nil if the cluster
// answered. It runs on a goroutine of its own, with no lock held, bounded
// by its context (half the waiting request's deadline, and Stop). nil
// (the default) sends none: silence then counts against a write as
// against any request.
func (g *Guard) SetProbe(probe func(context.Context) error) {
	g.mu.Lock()
	if !g.stopped { // Stop drops the probe: it holds the cluster's transport
		g.probe = probe
	}
	g.mu.Unlock()
}

// probeLocked sends the probe for a write with deadline d, unless there is
// none, one is out, one was sent less than d/2 ago, or g is stopped.
func (g *Guard) probeLocked(now time.Time, d time.Duration) {
	if g.probe == nil || g.probing || g.stopped || now.Sub(g.probeSent) < d/2 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(d/2, time.Millisecond))
	g.probing, g.probeSent, g.probeCancel = true, now, cancel
	go g.runProbe(ctx, cancel, g.probe)
}

// runProbe sends probe and records an answer as a sign of life.
func (g *Guard) runProbe(ctx context.Context, cancel context.CancelFunc, probe func(context.Context) error) {
	defer cancel()
	err := probe(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.probing = false
	if err == nil && ctx.Err() == nil {
		g.lastProbe = time.Now()
	}
}

// FirstByte records that the response headers arrived: the first-byte
// deadline no longer applies, the cluster answered (see responsiveLocked),
// and a Counted request's latency feeds the cluster's estimate (unless it
// came after the request's deadline) and the slow-cluster rule (a read's,
// however late), and resets its timeouts. It does
// nothing after the deadline passed.
func (f *Flight) FirstByte() {
	g := f.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if f.headers || f.timedOut {
		return
	}
	f.headers = true
	now := time.Now()
	g.lastAnswer = now
	if f.timer != nil {
		f.timer.Stop()
	}
	if f.class.counted() {
		took := now.Sub(f.start)
		if f.deadline == 0 || took <= f.deadline {
			g.est.observe(took)
		}
		g.observeSlowLocked(f.class, took, now)
		g.timeouts = 0
	}
}

// estimator is a smoothed first-byte latency and its mean deviation (as
// TCP's retransmission timer, RFC 6298); guarded by the Guard's lock.
type estimator struct {
	srtt, rttvar time.Duration
}

func (e *estimator) observe(d time.Duration) {
	if e.srtt == 0 {
		e.srtt, e.rttvar = d, d/2
		return
	}
	delta := e.srtt - d
	if delta < 0 {
		delta = -delta
	}
	e.rttvar = (3*e.rttvar + delta) / 4
	e.srtt = (7*e.srtt + d) / 8
}

// rto is the retransmission timeout, srtt + 4·rttvar; 0 with no sample.
func (e *estimator) rto() time.Duration { return e.srtt + 4*e.rttvar }

// deadline is four times the retransmission timeout, clamped to [lo, hi]: a
// request this late is far outside what the cluster has shown, so it is
// taken for hung. With no sample yet it is lo.
func (e *estimator) deadline(lo, hi time.Duration) time.Duration {
	d := 4 * e.rto()
	if hi > 0 {
		d = min(d, hi)
	}
	return max(d, lo)
}
