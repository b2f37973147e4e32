package reqguard

import "time"

// The first-byte rule: a Counted request whose response headers have not
// arrived within its deadline is canceled with errFirstByte. The deadline is
// learned from the cluster's answers (estimator), clamped to
// [MinFirstByte, MaxFirstByte], and halved for each timeout since the last
// answer, three times at most and never below the cluster's retransmission
// timeout: once a cluster has hung, the next request is given less time. A
// timeout re-arms the deadlines of the other requests in flight with the
// halved deadline from their start, so that requests that hang together
// end together instead of each taking the full deadline.

// armLocked gives f the current deadline; g.mu is held.
func (g *Guard) armLocked(f *Flight) {
	if d := g.firstByteLocked(); d > 0 {
		f.deadline = d
		f.timer = time.AfterFunc(d, func() { g.firstByteFired(f) })
	}
}

// firstByteFired ends f by the first-byte rule, unless its headers came or
// it ended meanwhile, and re-arms the other Counted flights still waiting
// for their headers.
func (g *Guard) firstByteFired(f *Flight) {
	g.mu.Lock()
	if f.headers || f.timedOut || f.ended.Load() {
		g.mu.Unlock()
		return
	}
	f.timedOut = true
	g.timeouts++
	late := []*Flight{f}
	d, now := g.firstByteLocked(), time.Now()
	for o := range g.flights {
		if o.class != Counted || o.headers || o.timedOut || o.timer == nil || d >= o.deadline {
			continue
		}
		o.deadline = d
		if left := o.start.Add(d).Sub(now); left > 0 {
			o.timer.Reset(left)
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

// FirstByte records that the response headers arrived: the first-byte
// deadline no longer applies, the cluster answered (see responsiveLocked),
// and a Counted request's latency feeds the cluster's estimate and resets
// its timeouts. It does nothing after the deadline passed.
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
	if f.class == Counted {
		g.est.observe(now.Sub(f.start))
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
