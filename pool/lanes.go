package pool

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"
)

// lanes schedules dials: two FIFO queues (ordinary, suspect) and x/sync
// semaphores as slots, taken with TryAcquire under mu. With mu held: the
// normal lane holds ≤ MaxTotalDials (total), of which ≤ suspectCap suspect
// (suspect), the slow lane ≤ MaxSlowDials (slow), a key ≤
// MaxConcurrentDials (its calls' sem); a queued call starts as soon as the
// slots allow, oldest first; while calls are queued and the normal lane is
// full, a call run past latency.slowAfter moves to the slow lane. What
// starts is decided in one function, dispatchLocked; the shell starts it
// after mu (Pool.start).
type lanes[K comparable, C any] struct {
	mu       sync.Mutex
	queue    list.List // queued ordinary calls, oldest first
	suspectQ list.List // queued suspect calls, oldest first
	running  list.List // calls in the normal lane, in start order
	slowRun  list.List // calls in the slow lane
	total    *semaphore.Weighted
	suspect  *semaphore.Weighted
	slow     *semaphore.Weighted
	seq      uint64
	demoter  *timer        // armed while calls are queued and the lane is full
	longest  time.Duration // longest DialTimeout submitted (retryAt)
}

// lane is where a dial stands in the lanes.
type lane uint8

const (
	laneNone   lane = iota // not submitted yet, or released
	laneQueued             // waiting in the queue for a slot
	laneNormal             // running in the normal lane (MaxTotalDials)
	laneSlow               // running, moved to the slow lane (MaxSlowDials)
)

// slot is a call's place in the lanes, guarded by lanes.mu (rejection is
// set by the core before the call is launched; started and deadline are
// also read without a lock).
type slot[K comparable, C any] struct {
	lane      lane
	elem      *list.Element      // in the queue or the running list
	seq       uint64             // submission order, for FIFO across the queues
	expiry    *timer             // enforces the deadline; nil unless running
	ctx       context.Context    // made when the dial starts (thousands queued would contend on the pool's)
	cancel    context.CancelFunc // canceled by Remove, Redial and Close
	canceled  bool               // Remove, Redial or Close canceled the dial
	rejection *Error             // a probe's half-open rejection, refined here (refineLocked)
	started   atomic.Int64       // UnixNano when the dialer was called; 0 while queued
	deadline  atomic.Int64       // UnixNano of the enforced DialTimeout; 0 while queued
}

// suspectCap is how many normal-lane slots suspect dials (of clusters that
// failed their last dial or use, and probes) may hold: half, at least one.
func suspectCap(total int64) int64 { return max(1, total/2) }

// queueOf is the queue c waits in.
func (l *lanes[K, C]) queueOf(c *call[K, C]) *list.List {
	if c.suspect {
		return &l.suspectQ
	}
	return &l.queue
}

// submit queues c and starts what the slots allow. It reports false, not
// queuing c, if the pool is closed or c was canceled.
func (p *Pool[K, C]) submit(c *call[K, C]) bool {
	l, s := &p.lanes, &c.slot
	l.mu.Lock()
	queued := !p.closed.Load() && !s.canceled
	var start []*call[K, C]
	if queued {
		now := time.Now()
		l.seq++
		s.seq, s.lane, s.elem = l.seq, laneQueued, l.queueOf(c).PushBack(c)
		l.longest = max(l.longest, c.e.set.dialTimeout)
		start = p.dispatchLocked(now)
		p.refineLocked(c, p.retryAtLocked(c, now))
	}
	l.mu.Unlock()
	p.start(start)
	return queued
}

// retryAt is when call c (or the call Redial replaced it with) is sure to
// have ended: its deadline once it runs; queued, a bound erring long (a
// caller back before the outcome loses its place in controller-runtime's
// priority queue): every normal slot is held by a dial ending within the
// longest DialTimeout, so the n queued calls start within ceil(n/slots)
// such rounds, and c ends one round after.
func (p *Pool[K, C]) retryAt(c *call[K, C]) time.Time {
	for n := c.next.Load(); n != nil; n = c.next.Load() {
		c = n
	}
	if c.slot.deadline.Load() == 0 {
		p.lanes.mu.Lock()
		defer p.lanes.mu.Unlock()
	}
	return p.retryAtLocked(c, time.Now())
}

// retryAtLocked is retryAt of c itself. Needs lanes.mu unless c runs.
func (p *Pool[K, C]) retryAtLocked(c *call[K, C], now time.Time) time.Time {
	if d := c.slot.deadline.Load(); d != 0 {
		return time.Unix(0, d)
	}
	l := &p.lanes
	n := int64(l.queue.Len() + l.suspectQ.Len())
	round := max(l.longest, c.e.set.dialTimeout)
	slots := p.opts.MaxTotalDials
	if c.suspect {
		slots = suspectCap(slots)
	}
	rounds := (max(n, 1)+slots-1)/slots + 1
	return now.Add(time.Duration(rounds) * round)
}

// refineLocked replaces probe c's half-open rejection by one that says to
// come back at (the queue's bound, then its deadline), unless the entry's
// rejection changed since: a compare-and-swap of immutable values, with no
// e.mu. Needs lanes.mu.
func (p *Pool[K, C]) refineLocked(c *call[K, C], at time.Time) {
	old := c.slot.rejection
	if !c.probe || old == nil {
		return
	}
	refined := *old
	refined.RetryAt = at
	if c.e.reject.CompareAndSwap(old, &refined) {
		c.slot.rejection = &refined
	}
}

// release takes c out of the lanes and starts what that allows; false if
// c held nothing.
func (p *Pool[K, C]) release(c *call[K, C]) bool {
	l := &p.lanes
	l.mu.Lock()
	held := c.slot.lane != laneNone
	var start []*call[K, C]
	if held {
		p.freeLocked(c)
		start = p.dispatchLocked(time.Now())
	}
	l.mu.Unlock()
	p.start(start)
	return held
}

// freeLocked takes c out of its queue or running list and gives its slots
// back. Needs lanes.mu.
func (p *Pool[K, C]) freeLocked(c *call[K, C]) {
	l, s := &p.lanes, &c.slot
	switch s.lane {
	case laneQueued:
		l.queueOf(c).Remove(s.elem)
	case laneNormal:
		l.running.Remove(s.elem)
		p.leaveNormalLocked(c)
	case laneSlow:
		l.slowRun.Remove(s.elem)
		l.slow.Release(1)
	}
	if s.lane == laneNormal || s.lane == laneSlow {
		c.sem.Release(1)
		p.timers.stop(s.expiry)
		s.expiry = nil
	}
	s.lane, s.elem = laneNone, nil
}

// leaveNormalLocked gives back c's normal-lane slots. Needs lanes.mu.
func (p *Pool[K, C]) leaveNormalLocked(c *call[K, C]) {
	p.lanes.total.Release(1)
	if c.suspect {
		p.lanes.suspect.Release(1)
	}
}

// cancelDial cancels c (Remove, Redial, a settled call): a queued c is
// settled as dropped, a running one's context canceled, and one not yet
// queued never will be.
func (p *Pool[K, C]) cancelDial(c *call[K, C]) {
	l, s := &p.lanes, &c.slot
	l.mu.Lock()
	s.canceled = true
	if s.cancel != nil {
		s.cancel()
	}
	queued := s.lane == laneQueued
	if queued {
		p.freeLocked(c)
		p.armDemoterLocked()
	}
	l.mu.Unlock()
	if queued {
		p.finish(c, result[C]{end: endDropped})
	}
}

// dispatchLocked decides what starts now: while the slots allow, the
// oldest queued call that may start moves to the normal lane with its
// slots taken, its context made and its deadline armed; then it arms the
// demotion timer. No I/O, no goroutine: the shell starts the calls it
// returns after lanes.mu (Pool.start). Needs lanes.mu.
func (p *Pool[K, C]) dispatchLocked(now time.Time) []*call[K, C] {
	l := &p.lanes
	var start []*call[K, C]
	for !p.closed.Load() && l.total.TryAcquire(1) {
		c := p.nextLocked()
		if c == nil {
			l.total.Release(1)
			break
		}
		s := &c.slot
		s.lane, s.elem = laneNormal, l.running.PushBack(c)
		ctx, cancel := context.WithCancel(p.ctx)
		s.ctx, s.cancel = trace.ContextWithSpan(ctx, c.spanOrNil()), cancel
		end := now.Add(c.e.set.dialTimeout)
		s.started.Store(now.UnixNano())
		s.deadline.Store(end.UnixNano())
		p.refineLocked(c, end)
		s.expiry = p.timers.schedule(end, func(*timer) { p.expire(c) })
		start = append(start, c)
	}
	p.armDemoterLocked()
	return start
}

// nextLocked takes the oldest call that may start now out of the queues,
// with its key's slot (and a suspect slot for a suspect call) taken, or
// returns nil. Needs lanes.mu.
func (p *Pool[K, C]) nextLocked() *call[K, C] {
	l := &p.lanes
	a := firstStartable[K, C](&l.queue)
	var b *list.Element
	if l.suspect.TryAcquire(1) {
		if b = firstStartable[K, C](&l.suspectQ); b == nil {
			l.suspect.Release(1)
		}
	}
	switch {
	case a == nil && b == nil:
		return nil
	case b == nil, a != nil && a.Value.(*call[K, C]).slot.seq < b.Value.(*call[K, C]).slot.seq:
		if b != nil {
			b.Value.(*call[K, C]).sem.Release(1)
			l.suspect.Release(1)
		}
		l.queue.Remove(a)
		return a.Value.(*call[K, C])
	}
	if a != nil {
		a.Value.(*call[K, C]).sem.Release(1)
	}
	l.suspectQ.Remove(b)
	return b.Value.(*call[K, C])
}

// firstStartable is the first call of q whose key has a free slot, with it
// taken (a key is at its cap only while a canceled dial runs on).
func firstStartable[K comparable, C any](q *list.List) *list.Element {
	for el := q.Front(); el != nil; el = el.Next() {
		if el.Value.(*call[K, C]).sem.TryAcquire(1) {
			return el
		}
	}
	return nil
}

// start runs the calls dispatchLocked decided on, each on its own
// goroutine, with no lock held; one decided just before Close began is
// settled as dropped (Close waits only for dialers it counts).
func (p *Pool[K, C]) start(calls []*call[K, C]) {
	for _, c := range calls {
		if !p.dialerAdd(c) {
			p.finish(c, result[C]{end: endDropped})
			continue
		}
		go p.runDial(c)
	}
}

// armDemoterLocked arms the demotion timer for the oldest normal-lane call
// while calls wait and the slow lane has room; else it stops it. Needs
// lanes.mu.
func (p *Pool[K, C]) armDemoterLocked() {
	l := &p.lanes
	want := !p.closed.Load() && l.queue.Len()+l.suspectQ.Len() > 0 && l.running.Len() > 0 &&
		int64(l.slowRun.Len()) < p.opts.MaxSlowDials
	var at time.Time
	if want {
		oldest := l.running.Front().Value.(*call[K, C])
		at = time.Unix(0, oldest.slot.started.Load()).Add(p.lat.slowAfter(p.opts.MaxWait))
		if l.demoter != nil && at.Equal(l.demoter.at) {
			return // armed for that instant already
		}
	}
	p.timers.stop(l.demoter)
	l.demoter = nil
	if want {
		l.demoter = p.timers.schedule(at, p.demote)
	}
}

// demote moves normal-lane calls that have run past slowAfter to the slow
// lane, while it has room, and starts queued calls in their place.
func (p *Pool[K, C]) demote(t *timer) {
	l := &p.lanes
	l.mu.Lock()
	if l.demoter == t {
		l.demoter = nil // fired: armDemoterLocked arms a new one
	}
	now := time.Now()
	limit := now.Add(-p.lat.slowAfter(p.opts.MaxWait)).UnixNano()
	for el := l.running.Front(); el != nil; {
		c := el.Value.(*call[K, C])
		next := el.Next()
		if c.slot.started.Load() > limit || !l.slow.TryAcquire(1) {
			break // started in order: the rest are younger
		}
		l.running.Remove(el)
		p.leaveNormalLocked(c)
		c.slot.lane, c.slot.elem = laneSlow, l.slowRun.PushBack(c)
		el = next
	}
	start := p.dispatchLocked(now)
	l.mu.Unlock()
	p.start(start)
}

// closeLanes sets Pool.closed (under lanes.mu and Pool.mu: no dial starts
// and no subscriber is counted after it), stops the demoter and drops the
// queued calls.
func (p *Pool[K, C]) closeLanes() {
	l := &p.lanes
	l.mu.Lock()
	p.mu.Lock() // track and dialerAdd read closed under it
	p.closed.Store(true)
	p.mu.Unlock()
	p.armDemoterLocked() // stops it
	var queued []*call[K, C]
	for _, q := range []*list.List{&l.queue, &l.suspectQ} {
		for el := q.Front(); el != nil; el = el.Next() {
			queued = append(queued, el.Value.(*call[K, C]))
		}
	}
	l.mu.Unlock()
	for _, c := range queued {
		p.finish(c, result[C]{end: endDropped})
	}
}
