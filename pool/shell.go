package pool

import (
	"context"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// effects is what one step of an entry leaves to do (see core.go). The
// shell does it in the order of the fields: with the entry's lock held
// (Pool.view), the step's view (transitions to observe, events into the
// entry's outbox in the key's order, waiters woken, the entry deleted from
// the map); after the lock (Pool.run), what runs user code (OnClose, the
// tracer's and meter's processors), touches the lanes or timers, or starts
// a dial (launch before the notes' telemetry: a probe's transition is
// noted on its span).
type effects[K comparable, C any] struct {
	notes  []note[K, C] // breaker transitions: observe (view), telemetry (run)
	events []Event[K]
	wake   []wake[K, C]
	forget bool          // delete the entry from the map
	forgot breaker.State // its breaker state then, for the cluster gauge
	drain  bool          // this step made the outbox: publish it

	sample time.Duration // a successful dial's duration (0: none)
	probe  *probeTimer   // arm or disarm the probe timer
	launch []*call[K, C] // new dials: start their span, queue them
	cancel []*call[K, C] // dials dropped (Pool.cancelDial)
	ended  []ended[K, C] // settled dials: end their span, cancel their context
	close  []C           // clients for OnClose
	reply  reply[K, C]   // inMiss: what the Get does
}

// wake is a call's result for its waiters.
type wake[K comparable, C any] struct {
	call   *call[K, C]
	client C
	err    error
}

// note is a breaker transition to record on call's span (nil: none).
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
// flag, holds e.mu around the step and its view, runs the rest after the
// lock, and returns the step's reply (for inMiss).
func (p *Pool[K, C]) step(e *entry[K, C], in input[K, C]) reply[K, C] {
	e.mu.Lock()
	in.now, in.closed = time.Now(), p.closed.Load() // under the lock: the key's steps see time advance
	fx := e.step(in)
	p.view(e, &fx)
	e.mu.Unlock()
	p.run(e, &fx)
	return fx.reply
}

// view carries out the step's view and queues its events. Needs e.mu.
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

// run carries out fx for e with no pool lock held, in the order of
// effects' fields.
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
		p.cancelDial(c)
	}
	for _, n := range fx.notes {
		p.rec.Transition(n.call.spanOrNil(), e.name, n.tr.From.String(), n.tr.To.String(), n.tr.OpenFor)
	}
	for _, d := range fx.ended {
		p.rec.EndDial(d.call.spanOrNil(), d.res, d.took, d.err)
		p.cancelDial(d.call) // settled: its context's resources go
	}
	if fx.forget {
		p.rec.ClusterRemoved(fx.forgot.String())
	}
	for _, cl := range fx.close {
		p.closeClient(e.key, cl)
	}
}

// drain publishes e's outbox until it is empty, with no lock held. Only the
// step that made the outbox calls it: one goroutine at a time publishes a
// key's events, in order.
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

// launch starts c's span and queues it in the lanes; if the pool closed or
// c was canceled meanwhile, c is dropped.
func (p *Pool[K, C]) launch(c *call[K, C]) {
	_, span := p.rec.StartDial(context.Background(), c.e.name, c.probe)
	c.span.Store(&span)
	defer close(c.launched)
	if p.submit(c) {
		return
	}
	p.finish(c, result[C]{end: endDropped})
}
