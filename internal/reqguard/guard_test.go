package reqguard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/clusterpool/clusterpool/pool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// reports records what a guard reports.
type reports struct {
	mu  sync.Mutex
	got []error
}

func (r *reports) report(err error) {
	r.mu.Lock()
	r.got = append(r.got, err)
	r.mu.Unlock()
}

func (r *reports) list() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.got...)
}

var errOpen = &pool.Error{Kind: pool.ErrCircuitOpen, Cluster: "c"}

func newGuard(t *testing.T, s Settings) (*Guard, *reports) {
	t.Helper()
	r := &reports{}
	s.Cluster, s.Report, s.Stopped = "c", r.report, func() error { return errOpen }
	g := New(s)
	g.Live()
	return g, r
}

func TestBulkheadCapsCountedOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := newGuard(t, Settings{MaxInFlight: 2, MaxFirstByte: time.Minute})
		var flights []*Flight
		for range 2 {
			_, f, err := g.Begin(context.Background(), Counted)
			if err != nil {
				t.Fatal(err)
			}
			flights = append(flights, f)
		}
		// With no answer ever, a request is late after MaxFirstByte.
		time.Sleep(time.Minute + time.Millisecond)
		_, _, err := g.Begin(context.Background(), Counted)
		if !errors.Is(err, ErrBulkheadFull) {
			t.Fatalf("third counted request with two late ones: %v, want ErrBulkheadFull", err)
		}
		if d, ok := pool.RetryAfter(err); !ok || d < 0 || d > time.Minute {
			t.Errorf("RetryAfter = %v, %v; want [0, 1m]", d, ok)
		}
		_, f, err := g.Begin(context.Background(), Exempt)
		if err != nil {
			t.Fatalf("exempt request over the cap: %v", err)
		}
		f.End(nil)
		flights[0].End(nil)
		flights[0].End(nil) // idempotent: releases one slot only
		if _, counted := g.InFlight(); counted != 1 {
			t.Fatalf("counted = %d after one End, want 1", counted)
		}
		_, f, err = g.Begin(context.Background(), Counted)
		if err != nil {
			t.Fatalf("after a slot was freed: %v", err)
		}
		f.End(nil)
		flights[1].End(nil)
	})
}

// A burst of requests to a cluster that has just connected, or that was
// idle for long, is not throttled: nothing says the cluster is in trouble.
// A first-byte timeout does: the cap holds until the next answer.
func TestBulkheadHoldsOnEvidenceOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := newGuard(t, Settings{MaxInFlight: 2, MinFirstByte: time.Second, MaxFirstByte: time.Minute})
		burst := func(n int, what string) []*Flight {
			t.Helper()
			var flights []*Flight
			for i := range n {
				_, f, err := g.Begin(context.Background(), Counted)
				if err != nil {
					t.Fatalf("%s: request %d: %v", what, i, err)
				}
				flights = append(flights, f)
			}
			return flights
		}
		answer := func(flights []*Flight) {
			for _, f := range flights {
				f.FirstByte()
				f.End(nil)
			}
		}
		answer(burst(5, "fresh cluster"))
		time.Sleep(time.Hour)
		slow := burst(5, "cluster idle for an hour")
		time.Sleep(5 * time.Millisecond)
		answer(slow[1:])
		time.Sleep(time.Minute) // slow[0] timed out
		_, f, err := g.Begin(context.Background(), Counted)
		if err != nil {
			t.Fatalf("one request in flight after a timeout: %v", err)
		}
		if _, _, err := g.Begin(context.Background(), Counted); !errors.Is(err, ErrBulkheadFull) {
			t.Fatalf("over the cap after a timeout: %v, want ErrBulkheadFull", err)
		}
		f.End(nil)
		slow[0].End(nil)
	})
}

func TestStopCancelsInFlightAndRejects(t *testing.T) {
	g, r := newGuard(t, Settings{MaxInFlight: 4})
	ctx, f, err := g.Begin(context.Background(), Counted)
	if err != nil {
		t.Fatal(err)
	}
	wctx, w, err := g.Begin(context.Background(), Exempt)
	if err != nil {
		t.Fatal(err)
	}
	g.Stop()
	g.Stop()
	for _, c := range []context.Context{ctx, wctx} {
		select {
		case <-c.Done():
		default:
			t.Fatal("a request in flight was not canceled by Stop")
		}
	}
	if err := f.Err(ctx.Err()); !errors.Is(err, pool.ErrCircuitOpen) {
		t.Errorf("canceled request's error = %v, want ErrCircuitOpen", err)
	}
	f.End(f.Err(ctx.Err()))
	w.End(nil)
	if _, _, err := g.Begin(context.Background(), Exempt); !errors.Is(err, pool.ErrCircuitOpen) {
		t.Errorf("request after Stop: %v, want ErrCircuitOpen", err)
	}
	if got := r.list(); len(got) != 0 {
		t.Errorf("canceled requests were reported: %v", got)
	}
}

func TestFirstByteDeadline(t *testing.T) {
	g, r := newGuard(t, Settings{MinFirstByte: 20 * time.Millisecond, MaxFirstByte: time.Minute})
	ctx, f, err := g.Begin(context.Background(), Counted)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("no first-byte cancellation")
	}
	err = f.Err(ctx.Err())
	if !errors.Is(err, ErrFirstByteTimeout) {
		t.Fatalf("err = %v, want ErrFirstByteTimeout", err)
	}
	f.End(err)
	if got := r.list(); len(got) != 1 || !errors.Is(got[0], ErrFirstByteTimeout) {
		t.Fatalf("reported %v, want one ErrFirstByteTimeout", got)
	}
	// Exempt requests (watches) have no deadline; a request with headers
	// is no longer subject to it.
	wctx, w, _ := g.Begin(context.Background(), Exempt)
	cctx, c, _ := g.Begin(context.Background(), Counted)
	c.FirstByte()
	_, probe, _ := g.Begin(context.Background(), Counted) // times the wait
	pctx := probeCtx(t, probe)
	<-pctx.Done()
	if wctx.Err() != nil || cctx.Err() != nil {
		t.Fatalf("watch ctx %v, answered request ctx %v: cut by the first-byte rule", wctx.Err(), cctx.Err())
	}
	w.End(nil)
	c.End(nil)
	probe.End(nil)
}

func probeCtx(t *testing.T, f *Flight) context.Context {
	t.Helper()
	if f == nil {
		t.Fatal("no flight")
	}
	return f.ctx
}

func TestReportRules(t *testing.T) {
	g, r := newGuard(t, Settings{})
	g.live.Store(false)
	_, f, _ := g.Begin(context.Background(), Counted)
	f.End(errors.New("during the dial"))
	g.Live()
	_, f, _ = g.Begin(context.Background(), Unreported)
	f.End(errors.New("probe"))
	cctx, cancel := context.WithCancel(context.Background())
	_, f, _ = g.Begin(cctx, Counted)
	cancel()
	f.End(context.Canceled)
	if got := r.list(); len(got) != 0 {
		t.Fatalf("reported %v; dial, probe and caller-canceled outcomes must not be", got)
	}
	boom := errors.New("boom")
	_, f, _ = g.Begin(context.Background(), Counted)
	f.End(boom)
	_, f, _ = g.Begin(context.Background(), Exempt)
	f.End(nil)
	if got := r.list(); len(got) != 2 || got[0] != boom || got[1] != nil {
		t.Fatalf("reported %v, want [boom <nil>]", got)
	}
}

func TestEstimatorDeadline(t *testing.T) {
	var e estimator
	if d := e.deadline(time.Second, 10*time.Second); d != time.Second {
		t.Errorf("no samples: %v, want the floor", d)
	}
	for range 50 {
		e.observe(time.Second)
	}
	if d := e.deadline(100*time.Millisecond, time.Minute); d < 4*time.Second || d > 5*time.Second {
		t.Errorf("steady 1s latency: deadline %v, want ≈4s", d)
	}
	if d := e.deadline(100*time.Millisecond, 2*time.Second); d != 2*time.Second {
		t.Errorf("cap: %v, want 2s", d)
	}
}

// Requests that hang together end together: the first timeout halves the
// deadline, and a request in flight already past the halved deadline is
// canceled with it; the next request gets the halved deadline.
func TestFirstByteTimeoutEndsTheOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := newGuard(t, Settings{MinFirstByte: 40 * time.Millisecond, MaxFirstByte: time.Minute})
		actx, a, _ := g.Begin(context.Background(), Counted)
		bctx, b, _ := g.Begin(context.Background(), Counted)
		<-actx.Done()
		synctest.Wait() // the timer's callback cancels one flight, then the other
		select {
		case <-bctx.Done():
		default:
			t.Fatal("a request started before the timeout, past the halved deadline, is still waiting")
		}
		for _, f := range []*Flight{a, b} {
			err := f.Err(context.Canceled)
			if !errors.Is(err, ErrFirstByteTimeout) {
				t.Fatalf("err = %v, want ErrFirstByteTimeout", err)
			}
			f.End(err)
		}
		if got := r.list(); len(got) != 2 {
			t.Fatalf("reported %v, want two failures", got)
		}
		if d := g.FirstByteDeadline(); d != 10*time.Millisecond {
			t.Errorf("deadline after two timeouts = %v, want 40ms/4", d)
		}
		_, c, _ := g.Begin(context.Background(), Counted)
		c.FirstByte()
		c.End(nil)
		if d := g.FirstByteDeadline(); d != 40*time.Millisecond {
			t.Errorf("deadline after an answer = %v, want the floor again", d)
		}
	})
}

// The bulkhead does not throttle a cluster that answers as usual: it takes
// any number of requests at once, and the cap holds once the cluster stops
// answering for a retransmission timeout.
func TestBulkheadCapsLateRequestsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := newGuard(t, Settings{MaxInFlight: 2, MaxFirstByte: time.Minute})
		for range 4 { // learn the cluster's latency: 10 ms answers
			_, f, err := g.Begin(context.Background(), Counted)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
			f.FirstByte()
			f.End(nil)
		}
		var flights []*Flight
		for i := range 5 { // none late yet: all admitted
			_, f, err := g.Begin(context.Background(), Counted)
			if err != nil {
				t.Fatalf("request %d of a healthy cluster: %v", i, err)
			}
			flights = append(flights, f)
		}
		time.Sleep(time.Second) // no answer since: every one of them is late
		if _, _, err := g.Begin(context.Background(), Counted); !errors.Is(err, ErrBulkheadFull) {
			t.Fatalf("with 5 late requests and no answer: %v, want ErrBulkheadFull", err)
		}
		for _, f := range flights {
			f.End(nil)
		}
	})
}

// A cluster that answers slower than it did at first (an apiserver under a
// start-up burst) but keeps answering is not held: no request is late
// before a tenth of MinFirstByte, nor if it was sent before the last
// answer, however long it waits. Once the cluster stops answering, the
// requests sent since become late and the cap holds.
func TestBulkheadLetsSlowAnsweringClusterThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := newGuard(t, Settings{MaxInFlight: 2, MinFirstByte: time.Second, MaxFirstByte: time.Minute})
		begin := func(what string) *Flight {
			t.Helper()
			_, f, err := g.Begin(context.Background(), Counted)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			return f
		}
		for range 8 { // fast answers: rto ≈ 10 ms
			f := begin("learning")
			time.Sleep(5 * time.Millisecond)
			f.FirstByte()
			f.End(nil)
		}
		var queue []*Flight
		for range 10 { // a burst, answered in order, one every 20 ms
			queue = append(queue, begin("burst"))
		}
		for i := range 10 {
			time.Sleep(19 * time.Millisecond) // all waiting longer than the rto
			queue = append(queue, begin(fmt.Sprintf("request after %d answers of the burst", i)))
			time.Sleep(time.Millisecond)
			queue[0].FirstByte()
			queue[0].End(nil)
			queue = queue[1:]
		}
		queue = append(queue, begin("sent with the last answer"), begin("sent with the last answer"))
		g.mu.Lock()
		late, timeouts := g.lateAfterLocked(), g.timeouts
		g.mu.Unlock()
		time.Sleep(late + time.Millisecond) // no answer since
		if timeouts != 0 || g.FirstByteDeadline() <= late+time.Millisecond {
			t.Fatal("first-byte timeouts would hold the cap: the test no longer checks lateness")
		}
		if _, _, err := g.Begin(context.Background(), Counted); !errors.Is(err, ErrBulkheadFull) {
			t.Fatalf("no answer for %v, two requests sent since late: %v, want ErrBulkheadFull", late, err)
		}
		for _, f := range queue {
			f.End(nil)
		}
	})
}
