package kube

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestDecideTable is every input of decide in every state of the cluster
// it reads, with the action and the requeue it gives. The schedule rows
// use Interval 10s and ReadyzInterval 60s (ProberOptions' defaults).
func TestDecideTable(t *testing.T) {
	const s = time.Second
	// quiet is a wired cluster's schedule at `now`, its last read at
	// `read`, its last GET /readyz at `readyz` (0: the dial's).
	quiet := func(now, read, readyz time.Duration) schedule {
		return schedule{wired: true, now: now, read: read, readyz: readyz, interval: 10 * s, readyzEvery: 60 * s}
	}
	phased := quiet(40*s, 40*s, 0)
	phased.phase = 0.25
	suspect := quiet(30*s, 29*s, 20*s)
	suspect.suspect, suspect.retry = true, 30*s
	suspectEarly := suspect
	suspectEarly.now = 24 * s
	unwired := schedule{interval: 10 * s, readyzEvery: 60 * s}
	http1 := func(sc schedule) schedule { sc.http1 = true; return sc }
	failed := errors.New("readyz: 503")
	// open is a breaker open after `checks` failed endpoint checks, its
	// ReviveInterval 1s; jittered, its next delay drawn at +1/2 of the jitter.
	// open: down 10s ago, within a ReviveWindow of 2m.
	open := func(checks int) revival {
		return revival{open: true, failed: checks, every: s, down: 10 * s, window: 120 * s}
	}
	downFor := func(d time.Duration) revival { r := open(1); r.down = d; return r }
	jittered := open(1)
	jittered.jitter = 0.5
	closed := revival{every: s}
	unauthorized := apierrors.NewUnauthorized("readyz")

	cases := []struct {
		name  string
		v     view
		act   action
		after time.Duration
	}{
		// The Cluster object.
		{"object gone", view{in: inObject}, actRemove, 0},
		{"object gone, admitted before", view{in: inObject, admitted: "a"}, actRemove, 0},
		{"object admitted, no Connect", view{in: inObject, present: true, uid: "a"}, actNothing, 0},
		{"object admitted, Connect", view{in: inObject, present: true, uid: "a", connect: true}, actConnect, 0},
		{"object admitted, connected", view{in: inObject, present: true, uid: "a", connect: true, connected: true}, actNothing, 0},
		{"object admitted again, same UID", view{in: inObject, present: true, uid: "a", admitted: "a", connect: true}, actConnect, 0},
		{"object of another UID", view{in: inObject, present: true, uid: "b", admitted: "a", connect: true}, actRemove, 0},
		{"object of another UID, no Connect", view{in: inObject, present: true, uid: "b", admitted: "a"}, actRemove, 0},

		// The kubeconfig Secret.
		{"secret, connected, same revision", view{in: inSecret, connected: true, seen: "r2", applied: "r2"}, actNothing, 0},
		{"secret, connected, revision unknown", view{in: inSecret, connected: true, seen: "r2"}, actNothing, 0},
		{"secret, connected, older revision", view{in: inSecret, connected: true, seen: "r2", before: []string{"r0", "r1"}, applied: "r1"}, actRotate, 0},
		{"secret, connected, order unknown", view{in: inSecret, connected: true, seen: "r2", before: []string{"r1"}, applied: "r3"}, actRefresh, 0},
		{"secret, dialing", view{in: inSecret, dialing: true, seen: "r2", connect: true}, actRetry, 0},
		{"secret, idle", view{in: inSecret, seen: "r2"}, actRetry, 0},
		{"secret, idle, Connect", view{in: inSecret, seen: "r2", connect: true}, actRetry, 0},

		// The probe schedule's tick.
		{"tick, disconnected", view{in: inTick, probe: quiet(30*s, 0, 0)}, actNothing, 0},
		{"tick, no wire", view{in: inTick, connected: true, probe: unwired}, actProbe, 0},
		{"tick, the wire answers", view{in: inTick, connected: true, probe: quiet(30*s, 25*s, 0)}, actNothing, 20 * s},
		{"tick, the wire answers, readyz due", view{in: inTick, connected: true, probe: quiet(60*s, 55*s, 0)}, actProbe, 0},
		{"tick, the wire answers, readyz after the last", view{in: inTick, connected: true, probe: quiet(100*s, 95*s, 60*s)}, actNothing, 20 * s},
		{"tick, phase brings the first readyz forward", view{in: inTick, connected: true, probe: phased}, actNothing, 5 * s},
		{"tick, quiet wire", view{in: inTick, connected: true, probe: quiet(30*s, 5*s, 0)}, actProbe, 0},
		{"tick, quiet wire, not yet", view{in: inTick, connected: true, probe: quiet(20*s, 5*s, 0)}, actNothing, 10 * s},
		{"tick, quiet HTTP/1 wire", view{in: inTick, connected: true, probe: http1(quiet(30*s, 5*s, 0))}, actNothing, 30 * s},
		{"tick, quiet HTTP/1 wire, readyz due", view{in: inTick, connected: true, probe: http1(quiet(60*s, 5*s, 0))}, actProbe, 0},
		{"tick, suspect, retry due", view{in: inTick, connected: true, probe: suspect}, actProbe, 0},
		{"tick, suspect, retry not due", view{in: inTick, connected: true, probe: suspectEarly}, actNothing, 6 * s},

		// The probe's outcome. A probe's answer is a read: a wire that pings
		// and only the probes read gets the next one 5/2 Interval later, an
		// HTTP/1 wire (no PINGs) ReadyzInterval later.
		{"probed ok, the answer was the only read", view{in: inProbed, connected: true, probe: quiet(30*s, 30*s, 30*s)}, actReport, 25 * s},
		{"probed ok over HTTP/1, the answer was the only read", view{in: inProbed, connected: true, probe: http1(quiet(30*s, 30*s, 30*s))}, actReport, 60 * s},
		{"probed ok, the wire answers", view{in: inProbed, connected: true, probe: quiet(60*s, 60*s, 60*s)}, actReport, 25 * s},
		{"probed ok, no wire", view{in: inProbed, connected: true, probe: unwired}, actReport, 10 * s},
		{"probed failed", view{in: inProbed, connected: true, probe: suspect, err: failed}, actReport, 10 * s},
		{"probed failed, no wire", view{in: inProbed, connected: true, probe: unwired, err: failed}, actReport, 10 * s},
		{"probed unauthorized", view{in: inProbed, connected: true, probe: suspect, err: failed, unauthorized: true}, actRedial, 0},

		// The revive schedule's tick: only an admitted cluster, not
		// connected, no probe out, its breaker open, is checked.
		{"revive, open", view{in: inRevive, present: true, revive: open(0)}, actCheck, 0},
		{"revive, open, checks failed", view{in: inRevive, present: true, revive: open(5)}, actCheck, 0},
		{"revive, connected", view{in: inRevive, present: true, connected: true, revive: open(0)}, actNothing, 0},
		{"revive, dialing (probe out)", view{in: inRevive, present: true, dialing: true, revive: open(0)}, actNothing, 0},
		{"revive, removed", view{in: inRevive, revive: open(0)}, actNothing, 0},
		{"revive, closed", view{in: inRevive, present: true, revive: closed}, actNothing, 0},
		// Only a cluster connected at most ReviveWindow ago: one never
		// connected (down < 0) is left to the breaker's probes.
		{"revive, never connected", view{in: inRevive, present: true, revive: downFor(-1)}, actNothing, 0},
		{"revive, down for the window", view{in: inRevive, present: true, revive: downFor(120 * s)}, actCheck, 0},
		{"revive, down longer than the window", view{in: inRevive, present: true, revive: downFor(121 * s)}, actNothing, 0},

		// The check's outcome: 200 ends the open period (Probe, no Connect);
		// a failure waits R, 2R, then 3R (the cap), ±20 %.
		{"revived ok", view{in: inRevived, present: true, revive: open(0)}, actRetry, 0},
		{"revived ok, checks failed before", view{in: inRevived, present: true, revive: open(7)}, actRetry, 0},
		{"revived failed, first", view{in: inRevived, present: true, revive: open(0), err: failed}, actNothing, 2 * s},
		{"revived failed, second", view{in: inRevived, present: true, revive: open(1), err: failed}, actNothing, 3 * s},
		{"revived failed, at the cap", view{in: inRevived, present: true, revive: open(9), err: failed}, actNothing, 3 * s},
		{"revived failed, jittered", view{in: inRevived, present: true, revive: jittered, err: failed}, actNothing, 3300 * time.Millisecond},
		{"revived unauthorized", view{in: inRevived, present: true, revive: open(0), err: unauthorized}, actNothing, 2 * s},
		{"revived ok, connected meanwhile", view{in: inRevived, present: true, connected: true, revive: open(0)}, actNothing, 0},
		{"revived ok, dialing meanwhile", view{in: inRevived, present: true, dialing: true, revive: open(0)}, actNothing, 0},
		{"revived ok, removed meanwhile", view{in: inRevived, revive: open(0)}, actNothing, 0},
		{"revived ok, closed meanwhile", view{in: inRevived, present: true, revive: closed}, actNothing, 0},
		{"revived failed, closed meanwhile", view{in: inRevived, present: true, revive: closed, err: failed}, actNothing, 0},
		{"revived ok, after the window", view{in: inRevived, present: true, revive: downFor(121 * s)}, actRetry, 0},
		{"revived failed, after the window", view{in: inRevived, present: true, revive: downFor(121 * s), err: failed}, actNothing, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			act, after := decide(tc.v)
			if act != tc.act || after != tc.after {
				t.Errorf("decide = %v, %v; want %v, %v", act, after, tc.act, tc.after)
			}
		})
	}
}

// Every action has a name, and an unknown input decides nothing.
func TestDecideActionsAndUnknownInput(t *testing.T) {
	for a := actNothing; a <= actCheck; a++ {
		if a.String() == "" {
			t.Errorf("action %d has no name", a)
		}
	}
	if act, after := decide(view{in: inRevived + 1, present: true, connect: true}); act != actNothing || after != 0 {
		t.Errorf("unknown input: %v, %v; want nothing, 0", act, after)
	}
	if got := fmt.Sprint(actRotate); got != "rotate" {
		t.Errorf("actRotate prints %q", got)
	}
}
