package pool

import (
	"container/list"
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/semaphore"
)

// lanes schedules dials. Pending dials wait in two FIFO queues (ordinary
// and suspect) with no goroutine each; a dial gets a goroutine only when it
// starts. The slots are x/sync weighted semaphores, only ever taken with
// TryAcquire under mu (nobody blocks on them). Invariants, with mu held:
//   - normal lane ≤ MaxTotalDials (total), suspect calls in it ≤
//     suspectCap (suspect), slow lane ≤ MaxSlowDials (slow);
//   - each key's slots ≤ MaxConcurrentDials (its calls' sem);
//   - a queued call is started as soon as the slots allow, oldest first
//     across both queues (a suspect call only while suspect < suspectCap);
//   - while calls are queued and the normal lane is full, a running call
//     that has run past latency.slowAfter moves to the slow lane (if it has
//     room), freeing its normal slot. It keeps running until it returns or
//     its deadline.
//
// Locks: lanes.mu, third in the pool's lock order (see the package
// documentation). Nothing is called out of the package with it held.
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
	demoter  *timer // armed while calls are queued and the lane is full
	// longest is the longest DialTimeout of any call submitted: no running
	// dial holds a slot longer (see retryAt).
	longest time.Duration
}

// init sizes the lanes' semaphores.
func (l *lanes[K, C]) init(total, slow int64) {
	l.total = semaphore.NewWeighted(total)
	l.suspect = semaphore.NewWeighted(suspectCap(total))
	l.slow = semaphore.NewWeighted(slow)
}

// suspectCap is how many normal-lane slots suspect dials (of clusters that
// failed their last dial or use, and half-open probes) may hold: half, at
// least one.
func suspectCap(total int64) int64 { return max(1, total/2) }

// submit queues c and starts what the slots allow. It reports false if
// the pool is closed or Remove canceled c before it was queued (c was not
// queued: its launcher drops it).
func (p *Pool[K, C]) submit(c *call[K, C]) bool {
	l := &p.lanes
	l.mu.Lock()
	defer l.mu.Unlock()
	if p.closed.Load() || c.canceled {
		return false
	}
	l.seq++
	c.seq = l.seq
	c.lane = laneQueued
	l.longest = max(l.longest, c.e.set.dialTimeout)
	if c.suspect {
		c.elem = l.suspectQ.PushBack(c)
	} else {
		c.elem = l.queue.PushBack(c)
	}
	p.dispatchLocked()
	p.refineLocked(c, p.retryAtLocked(c, time.Now()))
	return true
}

// retryAt is when call c is sure to have ended, so that a caller told to
// come back then finds its outcome: its deadline once the dialer runs.
// While it is queued, a bound from the queue: every slot of the normal
// lane is held by a dial that ends within the longest DialTimeout, the
// queue is served oldest first, so the n calls queued start within
// ceil(n/slots) such rounds (slots: MaxTotalDials, or its suspect share
// for a suspect call), and c ends at most one more round after that. A
// caller that comes back earlier than the outcome loses its place (in
// controller-runtime's priority queue a RequeueAfter that fires first puts
// the object at the back, an event that comes first keeps its place), so
// the bound errs long: the Connected or DialFailed event is what brings
// callers back at the right time.
func (p *Pool[K, C]) retryAt(c *call[K, C]) time.Time {
	if d := c.deadline.Load(); d != 0 {
		return time.Unix(0, d)
	}
	p.lanes.mu.Lock()
	defer p.lanes.mu.Unlock()
	return p.retryAtLocked(c, time.Now())
}

// retryAtLocked is retryAt with lanes.mu held.
func (p *Pool[K, C]) retryAtLocked(c *call[K, C], now time.Time) time.Time {
	if d := c.deadline.Load(); d != 0 {
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

// refineLocked replaces the half-open rejection of probe c by one that
// says to come back at, unless the entry's rejection changed since: when
// the probe is queued (the queue's bound) and when it starts (its
// deadline). Each rejection is a value fixed when it is made; the swap is
// atomic, so e.mu is not needed. Needs lanes.mu.
func (p *Pool[K, C]) refineLocked(c *call[K, C], at time.Time) {
	old := c.rejection
	if !c.probe || old == nil {
		return
	}
	refined := *old
	refined.RetryAt = at
	if c.e.reject.CompareAndSwap(old, &refined) {
		c.rejection = &refined
	}
}

// dequeue takes c out of the queue if it has not started, and reports
// whether it did.
func (p *Pool[K, C]) dequeue(c *call[K, C]) bool {
	p.lanes.mu.Lock()
	defer p.lanes.mu.Unlock()
	return c.lane == laneQueued && p.releaseLocked(c)
}

// release takes c out of the lanes (queue or slot) and starts what the
// freed slot allows. It returns false if c held nothing (already
// released).
func (p *Pool[K, C]) release(c *call[K, C]) bool {
	p.lanes.mu.Lock()
	defer p.lanes.mu.Unlock()
	return p.releaseLocked(c)
}

// releaseLocked is release. Needs lanes.mu.
func (p *Pool[K, C]) releaseLocked(c *call[K, C]) bool {
	l := &p.lanes
	switch c.lane {
	case laneNone:
		return false
	case laneQueued:
		if c.suspect {
			l.suspectQ.Remove(c.elem)
		} else {
			l.queue.Remove(c.elem)
		}
	case laneNormal:
		l.running.Remove(c.elem)
		l.total.Release(1)
		if c.suspect {
			l.suspect.Release(1)
		}
		c.sem.Release(1)
		p.stopExpiryLocked(c)
	case laneSlow:
		l.slowRun.Remove(c.elem)
		l.slow.Release(1)
		c.sem.Release(1)
		p.stopExpiryLocked(c)
	}
	c.lane, c.elem = laneNone, nil
	p.dispatchLocked()
	return true
}

// dispatchLocked starts queued calls while slots allow, then arms the
// demotion timer. Needs lanes.mu.
func (p *Pool[K, C]) dispatchLocked() {
	l := &p.lanes
	for !p.closed.Load() && l.total.TryAcquire(1) {
		c := p.nextLocked()
		if c == nil {
			l.total.Release(1)
			break
		}
		p.startLocked(c)
	}
	p.armDemoterLocked()
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
	case b == nil, a != nil && a.Value.(*call[K, C]).seq < b.Value.(*call[K, C]).seq:
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

// firstStartable is the first call of q whose key has a free slot, with
// that slot taken (a key is at its MaxConcurrentDials only while a dial
// canceled by Remove is still running, so the scan is short).
func firstStartable[K comparable, C any](q *list.List) *list.Element {
	for el := q.Front(); el != nil; el = el.Next() {
		if el.Value.(*call[K, C]).sem.TryAcquire(1) {
			return el
		}
	}
	return nil
}

// startLocked runs c, whose slots are taken, in the normal lane: it arms
// its deadline and starts its goroutine. Needs lanes.mu (it takes Pool.mu
// inside).
func (p *Pool[K, C]) startLocked(c *call[K, C]) {
	l := &p.lanes
	c.lane = laneNormal
	c.elem = l.running.PushBack(c)
	ctx, cancel := context.WithCancel(p.ctx)
	c.ctx, c.cancel = trace.ContextWithSpan(ctx, c.spanOrNil()), cancel
	if c.canceled { // Remove canceled it while it was queued
		cancel()
	}
	now := time.Now()
	c.started.Store(now.UnixNano())
	c.deadline.Store(now.Add(c.e.set.dialTimeout).UnixNano())
	p.refineLocked(c, now.Add(c.e.set.dialTimeout))
	c.expiry = p.timers.schedule(now.Add(c.e.set.dialTimeout), func(*timer) { p.expire(c) })
	p.dialerAdd(c)
	go p.runDial(c)
}

// cancelCall cancels c's context if it has one (a running dial), and
// marks it canceled.
func (p *Pool[K, C]) cancelCall(c *call[K, C]) {
	p.lanes.mu.Lock()
	defer p.lanes.mu.Unlock()
	c.canceled = true
	if c.cancel != nil {
		c.cancel()
	}
}

// stopExpiryLocked stops c's deadline timer if it has not fired. Needs
// lanes.mu.
func (p *Pool[K, C]) stopExpiryLocked(c *call[K, C]) {
	p.timers.stop(c.expiry)
	c.expiry = nil
}

// armDemoterLocked arms the demotion timer for the oldest normal-lane call
// while calls wait and the normal lane is full; else it stops it. Needs
// lanes.mu (it reads the latency estimate, an atomic).
func (p *Pool[K, C]) armDemoterLocked() {
	l := &p.lanes
	want := !p.closed.Load() && l.queue.Len()+l.suspectQ.Len() > 0 && l.running.Len() > 0 &&
		int64(l.slowRun.Len()) < p.opts.MaxSlowDials
	var at time.Time
	if want {
		oldest := l.running.Front().Value.(*call[K, C])
		at = time.Unix(0, oldest.started.Load()).Add(p.lat.slowAfter(p.opts.MaxWait))
		if l.demoter != nil && at.Equal(l.demoter.at) {
			return // armed for that instant already
		}
	}
	p.timers.stop(l.demoter)
	l.demoter = nil
	if !want {
		return
	}
	l.demoter = p.timers.schedule(at, p.demote)
}

// demote moves every normal-lane call that has run past slowAfter to the
// slow lane, while it has room, and starts queued calls in their place.
func (p *Pool[K, C]) demote(t *timer) {
	l := &p.lanes
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.demoter == t {
		l.demoter = nil // fired: armDemoterLocked arms a new one
	}
	limit := time.Now().Add(-p.lat.slowAfter(p.opts.MaxWait)).UnixNano()
	for el := l.running.Front(); el != nil; {
		c := el.Value.(*call[K, C])
		next := el.Next()
		if c.started.Load() > limit {
			break // started in order: the rest are younger
		}
		if !l.slow.TryAcquire(1) {
			break
		}
		l.running.Remove(el)
		l.total.Release(1)
		if c.suspect {
			l.suspect.Release(1)
		}
		c.lane, c.elem = laneSlow, l.slowRun.PushBack(c)
		el = next
	}
	p.dispatchLocked()
}

// closeLanes closes the pool (Pool.closed, the one closed flag, set under
// lanes.mu and Pool.mu so that no dial starts and no subscriber is counted
// after it), stops all scheduling and drops the calls still queued.
func (p *Pool[K, C]) closeLanes() {
	l := &p.lanes
	l.mu.Lock()
	p.mu.Lock() // track reads closed under it
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
