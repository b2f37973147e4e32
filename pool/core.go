package pool

import (
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/clusterpool/clusterpool/breaker"
)

// The pool's functional core: one cluster's state machine. An entry's
// state (entryState, with the lock-free views client and reject) changes
// only in step, which takes one input, does no I/O, reads no clock (now is
// part of the input), calls no user code, takes no lock, and returns what
// is left to do (effects, carried out by the shell: shell.go). Models:
// kube/shard/ownership.go, and etcd's raft (Step, Ready).

// phase is a cluster's state, read from the fields that hold it:
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

// inputKind is what happened to a cluster; handlers names the step of
// each.
type inputKind uint8

const (
	inMiss      inputKind = iota // a Get found no client and no rejection
	inDialEnded                  // a dial (input.call, released) ended with input.res
	inReport                     // Report fed the outcome input.o
	inProbeDue                   // the probe timer of version input.ver fired
	inProbe                      // Probe
	inConnect                    // Connect
	inRedial                     // Redial
	inRemove                     // Remove
	inClose                      // the pool closed
	inputKinds
)

// input is one thing that happened to a cluster, with all step reads from
// outside the entry.
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
// with the map's new entry, or join call.
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
	handlers[K, C]()[in.kind](e, in, &fx)
	return fx
}

// handlers maps each input to the step that applies it.
func handlers[K comparable, C any]() [inputKinds]func(*entry[K, C], input[K, C], *effects[K, C]) {
	return [inputKinds]func(*entry[K, C], input[K, C], *effects[K, C]){
		inMiss: (*entry[K, C]).miss, inDialEnded: (*entry[K, C]).dialEnded, inReport: (*entry[K, C]).report,
		inProbeDue: (*entry[K, C]).probeDue, inProbe: (*entry[K, C]).probeNow, inConnect: (*entry[K, C]).connect,
		inRedial: (*entry[K, C]).redial, inRemove: (*entry[K, C]).remove, inClose: (*entry[K, C]).close,
	}
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
// launch.
func (e *entry[K, C]) newCall(in input[K, C], ticket breaker.Ticket, probe bool, fx *effects[K, C]) *call[K, C] {
	if e.ls.sem == nil {
		e.ls.sem = semaphore.NewWeighted(e.set.maxDials)
	}
	c := &call[K, C]{e: e, done: make(chan struct{}), launched: make(chan struct{}), gen: e.ls.gen, probe: probe, ticket: ticket,
		sem: e.ls.sem, suspect: probe || e.snapshot(in.now).ConsecutiveFailures > 0}
	e.ls.call = c
	e.ls.pending++
	fx.launch = append(fx.launch, c)
	return c
}

// report feeds a reported outcome to the breaker, unless the key is
// removed or the breaker is not closed.
func (e *entry[K, C]) report(in input[K, C], fx *effects[K, C]) {
	if e.ls.removed || e.reject.Load() != nil {
		return
	}
	e.ls.probes.record(in.o, in.now)
	if tr, changed := e.record(breaker.Ticket{}, in.o, in.now); changed {
		e.apply(tr, nil, fx)
	}
}

// probeDue fires the probe, unless a later version replaced the timer.
func (e *entry[K, C]) probeDue(in input[K, C], fx *effects[K, C]) {
	if in.ver == e.ls.probeVer && e.ls.probeAt != 0 {
		e.ls.probeAt = 0 // fired
		e.probe(in, fx)
	}
}

// probeNow is Probe: an open breaker's probe goes out now (its history
// kept). Nothing else: a probe out already, a closed breaker.
func (e *entry[K, C]) probeNow(in input[K, C], fx *effects[K, C]) {
	if e.reject.Load() == nil || (e.ls.call != nil && e.ls.call.probe) {
		return
	}
	e.ls.brk.Expire(in.now)
	e.setProbe(time.Time{}, fx)
	e.probe(in, fx)
}

// connect is Connect: dial a cluster that is idle or removed. Nothing
// while it is dialing or connected, or while its breaker is not closed:
// its probe comes when due.
func (e *entry[K, C]) connect(in input[K, C], fx *effects[K, C]) {
	e.ls.removed = false
	if e.client.Load() == nil && e.reject.Load() == nil && e.ls.call == nil {
		e.startDial(in, fx)
	}
}

// redial is Redial: the client and the dial or probe in flight are
// dropped (its waiters follow the new dial), the breaker is kept, and the
// cluster is dialed afresh: at once if the breaker is closed, else by its
// probe, brought forward. Nothing for a removed key.
func (e *entry[K, C]) redial(in input[K, C], fx *effects[K, C]) {
	if e.ls.removed {
		return
	}
	e.ls.gen++ // no dial of the key begun before caches or counts
	old := e.ls.call
	if old != nil {
		e.drop(old, nil, fx)
	}
	e.evict(in.now, fx)
	e.event(Redialed, in.now, fx)
	if e.reject.Load() == nil {
		e.startDial(in, fx)
	} else {
		e.probeNow(in, fx)
	}
	if c := e.ls.call; old != nil && c != nil { // else the pool closed: old's end answers
		old.answered = true // with c's result
		old.next.Store(c)
		c.followers = append(append(c.followers, old.followers...), old)
	}
}

// drop cancels c, the joinable dial of e, whose generation is over, and
// gives its waiters err unless nil. A probe's ticket is given back at once,
// so that the breaker grants a new probe.
func (e *entry[K, C]) drop(c *call[K, C], err error, fx *effects[K, C]) {
	fx.cancel = append(fx.cancel, c)
	e.discard(c.ticket)
	c.ticket = breaker.Ticket{}
	if err != nil {
		var zero C
		e.answer(c, zero, err, fx)
	}
	e.ls.call = nil
}

// remove forgets the cluster: a dial in flight is dropped (its waiters get
// ErrRemoved), the client is let go, the breaker and probe log are reset,
// and the entry leaves the map once nothing of it is left (reap).
func (e *entry[K, C]) remove(in input[K, C], fx *effects[K, C]) {
	e.ls.gen++
	if c := e.ls.call; c != nil {
		e.drop(c, &Error{Kind: ErrRemoved, Cluster: e.name}, fx)
	}
	e.setProbe(time.Time{}, fx)
	e.evict(in.now, fx)
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

// close lets go of the client and takes the entry out of the map: the
// pool closed.
func (e *entry[K, C]) close(_ input[K, C], fx *effects[K, C]) {
	if cl := e.client.Swap(nil); cl != nil {
		fx.close = append(fx.close, *cl)
	}
	e.forget(fx)
}

// answer gives c's waiters, and those of the dials c replaced (Redial),
// their result, once.
func (e *entry[K, C]) answer(c *call[K, C], client C, err error, fx *effects[K, C]) {
	if c.answered {
		return
	}
	c.answered = true
	fx.wake = append(fx.wake, wake[K, C]{call: c, client: client, err: err})
	for _, f := range c.followers {
		fx.wake = append(fx.wake, wake[K, C]{call: f, client: client, err: err})
	}
}

// evict lets go of the cached client, if any: OnClose and Disconnected.
func (e *entry[K, C]) evict(at time.Time, fx *effects[K, C]) {
	if cl := e.client.Swap(nil); cl != nil {
		fx.close = append(fx.close, *cl)
		e.event(Disconnected, at, fx)
	}
}

// event records an event of e with e's state after the change so far.
func (e *entry[K, C]) event(t EventType, at time.Time, fx *effects[K, C]) {
	fx.events = append(fx.events, Event[K]{Type: t, Key: e.key, Time: at, Connected: e.client.Load() != nil, Breaker: e.breakerState()})
}

// forget takes e out of the pool's map, once.
func (e *entry[K, C]) forget(fx *effects[K, C]) {
	if !e.ls.dead {
		e.ls.dead = true
		fx.forget = true
	}
}

// reap forgets a removed entry once nothing of it is left (its dial bound
// holds until then).
func (e *entry[K, C]) reap(fx *effects[K, C]) {
	if e.ls.removed && e.ls.pending == 0 && e.ls.probeAt == 0 && e.client.Load() == nil {
		e.forget(fx)
	}
}
