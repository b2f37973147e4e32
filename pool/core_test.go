package pool

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// coreRig drives one entry's functional core by hand: no Pool, no clock,
// no goroutine. Settings: 2 failures open the breaker, 1 s first open
// period (exact), 10 s DialTimeout, 1 s MaxWait.
type coreRig struct {
	t     *testing.T
	e     *entry[string, *client]
	now   time.Time
	dials []*call[string, *client] // launched and not ended, oldest first
}

func newCoreRig(t *testing.T) *coreRig {
	t.Helper()
	o := Options[string, *client]{MaxWait: time.Second, DialTimeout: 10 * time.Second,
		Breaker: breaker.Settings{ConsecutiveFailures: 2, OpenTimeout: time.Second, DisableJitter: true}}
	o = o.withDefaults()
	set, err := o.settingsFor(Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	return &coreRig{t: t, e: &entry[string, *client]{key: "k", name: "k", set: set}, now: time.Unix(1000, 0)}
}

// step feeds in at the rig's clock, checks the core's invariants after
// it, and returns its effects.
func (r *coreRig) step(in input[string, *client]) effects[string, *client] {
	r.t.Helper()
	in.now = r.now
	r.e.mu.Lock()
	defer r.e.mu.Unlock()
	fx := r.e.step(in)
	r.dials = append(r.dials, fx.launch...)
	if err := r.e.invariants(r.now); err != nil {
		r.t.Fatalf("after input %d: %v", in.kind, err)
	}
	return fx
}

// invariants are the core's promises about its own state. Needs e.mu.
func (e *entry[K, C]) invariants(now time.Time) error {
	rej, st := e.reject.Load(), breaker.StateClosed
	if e.ls.brk != nil {
		st = e.ls.brk.State(now)
	}
	switch {
	case e.client.Load() != nil && rej != nil:
		return errors.New("connected and rejecting")
	case (rej != nil) != (st != breaker.StateClosed) && !e.ls.dead:
		return fmt.Errorf("rejection %v with the breaker %v", rej != nil, st)
	case e.ls.call != nil && e.ls.pending == 0, e.ls.pending < 0:
		return fmt.Errorf("call %v with %d dials pending", e.ls.call != nil, e.ls.pending)
	case (e.ls.sem != nil) != (e.ls.pending > 0):
		return fmt.Errorf("semaphore %v with %d dials pending", e.ls.sem != nil, e.ls.pending)
	case e.ls.probeAt != 0 && rej == nil:
		return errors.New("a probe scheduled with the breaker closed")
	case e.ls.call != nil && e.ls.call.probe && (st != breaker.StateHalfOpen || rej == nil || rej.state != breaker.StateHalfOpen):
		return fmt.Errorf("a probe out with the breaker %v", st)
	case e.ls.removed && (e.client.Load() != nil || rej != nil || e.ls.call != nil || e.ls.brk != nil):
		return errors.New("removed, and holding a client, a dial or a breaker")
	}
	return nil
}

// in builds the rig's states from the idle one, by inputs only.
func (r *coreRig) to(ph phase) {
	r.t.Helper()
	switch ph {
	case phaseIdle:
	case phaseDialing:
		r.step(input[string, *client]{kind: inMiss})
	case phaseConnected:
		r.to(phaseDialing)
		r.end(true)
	case phaseOpen:
		r.step(input[string, *client]{kind: inReport, o: breaker.Failure})
		r.step(input[string, *client]{kind: inReport, o: breaker.Failure})
	case phaseProbing:
		r.to(phaseOpen)
		r.now = time.Unix(0, r.e.ls.probeAt)
		r.step(input[string, *client]{kind: inProbeDue, ver: r.e.ls.probeVer})
	case phaseRemoved:
		r.to(phaseDialing)
		r.step(input[string, *client]{kind: inRemove})
	case phaseGone:
		r.step(input[string, *client]{kind: inRemove})
	}
	if got := r.e.phase(); got != ph {
		r.t.Fatalf("building %v: at %v", ph, got)
	}
}

// end ends the entry's oldest pending dial: a client, or a refused
// connection.
func (r *coreRig) end(ok bool) effects[string, *client] {
	return r.endAs(ok, r.dials[0].gen != r.e.ls.gen)
}

// endAs ends the entry's oldest pending dial, canceled (Remove or Redial
// canceled its context) or not.
func (r *coreRig) endAs(ok, canceled bool) effects[string, *client] {
	c := r.dials[0]
	r.dials = r.dials[1:]
	res := result[*client]{end: endReturned, err: errRefused, o: breaker.Failure, took: 100 * time.Millisecond}
	if ok {
		res = result[*client]{end: endReturned, client: &client{key: "k"}, took: 100 * time.Millisecond}
	}
	if canceled {
		res.end = endReturnedCanceled
	}
	return r.step(input[string, *client]{kind: inDialEnded, call: c, res: res})
}

// summary renders fx for the table: what the shell is left to do.
func summary(fx effects[string, *client]) string {
	var s []string
	for _, ev := range fx.events {
		s = append(s, ev.Type.String())
	}
	add := func(b bool, what string) {
		if b {
			s = append(s, what)
		}
	}
	add(len(fx.launch) > 0, "launch")
	add(len(fx.cancel) > 0, "cancel")
	add(len(fx.close) > 0, "OnClose")
	for _, w := range fx.wake {
		if w.err != nil {
			s = append(s, "wake:"+strings.TrimPrefix(errKind(w.err), "pool: "))
		} else {
			s = append(s, "wake:client")
		}
	}
	if fx.probe != nil {
		s = append(s, map[bool]string{true: "probe-off", false: "probe-on"}[fx.probe.at.IsZero()])
	}
	add(fx.forget, "forget")
	add(fx.reply.retry, "retry")
	add(fx.reply.client != nil, "reply:client")
	add(fx.reply.err != nil, "reply:rejected")
	add(fx.reply.call != nil, "reply:join")
	return strings.Join(s, " ")
}

func errKind(err error) string {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Kind.Error()
	}
	return err.Error()
}

// The whole per-cluster core as a table: every phase × every input, the
// phase it leads to and what it leaves the shell to do. The core's
// invariants are checked after every step (coreRig.step). Connect dials
// only an idle (or removed) cluster and never shortens a backoff; Redial
// drops the client and the dial in flight, keeps the breaker and sends no
// Removed; Probe only brings an open breaker's probe forward.
func TestStepTable(t *testing.T) {
	type in struct {
		name string
		feed func(r *coreRig) effects[string, *client]
	}
	miss := in{"miss", func(r *coreRig) effects[string, *client] { return r.step(input[string, *client]{kind: inMiss}) }}
	dialOK := in{"dial ok", func(r *coreRig) effects[string, *client] { return r.end(true) }}
	dialErr := in{"dial failed", func(r *coreRig) effects[string, *client] { return r.end(false) }}
	report := in{"report failure", func(r *coreRig) effects[string, *client] {
		return r.step(input[string, *client]{kind: inReport, o: breaker.Failure})
	}}
	trip := in{"report trip", func(r *coreRig) effects[string, *client] {
		return r.step(input[string, *client]{kind: inReport, o: breaker.Trip})
	}}
	tripThenOK := in{"report trip, the dial ends", func(r *coreRig) effects[string, *client] {
		r.step(input[string, *client]{kind: inReport, o: breaker.Trip})
		return r.end(true)
	}}
	due := in{"probe due", func(r *coreRig) effects[string, *client] {
		if r.e.ls.probeAt != 0 {
			r.now = time.Unix(0, r.e.ls.probeAt)
		}
		return r.step(input[string, *client]{kind: inProbeDue, ver: r.e.ls.probeVer})
	}}
	probe := in{"probe", func(r *coreRig) effects[string, *client] { return r.step(input[string, *client]{kind: inProbe}) }}
	connect := in{"connect", func(r *coreRig) effects[string, *client] { return r.step(input[string, *client]{kind: inConnect}) }}
	redial := in{"redial", func(r *coreRig) effects[string, *client] { return r.step(input[string, *client]{kind: inRedial}) }}
	// The dial Redial dropped ends: canceled, or with a client returned
	// before its cancel took effect. Neither is cached nor counted.
	redialThenEnd := func(name string, ok, canceled bool) in {
		return in{name, func(r *coreRig) effects[string, *client] {
			r.step(input[string, *client]{kind: inRedial})
			return r.endAs(ok, canceled)
		}}
	}
	redialCanceled := redialThenEnd("redial, the old dial ends", false, true)
	redialRaced := redialThenEnd("redial, the old dial returns a client", true, false)
	// The dropped dial's waiters get the new dial's result.
	redialNewOK := in{"redial, the new dial succeeds", func(r *coreRig) effects[string, *client] {
		r.step(input[string, *client]{kind: inRedial})
		r.dials = r.dials[1:]
		return r.end(true)
	}}
	remove := in{"remove", func(r *coreRig) effects[string, *client] { return r.step(input[string, *client]{kind: inRemove}) }}
	closing := in{"close", func(r *coreRig) effects[string, *client] {
		return r.step(input[string, *client]{kind: inClose, closed: true})
	}}

	cases := []struct {
		from phase
		in   in
		to   phase
		fx   string
	}{
		{phaseIdle, miss, phaseDialing, "launch reply:join"},
		{phaseIdle, report, phaseIdle, ""},
		{phaseIdle, trip, phaseOpen, "BreakerOpened probe-on"},
		{phaseIdle, due, phaseIdle, ""},
		{phaseIdle, probe, phaseIdle, ""},
		{phaseIdle, connect, phaseDialing, "launch"},
		{phaseIdle, redial, phaseDialing, "Redialed launch"},
		{phaseIdle, remove, phaseGone, "Removed forget"},
		{phaseIdle, closing, phaseGone, "forget"},

		{phaseDialing, miss, phaseDialing, "reply:join"},
		{phaseDialing, dialOK, phaseConnected, "Connected wake:client"},
		{phaseDialing, dialErr, phaseIdle, "DialFailed wake:dial failed"},
		{phaseDialing, report, phaseDialing, ""},
		{phaseDialing, trip, phaseOpen, "BreakerOpened probe-on"},
		{phaseDialing, tripThenOK, phaseOpen, "OnClose wake:circuit open"},
		{phaseDialing, due, phaseDialing, ""},
		{phaseDialing, probe, phaseDialing, ""},
		{phaseDialing, connect, phaseDialing, ""},
		{phaseDialing, redial, phaseDialing, "Redialed launch cancel"},
		{phaseDialing, redialCanceled, phaseDialing, ""},
		{phaseDialing, redialRaced, phaseDialing, "OnClose"},
		{phaseDialing, redialNewOK, phaseConnected, "Connected wake:client wake:client"},
		{phaseDialing, remove, phaseRemoved, "Removed cancel wake:cluster removed"},
		{phaseDialing, closing, phaseGone, "forget"},

		{phaseConnected, miss, phaseConnected, "reply:client"},
		{phaseConnected, report, phaseConnected, ""},
		{phaseConnected, trip, phaseOpen, "Disconnected BreakerOpened OnClose probe-on"},
		{phaseConnected, due, phaseConnected, ""},
		{phaseConnected, probe, phaseConnected, ""},
		{phaseConnected, connect, phaseConnected, ""},
		{phaseConnected, redial, phaseDialing, "Disconnected Redialed launch OnClose"},
		{phaseConnected, remove, phaseGone, "Disconnected Removed OnClose forget"},
		{phaseConnected, closing, phaseGone, "OnClose forget"},

		{phaseOpen, miss, phaseOpen, "reply:rejected"},
		{phaseOpen, report, phaseOpen, ""},
		{phaseOpen, trip, phaseOpen, ""},
		{phaseOpen, due, phaseProbing, "BreakerHalfOpen launch"},
		{phaseOpen, probe, phaseProbing, "BreakerHalfOpen launch probe-off"},
		{phaseOpen, connect, phaseOpen, ""},
		{phaseOpen, redial, phaseProbing, "Redialed BreakerHalfOpen launch probe-off"},
		{phaseOpen, remove, phaseGone, "Removed probe-off forget"},
		{phaseOpen, closing, phaseGone, "forget"},

		{phaseProbing, miss, phaseProbing, "reply:rejected"},
		{phaseProbing, dialOK, phaseConnected, "BreakerClosed Connected wake:client"},
		{phaseProbing, dialErr, phaseOpen, "BreakerOpened wake:dial failed probe-on"},
		{phaseProbing, report, phaseProbing, ""},
		{phaseProbing, trip, phaseProbing, ""},
		{phaseProbing, due, phaseProbing, ""},
		{phaseProbing, probe, phaseProbing, ""},
		{phaseProbing, connect, phaseProbing, ""},
		{phaseProbing, redial, phaseProbing, "Redialed launch cancel"},
		{phaseProbing, redialCanceled, phaseProbing, ""},
		{phaseProbing, redialRaced, phaseProbing, "OnClose"},
		{phaseProbing, remove, phaseRemoved, "Removed cancel wake:cluster removed"},
		{phaseProbing, closing, phaseGone, "forget"},

		{phaseRemoved, miss, phaseDialing, "launch reply:join"},
		{phaseRemoved, dialOK, phaseGone, "OnClose forget"},
		{phaseRemoved, dialErr, phaseGone, "forget"},
		{phaseRemoved, report, phaseRemoved, ""},
		{phaseRemoved, trip, phaseRemoved, ""},
		{phaseRemoved, due, phaseRemoved, ""},
		{phaseRemoved, probe, phaseRemoved, ""},
		{phaseRemoved, connect, phaseDialing, "launch"},
		{phaseRemoved, redial, phaseRemoved, ""},
		{phaseRemoved, remove, phaseRemoved, "Removed"},
		{phaseRemoved, closing, phaseGone, "forget"},

		{phaseGone, miss, phaseGone, "retry"},
		{phaseGone, due, phaseGone, "retry"},
		{phaseGone, report, phaseGone, "retry"},
		{phaseGone, trip, phaseGone, "retry"},
		{phaseGone, probe, phaseGone, "retry"},
		{phaseGone, connect, phaseGone, "retry"},
		{phaseGone, redial, phaseGone, "retry"},
		{phaseGone, remove, phaseGone, "retry"},
		{phaseGone, closing, phaseGone, "retry"},
	}
	for _, tc := range cases {
		t.Run(tc.from.String()+"/"+tc.in.name, func(t *testing.T) {
			r := newCoreRig(t)
			r.to(tc.from)
			fx := tc.in.feed(r)
			if got := r.e.phase(); got != tc.to {
				t.Errorf("phase %v, want %v", got, tc.to)
			}
			if got := summary(fx); got != tc.fx {
				t.Errorf("effects %q, want %q", got, tc.fx)
			}
		})
	}
}

// Redial keeps the breaker's history, where Remove resets it: the probe
// it brings forward fails into the next, doubled open period; a probe it
// drops is not counted, and the new probe decides.
func TestRedialKeepsBreaker(t *testing.T) {
	redial := input[string, *client]{kind: inRedial}
	r := newCoreRig(t)
	r.to(phaseOpen)
	r.step(redial)
	r.end(false)
	if s := r.e.snapshot(r.now); s.Opens != 2 || !s.OpenUntil.Equal(r.now.Add(2*time.Second)) {
		t.Fatalf("the redialed probe failed: %+v, want the second open period, of 2s", s)
	}

	r = newCoreRig(t)
	r.to(phaseProbing)
	r.step(redial)
	if fx := r.end(false); len(fx.events) != 0 || r.e.phase() != phaseProbing {
		t.Fatalf("the dropped probe failed: events %v, phase %v; want none, probing", summary(fx), r.e.phase())
	}
	if fx := r.end(true); summary(fx) != "BreakerClosed Connected wake:client wake:client" || r.e.phase() != phaseConnected {
		t.Fatalf("the new probe succeeded: %q, phase %v", summary(fx), r.e.phase())
	}
}

// The core does no I/O, reads no clock, calls no user code and takes no
// lock: its files call nothing of the Pool (the shell), start no
// goroutine, send on and close no channel, and call no clock or lock.
func TestCoreIsPure(t *testing.T) {
	clock := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
		"AfterFunc": true, "NewTimer": true, "Tick": true}
	locks := map[string]bool{"Lock": true, "Unlock": true, "RLock": true, "TryLock": true}
	for _, file := range []string{"core.go", "transitions.go", "settle.go"} {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Recv != nil && strings.Contains(types(n.Recv.List[0].Type), "Pool") {
					t.Errorf("%s: %s is a method of the shell (Pool)", file, n.Name.Name)
				}
			case *ast.GoStmt, *ast.SendStmt:
				t.Errorf("%s: a goroutine or a channel send", file)
			case *ast.CallExpr:
				if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "close" {
					t.Errorf("%s: closes a channel", file)
				}
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					break
				}
				if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "time" && clock[sel.Sel.Name] {
					t.Errorf("%s: reads the clock (time.%s)", file, sel.Sel.Name)
				}
				if locks[sel.Sel.Name] {
					t.Errorf("%s: takes a lock (%s)", file, sel.Sel.Name)
				}
			}
			return true
		})
	}
}

// types renders a receiver type expression, for TestCoreIsPure.
func types(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.StarExpr:
		return types(x.X)
	case *ast.IndexListExpr:
		return types(x.X)
	case *ast.Ident:
		return x.Name
	}
	return ""
}
