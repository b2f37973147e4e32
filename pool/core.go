package pool

import (
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// The pool's functional core: one cluster's state machine. An entry's
// state (entryState, with the lock-free views client and reject) changes
// only in step, which takes one input, does no I/O, reads no clock (now is
// part of the input), calls no user code and takes no lock, and returns
// what the change leaves to do (effects). The shell (Pool.step) holds the
// entry's lock around step alone, publishes its events and wakes its
// waiters before releasing it (their order is the key's order of
// changes), and runs every other effect with no pool lock held. Models:
// kube/shard/ownership.go in this repository, and etcd's raft (Step,
// Ready).

// phase is a cluster's state, read from the fields that hold it (nothing
// stores it twice):
//
//	idle       no client, no dial callers can join, breaker closed
//	dialing    a dial callers join is queued or running, breaker closed
//	connected  a client is cached (breaker closed)
//	open       the breaker is open (or half-open, its probe not yet out):
//	           Gets are rejected, a probe is scheduled or due
//	probing    the breaker is half-open and its probe is out
//	removed    Remove ran and nothing used the key since
//	gone       the entry left the pool's map (a Get that finds it retries)
type phase uint8

const (
	phaseIdle phase = iota
	phaseDialing
	phaseConnected
	phaseOpen
	phaseProbing
	phaseRemoved
	phaseGone
)

var phaseNames = [...]string{"idle", "dialing", "connected", "open", "probing", "removed", "gone"}

func (ph phase) String() string { return phaseNames[ph] }

// phase is e's phase. Needs e.mu.
func (e *entry[K, C]) phase() phase {
	switch {
	case e.ls.dead:
		return phaseGone
	case e.ls.removed:
		return phaseRemoved
	case e.client.Load() != nil:
		return phaseConnected
	case e.reject.Load() != nil && e.ls.call != nil && e.ls.call.probe:
		return phaseProbing
	case e.reject.Load() != nil:
		return phaseOpen
	case e.ls.call != nil:
		return phaseDialing
	}
	return phaseIdle
}

// inputKind is what happened to a cluster.
type inputKind uint8

const (
	// inMiss: a Get found no client and no rejection; it joins the dial
	// in flight or starts one (effects.reply).
	inMiss inputKind = iota
	// inDialEnded: a dial (input.call, whose lane is released) ended with
	// input.res.
	inDialEnded
	// inReport: Report fed the outcome input.o of using the client.
	inReport
	// inProbeDue: the probe timer of version input.ver fired.
	inProbeDue
	// inProbe: Probe asked to try the cluster now.
	inProbe
	// inRemove: Remove.
	inRemove
	// inClose: the pool closed; the entry lets go of its client and
	// leaves the map.
	inClose
)

// input is one thing that happened to a cluster, with everything step
// reads from outside the entry.
type input[K comparable, C any] struct {
	kind   inputKind
	now    time.Time
	closed bool // the pool is closed
	call   *call[K, C]
	res    result[C]
	o      breaker.Outcome
	ver    uint32
}

// reply is what a Get does after inMiss: take client, return err, retry
// with the map's new entry (the one it found is gone), or join call.
type reply[K comparable, C any] struct {
	client   *C
	err      error
	retry    bool
	call     *call[K, C]
	lastTook time.Duration // how long the key's last dial took (0: none yet)
}

// step applies in to e and returns what is left to do. Needs e.mu.
func (e *entry[K, C]) step(in input[K, C]) effects[K, C] {
	var fx effects[K, C]
	if e.ls.dead && in.kind != inDialEnded {
		fx.reply.retry = true // every other input is for the map's entry
		return fx
	}
	switch in.kind {
	case inMiss:
		e.miss(in, &fx)
	case inDialEnded:
		e.dialEnded(in, &fx)
	case inReport:
		e.report(in, &fx)
	case inProbeDue:
		if in.ver == e.ls.probeVer && e.ls.probeAt != 0 {
			e.ls.probeAt = 0 // fired
			e.probe(in, &fx)
		}
	case inProbe:
		e.probeNow(in, &fx)
	case inRemove:
		e.remove(in, &fx)
	case inClose:
		if cl := e.client.Swap(nil); cl != nil {
			fx.close = append(fx.close, *cl)
		}
		e.forget(&fx)
	}
	return fx
}

// miss answers a Get that found no client and no rejection (one may have
// come since), starting the dial it joins if none is in flight.
func (e *entry[K, C]) miss(in input[K, C], fx *effects[K, C]) {
	if cl := e.client.Load(); cl != nil {
		fx.reply.client = cl
		return
	}
	if rej := e.reject.Load(); rej != nil {
		fx.reply.err = rej
		return
	}
	e.ls.removed = false
	if e.ls.call == nil {
		e.startDial(in, fx)
	}
	fx.reply.call, fx.reply.lastTook = e.ls.call, e.ls.lastTook
}

// startDial registers the dial callers will join, for the shell to launch.
// The breaker must be closed (e.reject is nil): it always grants.
func (e *entry[K, C]) startDial(in input[K, C], fx *effects[K, C]) {
	var ticket breaker.Ticket
	if e.ls.brk != nil {
		ticket, _ = e.ls.brk.Allow(in.now) // closed: granted
	}
	e.newCall(in, ticket, false, fx)
}

// newCall registers a new dial of e as its joinable call, for the shell to
// launch (start its span and queue it in the lanes).
func (e *entry[K, C]) newCall(in input[K, C], ticket breaker.Ticket, probe bool, fx *effects[K, C]) *call[K, C] {
	if e.ls.sem == nil {
		e.ls.sem = newKeySem(e.set)
	}
	c := &call[K, C]{e: e, done: make(chan struct{}), launched: make(chan struct{}), gen: e.ls.gen, probe: probe, ticket: ticket,
		sem: e.ls.sem, suspect: probe || e.snapshot(in.now).ConsecutiveFailures > 0}
	e.ls.call = c
	e.ls.pending++
	fx.launch = append(fx.launch, c)
	return c
}

// report feeds a reported outcome to the breaker. It does nothing for a
// key removed and not used since, or while the breaker is not closed.
func (e *entry[K, C]) report(in input[K, C], fx *effects[K, C]) {
	if e.ls.removed || e.reject.Load() != nil {
		return
	}
	e.ls.probes.record(in.o, in.now)
	if tr, changed := e.record(breaker.Ticket{}, in.o, in.now); changed {
		e.apply(tr, nil, fx)
	}
}

// probeNow is Probe: bring an open breaker's probe forward (unless it is
// out), or dial a cluster that is neither connected nor dialing.
func (e *entry[K, C]) probeNow(in input[K, C], fx *effects[K, C]) {
	e.ls.removed = false
	switch {
	case e.client.Load() != nil: // connected
	case e.reject.Load() == nil: // closed breaker: dial unless a dial is in flight
		if e.ls.call == nil {
			e.startDial(in, fx)
		}
	case e.ls.call != nil && e.ls.call.probe: // the probe is out already
	default:
		e.ls.brk.Expire(in.now)
		e.setProbe(time.Time{}, fx)
		e.probe(in, fx)
	}
}

// remove forgets the cluster: a dial in flight is canceled (the shell
// takes it out of the queue or cancels its context) and its waiters get
// ErrRemoved, the client is let go, the breaker and probe log are reset,
// and the entry leaves the map once nothing of it is left (reap).
func (e *entry[K, C]) remove(in input[K, C], fx *effects[K, C]) {
	e.ls.gen++
	if c := e.ls.call; c != nil {
		fx.cancel = append(fx.cancel, c)
		var zero C
		e.answer(c, zero, &Error{Kind: ErrRemoved, Cluster: e.name}, fx)
		e.ls.call = nil
	}
	e.setProbe(time.Time{}, fx)
	if cl := e.client.Swap(nil); cl != nil {
		fx.close = append(fx.close, *cl)
		e.event(Disconnected, in.now, fx)
	}
	if from := e.breakerState(); from != breaker.StateClosed {
		fx.notes = append(fx.notes, note[K, C]{tr: breaker.Transition{From: from, To: breaker.StateClosed, At: in.now}})
	}
	e.ls.brk = nil
	e.reject.Store(nil)
	e.ls.probes = probeLog{}
	e.ls.removed = true
	e.event(Removed, in.now, fx)
	e.reap(fx)
}

// answer gives c's waiters their result, once; the shell wakes them
// before it releases the entry's lock.
func (e *entry[K, C]) answer(c *call[K, C], client C, err error, fx *effects[K, C]) {
	if c.answered {
		return
	}
	c.answered = true
	fx.wake = append(fx.wake, wake[K, C]{call: c, client: client, err: err})
}

// event records an event of e with e's state after the change so far.
func (e *entry[K, C]) event(t EventType, at time.Time, fx *effects[K, C]) {
	fx.events = append(fx.events, Event[K]{Type: t, Key: e.key, Time: at, Connected: e.client.Load() != nil, Breaker: e.breakerState()})
}

// forget takes e out of the pool, once: the shell deletes it from the map
// (and updates the cluster gauge) before it releases the lock.
func (e *entry[K, C]) forget(fx *effects[K, C]) {
	if !e.ls.dead {
		e.ls.dead = true
		fx.forget = true
	}
}

// reap forgets a removed entry once nothing of it is left, so that its dial
// bound holds until then.
func (e *entry[K, C]) reap(fx *effects[K, C]) {
	if e.ls.removed && e.ls.pending == 0 && e.ls.probeAt == 0 && e.client.Load() == nil {
		e.forget(fx)
	}
}
