package pool

import (
	"context"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// effects is what a change of one entry leaves for after the entry's lock:
// everything that runs user code (OnClose, the TracerProvider's and
// MeterProvider's span processors and instruments) or may start a dial.
// The …Locked functions that change an entry collect into it; the caller
// releases e.mu and calls run. Events are not effects: they are published
// under e.mu (publishing runs no user code and never blocks), so that each
// key's events reach subscribers in the order of its changes.
type effects[K comparable, C any] struct {
	close []C // clients for OnClose
	// launch: new dials registered on their entry, to get their span and
	// be queued in the lanes (or be dropped if the pool closed meanwhile).
	launch []*call[K, C]
	notes  []note[K, C] // breaker transitions for telemetry
	ended  []ended[K, C]
	cancel *call[K, C] // a settled call whose context to cancel
	// sample is a successful dial's duration for the latency estimate; 0
	// if none.
	sample time.Duration
	// forgot: the entry left the map, in that breaker state (for the
	// cluster gauge).
	forgot *breaker.State
	name   string // the entry's formatted key, for notes
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

// run carries out fx for key with no pool lock held: new dials are
// launched first (so that a probe's transition is noted on its span),
// then telemetry, then OnClose.
func (p *Pool[K, C]) run(key K, fx *effects[K, C]) {
	if fx.sample != 0 {
		p.lat.observe(fx.sample)
	}
	for _, c := range fx.launch {
		p.launch(c)
	}
	for _, n := range fx.notes {
		p.rec.Transition(n.call.spanOrNil(), fx.name, n.tr.From.String(), n.tr.To.String(), n.tr.OpenFor)
	}
	for _, d := range fx.ended {
		p.rec.EndDial(d.call.spanOrNil(), d.res, d.took, d.err)
	}
	if fx.cancel != nil {
		p.cancelCall(fx.cancel)
	}
	if fx.forgot != nil {
		p.rec.ClusterRemoved(fx.forgot.String())
	}
	p.closeAll(key, fx.close)
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
