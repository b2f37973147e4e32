package breaker

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var errBoom = errors.New("boom")

func mustNew(t *testing.T, s Settings) *Breaker {
	t.Helper()
	b, err := New(s)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// fail reports one failed request and returns the transition it caused.
func fail(t *testing.T, b *Breaker) (Transition, bool) {
	t.Helper()
	tk, err := b.Allow()
	if err != nil {
		t.Fatalf("Allow: %v", err)
	}
	return tk.Done(errBoom)
}

func trip(t *testing.T, b *Breaker) Transition {
	t.Helper()
	for i := uint32(1); i < b.Settings().ConsecutiveFailures; i++ {
		if tr, ok := fail(t, b); ok {
			t.Fatalf("failure %d changed state: %+v", i, tr)
		}
	}
	tr, ok := fail(t, b)
	if !ok || tr.From != StateClosed || tr.To != StateOpen {
		t.Fatalf("last failure: got %+v %v, want closed->open", tr, ok)
	}
	return tr
}

func TestTripsAfterConsecutiveFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Settings{ConsecutiveFailures: 4, DisableJitter: true})
		fail(t, b)
		fail(t, b)
		// A success in between resets the run.
		tk, _ := b.Allow()
		tk.Done(nil)
		if got := b.Snapshot().ConsecutiveFailures; got != 0 {
			t.Fatalf("after success: ConsecutiveFailures=%d", got)
		}
		tr := trip(t, b)
		if tr.OpenFor != DefaultOpenTimeout {
			t.Fatalf("OpenFor=%v want %v", tr.OpenFor, DefaultOpenTimeout)
		}
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Fatalf("Allow while open: %v", err)
		}
		s := b.Snapshot()
		if s.State != StateOpen || s.Opens != 1 || !s.OpenUntil.Equal(time.Now().Add(DefaultOpenTimeout)) {
			t.Fatalf("snapshot %+v", s)
		}
	})
}

func TestOpenPeriodGrowsAndCaps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Settings{OpenTimeout: time.Second, MaxOpenTimeout: 5 * time.Second, DisableJitter: true})
		tr := trip(t, b)
		want := []time.Duration{2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
		for i, w := range append([]time.Duration{time.Second}, want...) {
			if tr.OpenFor != w {
				t.Fatalf("period %d: OpenFor=%v want %v", i+1, tr.OpenFor, w)
			}
			time.Sleep(tr.OpenFor - time.Nanosecond)
			if s := b.State(); s != StateOpen {
				t.Fatalf("period %d: state %v just before the end", i+1, s)
			}
			time.Sleep(time.Nanosecond)
			if s := b.State(); s != StateHalfOpen {
				t.Fatalf("period %d: state %v at the end", i+1, s)
			}
			probe, err := b.Allow()
			ptr, changed := probe.Transition()
			if err != nil || !probe.Probe() || !changed || ptr.To != StateHalfOpen {
				t.Fatalf("probe Allow: %v probe=%v %+v %v", err, probe.Probe(), ptr, changed)
			}
			if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
				t.Fatalf("second Allow while probing: %v", err)
			}
			var ok bool
			tr, ok = probe.Done(errBoom)
			if !ok || tr.From != StateHalfOpen || tr.To != StateOpen {
				t.Fatalf("failed probe: %+v %v", tr, ok)
			}
		}
	})
}

func TestProbeSuccessCloses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Settings{DisableJitter: true})
		tr := trip(t, b)
		time.Sleep(tr.OpenFor)
		probe, _ := b.Allow()
		tr, ok := probe.Done(nil)
		if !ok || tr.From != StateHalfOpen || tr.To != StateClosed {
			t.Fatalf("probe success: %+v %v", tr, ok)
		}
		if s := b.Snapshot(); s.State != StateClosed || s.Opens != 0 || !s.OpenUntil.IsZero() {
			t.Fatalf("snapshot after close: %+v", s)
		}
		// The next trip starts from OpenTimeout again.
		if tr := trip(t, b); tr.OpenFor != DefaultOpenTimeout {
			t.Fatalf("OpenFor after reset=%v", tr.OpenFor)
		}
	})
}

func TestDiscardedProbeLetsAnotherProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Settings{})
		tr := trip(t, b)
		time.Sleep(tr.OpenFor)
		probe, _ := b.Allow()
		probe.Discard()
		again, err := b.Allow()
		_, changed := again.Transition()
		if err != nil || !again.Probe() || changed {
			t.Fatalf("Allow after discard: err=%v probe=%v changed=%v", err, again.Probe(), changed)
		}
		if tr, ok := again.Done(nil); !ok || tr.To != StateClosed {
			t.Fatalf("second probe: %+v %v", tr, ok)
		}
	})
}

func TestStaleTicketIgnored(t *testing.T) {
	b := mustNew(t, Settings{ConsecutiveFailures: 1})
	stale, _ := b.Allow()
	trip(t, b)
	if tr, ok := stale.Done(nil); ok {
		t.Fatalf("stale success changed state: %+v", tr)
	}
	if s := b.State(); s != StateOpen {
		t.Fatalf("state %v after stale success", s)
	}
}

func TestIsFailureClassifies(t *testing.T) {
	b := mustNew(t, Settings{ConsecutiveFailures: 1})
	tk, _ := b.Allow()
	if _, ok := tk.Done(context.Canceled); ok || b.State() != StateClosed {
		t.Fatal("context.Canceled counted as a failure by default")
	}
	b2 := mustNew(t, Settings{ConsecutiveFailures: 2})
	fail(t, b2)

	ignored := errors.New("not found")
	b = mustNew(t, Settings{ConsecutiveFailures: 1, IsFailure: func(err error) bool { return err != nil && err != ignored }})
	tk, _ = b.Allow()
	if _, ok := tk.Done(ignored); ok {
		t.Fatal("classifier ignored")
	}
	tk, _ = b.Allow()
	if tr, ok := tk.Done(context.DeadlineExceeded); !ok || tr.To != StateOpen {
		t.Fatal("deadline exceeded must trip")
	}
}

func TestJitterStaysInBounds(t *testing.T) {
	const base = 10 * time.Second
	seen := map[time.Duration]bool{}
	for range 200 {
		d := openPeriod(1, base, time.Hour, DefaultJitter)
		if d < base*8/10 || d > base*12/10 {
			t.Fatalf("jittered period %v outside ±20%% of %v", d, base)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("jitter produced only %d distinct periods in 200", len(seen))
	}
	for range 200 {
		if d := openPeriod(2, base, 25*time.Second, DefaultJitter); d > 25*time.Second || d < 16*time.Second {
			t.Fatalf("period below the cap %v outside [16s, 25s]", d)
		}
	}
	// At the cap the period is exact: a dead cluster is probed once per
	// MaxOpenTimeout, never more often.
	for _, n := range []uint32{4, 30} {
		if d := openPeriod(n, base, time.Minute, DefaultJitter); d != time.Minute {
			t.Fatalf("period #%d at the cap = %v, want exactly 1m", n, d)
		}
	}
	if d := openPeriod(1, time.Minute, time.Minute, DefaultJitter); d != time.Minute {
		t.Fatalf("a first period that is the cap (a Trip) = %v, want exactly 1m", d)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		s     Settings
		field string
	}{
		{Settings{OpenTimeout: -1}, "OpenTimeout"},
		{Settings{MaxOpenTimeout: -1}, "MaxOpenTimeout"},
		{Settings{OpenTimeout: time.Minute, MaxOpenTimeout: time.Second}, "MaxOpenTimeout"},
		{Settings{Jitter: 1}, "Jitter"},
		{Settings{Jitter: -0.1}, "Jitter"},
		{Settings{Jitter: math.NaN()}, "Jitter"},
		{Settings{OpenTimeout: math.MaxInt64}, "OpenTimeout"},
		{Settings{MaxOpenTimeout: MaxDuration + 1}, "MaxOpenTimeout"},
	} {
		_, err := New(tc.s)
		if !errors.Is(err, ErrInvalidSettings) || !strings.Contains(err.Error(), tc.field+"=") {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.s, err, tc.field)
		}
	}
	d := Settings{OpenTimeout: 10 * time.Minute}.withDefaults()
	if d.MaxOpenTimeout != 10*time.Minute {
		t.Errorf("MaxOpenTimeout default below a large OpenTimeout: %v", d.MaxOpenTimeout)
	}
	if z := (Settings{}).withDefaults(); z.ConsecutiveFailures != 3 || z.OpenTimeout != 5*time.Second ||
		z.MaxOpenTimeout != 30*time.Second || z.Jitter != 0.2 {
		t.Errorf("zero Settings defaults: %+v", z)
	}
}

// A probe whose error the classifier does not count still ends in a
// decision: the breaker re-opens for its next period instead of staying
// half-open (and rejecting) for ever.
func TestIgnoredProbeOutcomeReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ignored := errors.New("not counted")
		b := mustNew(t, Settings{ConsecutiveFailures: 1, DisableJitter: true,
			IsFailure: func(err error) bool { return err != nil && err != ignored }})
		tr := trip(t, b)
		time.Sleep(tr.OpenFor)
		probe, err := b.Allow()
		if err != nil || !probe.Probe() {
			t.Fatalf("Allow after the open period: %v", err)
		}
		tr, ok := probe.Done(ignored)
		if !ok || tr.From != StateHalfOpen || tr.To != StateOpen || tr.OpenFor != 2*DefaultOpenTimeout {
			t.Fatalf("ignored probe outcome: %+v %v, want half-open -> open for %v", tr, ok, 2*DefaultOpenTimeout)
		}
		// Ignored outcomes of ordinary tickets still count as nothing.
		b2 := mustNew(t, Settings{ConsecutiveFailures: 1})
		tk, _ := b2.Allow()
		if tr, ok := tk.Record(Ignored); ok {
			t.Fatalf("ignored outcome changed state: %+v", tr)
		}
	})
}

// IsFailure runs with no lock held: a panicking classifier leaves the
// breaker usable.
func TestPanickingClassifierHoldsNoLock(t *testing.T) {
	b := mustNew(t, Settings{IsFailure: func(error) bool { panic("classifier bug") }})
	tk, _ := b.Allow()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the classifier's panic was swallowed")
			}
		}()
		tk.Done(errBoom)
	}()
	done := make(chan State, 1)
	go func() { done <- b.State() }()
	if s := <-done; s != StateClosed {
		t.Fatalf("state %v", s)
	}
	if _, ok := tk.Record(Failure); ok {
		t.Fatal("one failure of three changed state")
	}
}

// Expire ends the open period at once: the next Allow is the probe.
func TestExpire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Settings{ConsecutiveFailures: 1})
		b.Expire() // closed: nothing to do
		if b.State() != StateClosed {
			t.Fatal("Expire changed a closed breaker")
		}
		trip(t, b)
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Fatalf("open breaker allowed: %v", err)
		}
		time.Sleep(time.Second) // one second into the 5 s open period
		b.Expire()
		probe, err := b.Allow()
		tr, changed := probe.Transition()
		if err != nil || !probe.Probe() || !changed || tr.To != StateHalfOpen {
			t.Fatalf("Allow after Expire: %v probe=%v %+v", err, probe.Probe(), tr)
		}
	})
}

// record reports outcome o of one request and returns the transition.
func record(t *testing.T, b *Breaker, o Outcome) (Transition, bool) {
	t.Helper()
	tk, err := b.Allow()
	if err != nil {
		t.Fatalf("Allow: %v", err)
	}
	return tk.Record(o)
}

// A Trip (a request that hung until its deadline) opens a closed breaker
// at once for MaxOpenTimeout, and re-opens it for MaxOpenTimeout after a
// probe that hung; a probe that then fails fast keeps MaxOpenTimeout (an
// open period never shrinks until the breaker closes), and so does every
// later one. With DisableTrip a Trip is one failure among
// ConsecutiveFailures.
func TestTripOpensAtOnceForMaxOpenTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := Settings{ConsecutiveFailures: 5, OpenTimeout: time.Second, MaxOpenTimeout: 8 * time.Second, DisableJitter: true}
		b := mustNew(t, s)
		for _, step := range []struct {
			o    Outcome
			open time.Duration
		}{{Trip, 8 * time.Second}, {Failure, 8 * time.Second}, {Trip, 8 * time.Second}, {Failure, 8 * time.Second}} {
			tr, ok := record(t, b, step.o)
			if !ok || tr.To != StateOpen || tr.OpenFor != step.open {
				t.Fatalf("outcome %d: transition %+v (%v), want open for %v", step.o, tr, ok, step.open)
			}
			time.Sleep(tr.OpenFor)
		}

		s.DisableTrip = true
		b = mustNew(t, s)
		for i := 1; i < 5; i++ {
			if tr, ok := record(t, b, Trip); ok {
				t.Fatalf("DisableTrip: Trip %d changed state: %+v", i, tr)
			}
		}
		if tr, ok := record(t, b, Trip); !ok || tr.OpenFor != time.Second {
			t.Fatalf("DisableTrip: fifth Trip: %+v (%v), want open for the first period 1s", tr, ok)
		}
	})
}

// Issue 23, item 2: an open period is never shorter than the one before it
// until the breaker closes. A request that hung (Trip) opens the breaker for
// MaxOpenTimeout; a probe that is then refused at once must not bring the
// next probe closer (it used to re-open for OpenTimeout·2^(n-1)). Large
// jitter must not shorten a period either. After a success the periods
// start again from OpenTimeout.
func TestOpenPeriodNeverShrinksUntilClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Settings{ConsecutiveFailures: 1, OpenTimeout: 4 * time.Second, MaxOpenTimeout: 40 * time.Second})
		tr, _ := record(t, b, Trip)
		if tr.OpenFor != 40*time.Second {
			t.Fatalf("Trip: open for %v, want 40s", tr.OpenFor)
		}
		time.Sleep(tr.OpenFor)
		if tr, _ = record(t, b, Failure); tr.To != StateOpen || tr.OpenFor < 40*time.Second {
			t.Fatalf("probe refused after a Trip: %+v, want open for at least 40s", tr)
		}
		time.Sleep(tr.OpenFor)
		record(t, b, Success) // closes: the periods start again
		if tr, _ = record(t, b, Failure); tr.OpenFor > 4*time.Second*12/10 {
			t.Fatalf("first period after closing: %v, want about 4s", tr.OpenFor)
		}

		// Jitter near 1 would make a period shorter than the last one in
		// most runs of this length.
		b = mustNew(t, Settings{ConsecutiveFailures: 1, OpenTimeout: time.Second, MaxOpenTimeout: time.Hour, Jitter: 0.9})
		for run := range 20 {
			var last time.Duration
			for n := range 6 {
				tr, _ := record(t, b, Failure)
				if tr.OpenFor < last {
					t.Fatalf("run %d, period %d: %v after %v: the open period shrank", run, n+1, tr.OpenFor, last)
				}
				last = tr.OpenFor
				time.Sleep(tr.OpenFor)
			}
			record(t, b, Success)
		}
	})
}

// gobreaker (the rate window) exists only while a closed breaker counts
// failures: a healthy breaker holds none, a success drops it once the
// window holds no failure, and so does opening (the open and half-open
// states are the Breaker's).
func TestGobreakerOnlyWhileCounting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := mustNew(t, Settings{ConsecutiveFailures: 2, DisableJitter: true})
		counting := func() bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.m.cb != nil
		}
		record(t, b, Success)
		if counting() {
			t.Fatal("a success made a gobreaker")
		}
		record(t, b, Failure)
		if !counting() || b.Snapshot().ConsecutiveFailures != 1 {
			t.Fatalf("after a failure: gobreaker %v, %+v", counting(), b.Snapshot())
		}
		record(t, b, Success)
		if s := b.Snapshot(); !counting() || s.ConsecutiveFailures != 0 || s.WindowFailures != 1 || s.WindowRequests != 2 {
			t.Fatalf("after a success, the failure still in the window: gobreaker %v, %+v", counting(), s)
		}
		time.Sleep(DefaultWindow)
		record(t, b, Success)
		if counting() || b.Snapshot().WindowRequests != 0 {
			t.Fatalf("after a success, the failure out of the window: gobreaker %v, %+v", counting(), b.Snapshot())
		}
		tr := trip(t, b)
		if counting() {
			t.Fatal("an open breaker holds its gobreaker")
		}
		time.Sleep(tr.OpenFor)
		if tr, ok := record(t, b, Success); !ok || tr.To != StateClosed || counting() {
			t.Fatalf("probe success: %+v %v, gobreaker %v", tr, ok, counting())
		}
	})
}
