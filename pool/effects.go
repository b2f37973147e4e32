package pool

import (
	"context"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// effects is what one step of an entry leaves to do (see core.go). The
// shell carries out wake and forget before it releases the entry's lock:
// they are the lock-free view of the change (waiters' results, the map).
// Events are queued in the entry's outbox under the lock and published
// after it, in the key's order of changes (Pool.drain). Everything else
// runs after the lock too: whatever runs user code (OnClose, the
// TracerProvider's and MeterProvider's span processors and instruments),
// touches the lanes or the timers, or starts a dial.
type effects[K comparable, C any] struct {
	// Before the lock is released.
	events []Event[K]
	wake   []wake[K, C]
	forget bool // delete the entry from the map (and update the gauge)
	drain  bool // this step queued the first events of the entry's outbox: publish them
	// forgot: the entry left the map in this breaker state (for the
	// cluster gauge, after the lock).
	forgot breaker.State

	// After it.
	close []C // clients for OnClose
	// launch: new dials registered on their entry, to get their span and
	// be queued in the lanes (or be dropped if the pool closed meanwhile).
	launch []*call[K, C]
	// cancel: dials Remove canceled: cancel their context, or take them
	// out of the queue and settle them as dropped.
	cancel []*call[K, C]
	notes  []note[K, C] // breaker transitions for telemetry
	ended  []ended[K, C]
	done   *call[K, C] // a settled call whose context to cancel
	probe  *probeTimer // arm (or disarm) the entry's probe timer
	// sample is a successful dial's duration for the latency estimate; 0
	// if none.
	sample time.Duration

	reply reply[K, C] // inMiss: what the Get does
}

// wake is a call's result for its waiters.
type wake[K comparable, C any] struct {
	call   *call[K, C]
	client C
	err    error
}

// note is a breaker transition to record on the span of call (nil: no
// span).
type note[K comparable, C any] struct {
	call *call[K, C]
	tr   breaker.Transition
}

// ended is a dial whose span ends with res.
type ended[K comparable, C any] struct {
	call *call[K, C]
	res  tracing.DialResult
	took time.Duration
	err  error
}

// probeTimer is a version of an entry's probe timer: due at at, or
// disarmed (zero at).
type probeTimer struct {
	ver uint32
	at  time.Time
}

// step is the shell around entry.step: it reads the clock and the closed
// flag, holds e.mu around the step and its view (events, waiters, the
// map), and runs the other effects once the lock is released. It returns
// the step's reply (for inMiss).
func (p *Pool[K, C]) step(e *entry[K, C], in input[K, C]) reply[K, C] {
	e.mu.Lock()
	in.now, in.closed = time.Now(), p.closed.Load() // under the lock: the key's steps see time advance
	fx := e.step(in)
	p.view(e, &fx)
	e.mu.Unlock()
	p.run(e, &fx)
	return fx.reply
}

// view carries out the effects that are the step's lock-free view, and
// queues its events. Needs e.mu (the map's own lock is taken inside; no
// user code).
func (p *Pool[K, C]) view(e *entry[K, C], fx *effects[K, C]) {
	if p.observe != nil {
		for _, n := range fx.notes {
			p.observe(e.key, n.tr)
		}
	}
	if len(fx.events) > 0 {
		if fx.drain = e.ls.outbox == nil; fx.drain {
			e.ls.outbox = new([]Event[K])
		}
		*e.ls.outbox = append(*e.ls.outbox, fx.events...)
	}
	for _, w := range fx.wake {
		w.call.client, w.call.err = w.client, w.err
		close(w.call.done)
	}
	if fx.forget {
		fx.forget = p.entries.CompareAndDelete(e.key, e) // false: deleted already
		fx.forgot = e.breakerState()
	}
}

// run carries out fx for e with no pool lock held: new dials are launched
// first (so that a probe's transition is noted on its span), then
// telemetry, then OnClose.
func (p *Pool[K, C]) run(e *entry[K, C], fx *effects[K, C]) {
	if fx.drain {
		p.drain(e)
	}
	if fx.sample != 0 {
		p.lat.observe(fx.sample)
	}
	if fx.probe != nil {
		p.armProbe(e, *fx.probe)
	}
	for _, c := range fx.launch {
		p.launch(c)
	}
	for _, c := range fx.cancel {
		p.cancelCall(c)
		if p.dequeue(c) { // never started: settle it here
			p.finish(c, result[C]{end: endDropped})
		}
	}
	for _, n := range fx.notes {
		p.rec.Transition(n.call.spanOrNil(), e.name, n.tr.From.String(), n.tr.To.String(), n.tr.OpenFor)
	}
	for _, d := range fx.ended {
		p.rec.EndDial(d.call.spanOrNil(), d.res, d.took, d.err)
	}
	if fx.done != nil {
		p.cancelCall(fx.done)
	}
	if fx.forget {
		p.rec.ClusterRemoved(fx.forgot.String())
	}
	p.closeAll(e.key, fx.close)
}

// drain publishes e's outbox until it is empty, with no entry lock held.
// Only the step that found the outbox empty and not being drained calls
// it, so one goroutine at a time publishes a key's events, in order.
func (p *Pool[K, C]) drain(e *entry[K, C]) {
	for {
		e.mu.Lock()
		evs := *e.ls.outbox
		*e.ls.outbox = nil
		if len(evs) == 0 {
			e.ls.outbox = nil // drained
		}
		e.mu.Unlock()
		if len(evs) == 0 {
			return
		}
		for _, ev := range evs {
			p.publish(ev)
		}
	}
}

// armProbe arms e's probe timer for version t (see entry.setProbe).
func (p *Pool[K, C]) armProbe(e *entry[K, C], t probeTimer) {
	p.timers.set(&e.probeTimer, t.ver, t.at, func(*timer) {
		p.step(e, input[K, C]{kind: inProbeDue, ver: t.ver})
	})
}

// launch starts c's span, with no lock held, and queues it in the lanes;
// if the pool closed or Remove canceled c meanwhile, c is dropped.
func (p *Pool[K, C]) launch(c *call[K, C]) {
	_, span := p.rec.StartDial(context.Background(), c.e.name, c.probe)
	c.span.Store(&span)
	defer close(c.launched)
	if p.submit(c) {
		return
	}
	p.finish(c, result[C]{end: endDropped})
}
