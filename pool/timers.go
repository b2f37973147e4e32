package pool

import (
	"container/heap"
	"sync"
	"time"
)

// timers is the pool's one timer loop, for probes, dial deadlines and
// demotion (modelled on client-go's delaying queue): one heap, earliest
// first, and one goroutine, running only while a timer is scheduled, that
// starts each due func on a goroutine of its own (counted in the pool's
// WaitGroup, no lock held: funcs take locks and run telemetry). timers.mu
// is last in the lock order.
type timers struct {
	mu      sync.Mutex
	due     timerHeap
	wake    chan struct{}   // capacity 1: the earliest timer changed, or close
	running chan struct{}   // while the loop runs: closed when it returns
	closed  bool            // close ran: nothing is scheduled or fired
	wg      *sync.WaitGroup // the pool's: counts the funcs' goroutines
}

// timer is one scheduled func. A stopped timer's func may still run if it
// was due: funcs check that they are current.
type timer struct {
	at   time.Time
	fire func(*timer) // given its timer, to tell whether it is current
	i    int          // index in the heap; -1 once fired or stopped
}

func (t *timers) init(wg *sync.WaitGroup) {
	t.wg = wg
	t.wake = make(chan struct{}, 1)
}

// schedule runs fire at at unless stopped or closed first; nil once
// closed.
func (t *timers) schedule(at time.Time, fire func(*timer)) *timer {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	return t.pushLocked(at, fire)
}

// pushLocked schedules fire at at. Needs timers.mu; t is not closed.
func (t *timers) pushLocked(at time.Time, fire func(*timer)) *timer {
	tm := &timer{at: at, fire: fire}
	heap.Push(&t.due, tm)
	switch {
	case t.running == nil:
		t.running = make(chan struct{})
		go t.loop(t.running)
	case tm.i == 0:
		t.signal()
	}
	return tm
}

// versioned is a timer armed by version (timers.set): its owner decides
// versions under its own lock and arms them after it, in any order; the
// latest wins. Guarded by timers.mu.
type versioned struct {
	t   *timer
	ver uint32
}

// set arms *sp (made if nil) for at with version ver (zero at: disarms),
// unless it holds ver or later already.
func (t *timers) set(sp **versioned, ver uint32, at time.Time, fire func(*timer)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if *sp == nil {
		*sp = &versioned{}
	}
	s := *sp
	if ver <= s.ver {
		return
	}
	s.ver = ver
	if s.t != nil && s.t.i >= 0 {
		heap.Remove(&t.due, s.t.i)
	}
	s.t = nil
	if !at.IsZero() && !t.closed {
		s.t = t.pushLocked(at, fire)
	}
}

// stop unschedules tm (nil: none). Its func may be running already.
func (t *timers) stop(tm *timer) {
	if tm == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tm.i >= 0 {
		heap.Remove(&t.due, tm.i)
	}
}

// close stops the loop and waits for it: no timer fires after it.
func (t *timers) close() {
	t.mu.Lock()
	t.closed = true
	running := t.running
	t.signal()
	t.mu.Unlock()
	if running != nil {
		<-running
	}
}

// signal wakes the loop. Needs timers.mu.
func (t *timers) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// loop fires due timers until none is left or close, then closes done.
func (t *timers) loop(done chan struct{}) {
	clock := time.NewTimer(time.Hour)
	defer clock.Stop()
	for {
		next, ok := t.fireDue(done)
		if !ok {
			return
		}
		clock.Reset(next)
		select {
		case <-clock.C:
		case <-t.wake:
		}
	}
}

// fireDue starts the due funcs and returns how long until the next; false
// if the loop is to return (marked under t.mu: the next schedule starts a
// new one).
func (t *timers) fireDue(done chan struct{}) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	for !t.closed && len(t.due) > 0 && !t.due[0].at.After(now) {
		tm := heap.Pop(&t.due).(*timer)
		t.wg.Add(1) // before close returns: Shutdown waits after it
		go func() {
			defer t.wg.Done()
			tm.fire(tm)
		}()
	}
	if t.closed || len(t.due) == 0 {
		t.running = nil
		close(done)
		return 0, false
	}
	return t.due[0].at.Sub(now), true
}

// timerHeap orders timers by when they are due (container/heap).
type timerHeap []*timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}

func (h *timerHeap) Push(x any) {
	tm := x.(*timer)
	tm.i = len(*h)
	*h = append(*h, tm)
}

func (h *timerHeap) Pop() any {
	old := *h
	tm := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	tm.i = -1
	return tm
}
