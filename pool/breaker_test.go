package pool

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

func tripped(t *testing.T, o Options[string, *client]) (*Pool[string, *client], *fakeDialer, *events) {
	t.Helper()
	f := newFake()
	p := newPool(t, f, o)
	ev := subscribe(context.Background(), p)
	for range p.opts.Breaker.ConsecutiveFailures + 3 {
		if p.State("a").Breaker == breaker.StateOpen {
			break
		}
		failDial(t, p, f, "a", errRefused)
	}
	if s := p.State("a"); s.Breaker != breaker.StateOpen {
		t.Fatalf("not tripped: %+v", s)
	}
	return p, f, ev
}

func expectRejected(t *testing.T, p *Pool[string, *client], f *fakeDialer) {
	t.Helper()
	if _, err := p.Get(context.Background(), "a"); !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("Get: %v, want ErrCircuitOpen", err)
	}
	synctest.Wait()
	f.noDial(t)
}

// Rule 7: the pool probes in the background when the open period ends;
// callers are rejected meanwhile; a failed probe doubles the period up to
// the cap; a successful one closes the breaker and caches the client.
func TestHalfOpenProbeRunsOffTheCallerPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, f, ev := tripped(t, Options[string, *client]{Breaker: breaker.Settings{
			OpenTimeout: time.Second, MaxOpenTimeout: 3 * time.Second, DisableJitter: true}})
		dials := f.n.Load()
		for i, period := range []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second} {
			if got := time.Until(p.State("a").NextProbe); got != period {
				t.Fatalf("open period %d: %v, want %v", i, got, period)
			}
			time.Sleep(period - time.Millisecond)
			expectRejected(t, p, f)
			time.Sleep(time.Millisecond)
			synctest.Wait()
			probe := f.next(t) // the pool's own dial
			if s := p.State("a"); s.Breaker != breaker.StateHalfOpen || !s.Dialing {
				t.Fatalf("during probe: %+v", s)
			}
			expectRejected(t, p, f) // still instant while the probe is out
			_, err := p.Get(context.Background(), "a")
			if d, ok := RetryAfter(err); !ok || d != DefaultDialTimeout {
				t.Fatalf("RetryAfter while probing: %v,%v want the probe's deadline %v", d, ok, DefaultDialTimeout)
			}
			probe.fail(context.DeadlineExceeded)
			synctest.Wait()
		}
		if n := f.n.Load() - dials; n != 4 {
			t.Fatalf("probes=%d want 4", n)
		}
		time.Sleep(time.Until(p.State("a").NextProbe))
		synctest.Wait()
		f.next(t).succeed()
		synctest.Wait()
		if s := p.State("a"); s.Breaker != breaker.StateClosed || !s.Connected || s.Opens != 0 {
			t.Fatalf("after a good probe: %+v", s)
		}
		if _, err := p.Get(context.Background(), "a"); err != nil {
			t.Fatalf("Get after recovery: %v", err)
		}
		// The first two failures leave the breaker closed: each dial's end
		// is a DialFailed; the third opens it.
		want := []EventType{DialFailed, DialFailed, BreakerOpened}
		for range 4 {
			want = append(want, BreakerHalfOpen, BreakerOpened)
		}
		want = append(want, BreakerHalfOpen, BreakerClosed, Connected)
		// BreakerClosed and Connected are published together: a subscriber
		// may see only the latest of the two (coalesced per key).
		coalesced := slices.Delete(slices.Clone(want), len(want)-2, len(want)-1)
		if got := ev.types(); !slices.Equal(got, want) && !slices.Equal(got, coalesced) {
			t.Errorf("events\n got %v\nwant %v", got, want)
		}
	})
}

func TestOpenPeriodIsJittered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, _, _ := tripped(t, Options[string, *client]{})
		got := time.Until(p.State("a").NextProbe)
		if lo, hi := breaker.DefaultOpenTimeout*8/10, breaker.DefaultOpenTimeout*12/10; got < lo || got > hi {
			t.Fatalf("open period %v outside [%v, %v]", got, lo, hi)
		}
	})
}

// Rule 8: reported errors count; when the breaker opens for a connected
// cluster its client is evicted and Disconnected is sent.
func TestReportEvictsConnectedClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		c := connect(t, p, f, "a")
		ev := subscribe(context.Background(), p)
		p.Report("a", errRefused)
		p.Report("a", nil) // a success resets the run
		p.Report("a", errRefused)
		p.Report("a", context.Canceled) // not a failure by default
		p.Report("a", errRefused)
		if c.closed.Load() != 0 || !p.State("a").Connected {
			t.Fatal("evicted before the threshold")
		}
		p.Report("a", errRefused)
		if c.closed.Load() != 1 {
			t.Fatalf("evicted client closed %d times", c.closed.Load())
		}
		expectRejected(t, p, f)
		synctest.Wait()
		if got := ev.types(); !slices.Equal(got, []EventType{Disconnected, BreakerOpened}) &&
			!slices.Equal(got, []EventType{BreakerOpened}) {
			t.Fatalf("events %v", got)
		}
		ev.mu.Lock()
		last := ev.got[len(ev.got)-1]
		ev.mu.Unlock()
		if last.Connected || last.Breaker != breaker.StateOpen {
			t.Fatalf("latest event %+v does not tell the state: disconnected, open", last)
		}
		p.Report("a", errRefused) // ignored while open
		p.Report("unknown", errRefused)
		if p.State("unknown").Known {
			t.Error("Report created an entry for an unknown key")
		}
	})
}

// Rule 9: a panicking dialer is a failure; the pool keeps working.
func TestDialPanicIsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		res := getAsync(context.Background(), p, "a")
		synctest.Wait()
		f.next(t).panicWith("nil map")
		r := <-res
		if !errors.Is(r.err, ErrDialFailed) || !errors.Is(r.err, ErrDialPanic) {
			t.Fatalf("err=%v, want ErrDialFailed and ErrDialPanic", r.err)
		}
		if s := p.State("a"); s.ConsecutiveFailures != 1 {
			t.Fatalf("panic not counted: %+v", s)
		}
		connect(t, p, f, "a")
	})
}
