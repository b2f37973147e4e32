package pool

import (
	"errors"
	"testing"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// settle, the functional core of a dial's end, as a table: each legal
// dialEnd × the entry's state × the breaker's answer, and the decision.
func TestSettleTable(t *testing.T) {
	now := time.Unix(1000, 0)
	cl := &client{key: "a"}
	opened := breaker.Transition{From: breaker.StateClosed, To: breaker.StateOpen, OpenFor: 5 * time.Second, At: now}
	closed := breaker.Transition{From: breaker.StateHalfOpen, To: breaker.StateClosed, At: now}
	ok := func(end dialEnd) result[*client] { return result[*client]{end: end, client: cl, took: time.Second} }
	failed := func(end dialEnd) result[*client] {
		return result[*client]{end: end, err: errRefused, o: breaker.Failure, took: 3 * time.Second}
	}
	cases := []struct {
		name string
		in   settleIn[*client]
		want settleOut
	}{
		{"success caches", settleIn[*client]{result: ok(endReturned), current: true},
			settleOut{cache: true, learn: true, observe: true, answer: answerClient, res: tracing.DialSuccess}},
		{"probe success closes the breaker and caches",
			settleIn[*client]{result: ok(endReturned), current: true, rejected: true, tr: closed, changed: true},
			settleOut{cache: true, learn: true, observe: true, apply: true, answer: answerClient, res: tracing.DialSuccess}},
		{"success after Report opened the breaker: closed, waiters rejected",
			settleIn[*client]{result: ok(endReturned), current: true, rejected: true},
			settleOut{closeNew: true, learn: true, observe: true, answer: answerRejected, res: tracing.DialSuccess}},
		{"success while another client is cached: closed, waiters get the cached one",
			settleIn[*client]{result: ok(endReturned), current: true, held: true},
			settleOut{closeNew: true, learn: true, observe: true, answer: answerHeld, res: tracing.DialSuccess}},
		{"success after Close", settleIn[*client]{result: ok(endReturned), current: true, closed: true},
			settleOut{closeNew: true, learn: true, observe: true, answer: answerClosed, res: tracing.DialSuccess}},
		{"success after Remove (old generation)", settleIn[*client]{result: ok(endReturned)},
			settleOut{closeNew: true, observe: true, answer: answerRemoved, res: tracing.DialSuccess}},
		{"dialer returned after cancel", settleIn[*client]{result: ok(endReturnedCanceled), current: true},
			settleOut{closeNew: true, answer: answerRemoved, res: tracing.DialCanceled}},
		{"failure, breaker stays closed: DialFailed, back after the longer of MaxWait and the dial",
			settleIn[*client]{result: failed(endReturned), current: true, maxWait: time.Second, now: now},
			settleOut{learn: true, dialFailed: true, answer: answerFailed, retryAt: now.Add(3 * time.Second), res: tracing.DialError}},
		{"failure opens the breaker: back at the first probe, no DialFailed",
			settleIn[*client]{result: failed(endReturned), current: true, tr: opened, changed: true, maxWait: time.Second, now: now},
			settleOut{learn: true, apply: true, answer: answerFailed, retryAt: now.Add(5 * time.Second), res: tracing.DialError}},
		{"failure while the breaker is open (Report opened it): no DialFailed",
			settleIn[*client]{result: failed(endReturned), current: true, rejected: true, maxWait: 4 * time.Second, now: now},
			settleOut{learn: true, answer: answerFailed, retryAt: now.Add(4 * time.Second), res: tracing.DialError}},
		{"deadline", settleIn[*client]{result: result[*client]{end: endExpired, err: errors.New("late"), o: breaker.Trip,
			took: 10 * time.Second}, current: true, tr: opened, changed: true, now: now},
			settleOut{learn: true, apply: true, answer: answerFailed, retryAt: now.Add(5 * time.Second), res: tracing.DialError}},
		{"deadline after cancel", settleIn[*client]{result: result[*client]{end: endExpiredCanceled, err: errors.New("late")}, current: true},
			settleOut{answer: answerRemoved, res: tracing.DialCanceled}},
		{"dropped from the queue by Remove", settleIn[*client]{result: result[*client]{end: endDropped}},
			settleOut{answer: answerRemoved, res: tracing.DialCanceled}},
		{"dropped by Close", settleIn[*client]{result: result[*client]{end: endDropped}, current: true, closed: true},
			settleOut{answer: answerClosed, res: tracing.DialCanceled}},
		{"abandoned by Close", settleIn[*client]{result: result[*client]{end: endAbandoned, err: ErrAbandoned}, current: true, closed: true},
			settleOut{answer: answerClosed, res: tracing.DialAbandoned}},
		{"panic", settleIn[*client]{result: result[*client]{end: endReturned, err: ErrDialPanic, o: breaker.Failure}, current: true, now: now},
			settleOut{learn: true, dialFailed: true, answer: answerFailed, retryAt: now, res: tracing.DialPanic}},
	}
	for _, tc := range cases {
		if got := settle(tc.in); got != tc.want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}

// Only a current dial that nobody canceled feeds the breaker.
func TestSettleRecords(t *testing.T) {
	for end := endReturned; end <= endAbandoned; end++ {
		for _, current := range []bool{false, true} {
			in := settleIn[*client]{result: result[*client]{end: end}, current: current}
			want := current && (end == endReturned || end == endExpired)
			if got := in.records(); got != want {
				t.Errorf("end %d current %v: records %v, want %v", end, current, got, want)
			}
		}
	}
}

// settle over every state × input: each legal dialEnd, with or without an
// error and a client, × current, closed, held, rejected × the breaker's
// answer (none, opened, closed). Each decision is checked against the rules
// of settle's and the events' documentation, not against a second copy of
// settle.
func TestSettleStatesByInputs(t *testing.T) {
	now := time.Unix(1000, 0)
	answers := []struct {
		tr      breaker.Transition
		changed bool
	}{
		{},
		{breaker.Transition{From: breaker.StateClosed, To: breaker.StateOpen, OpenFor: 5 * time.Second, At: now}, true},
		{breaker.Transition{From: breaker.StateHalfOpen, To: breaker.StateClosed, At: now}, true},
	}
	n := 0
	for end := endReturned; end <= endAbandoned; end++ {
		for _, failedDial := range []bool{false, true} {
			for state := range 16 {
				for _, a := range answers {
					in := settleIn[*client]{now: now, maxWait: time.Second,
						current: state&1 != 0, closed: state&2 != 0, held: state&4 != 0, rejected: state&8 != 0}
					in.end, in.took = end, 2*time.Second
					if end.dialer() {
						in.client = &client{key: "a"} // also returned with an error: it must be closed
					}
					if failedDial || !end.dialer() {
						in.err, in.o = errRefused, breaker.Failure
					}
					if in.records() {
						in.tr, in.changed = a.tr, a.changed
					} else if a.changed {
						continue // the breaker is not asked
					}
					checkSettle(t, in, settle(in))
					n++
				}
			}
		}
	}
	t.Logf("%d states × inputs", n)
}

// checkSettle checks one of settle's decisions against the documented rules.
func checkSettle(t *testing.T, in settleIn[*client], out settleOut) {
	t.Helper()
	ok := in.err == nil && in.end.dialer()
	closes := in.changed && in.tr.To == breaker.StateClosed
	opens := in.changed && in.tr.To == breaker.StateOpen
	wantCache := ok && in.records() && !in.closed && !in.held && (!in.rejected || closes)
	rejectedAfter := (in.rejected && !in.changed) || opens
	failures := []struct {
		bad  bool
		rule string
	}{
		{out.cache != wantCache, "a client is cached exactly when it is still wanted"},
		{in.end.dialer() && out.cache == out.closeNew, "a returned client is either cached or closed, once"},
		{!in.end.dialer() && (out.cache || out.closeNew), "no client without a dialer's return"},
		{(out.answer == answerClient) != out.cache, "waiters get the dial's client exactly when it is cached"},
		{in.closed && !out.cache && out.answer != answerClosed, "after Close, waiters get ErrClosed"},
		{!in.closed && !in.records() && out.answer != answerRemoved, "a canceled or old dial's waiters get ErrRemoved"},
		{out.learn != in.records(), "only a current, uncanceled dial is learned from"},
		{out.apply != (in.changed && in.current), "a transition is applied to the entry it belongs to"},
		{out.observe != (ok && !in.end.canceled()), "every uncanceled success feeds the latency estimate"},
		{out.dialFailed && (!in.records() || rejectedAfter || ok), "DialFailed only for a failure that leaves the breaker closed"},
		{out.answer == answerFailed && !out.retryAt.After(in.now), "a failed dial's waiters come back later"},
		{in.records() && !ok && !in.closed && !rejectedAfter && !out.dialFailed, "a failure that leaves the breaker closed is DialFailed"},
		{opens && out.answer == answerFailed && !out.retryAt.Equal(in.tr.At.Add(in.tr.OpenFor)), "a failure that opened the breaker: back at the first probe"},
		{out.answer == answerRejected && !(ok && rejectedAfter), "rejected only if the breaker opened meanwhile"},
	}
	for _, f := range failures {
		if f.bad {
			t.Errorf("%s: in %+v, out %+v", f.rule, in, out)
		}
	}
}
