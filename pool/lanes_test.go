package pool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// A Get does not spend its bound on a dial queued behind MaxTotalDials: it
// returns ErrWaitTimeout at once, and the Connected event follows when the
// dial lands.
func TestQueuedDialIsNotWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxTotalDials: 1})
		ev := subscribe(t.Context(), p)
		a := getAsync(context.Background(), p, "a")
		synctest.Wait()
		start := time.Now()
		r := <-getAsync(context.Background(), p, "b")
		if !errors.Is(r.err, ErrWaitTimeout) || r.at.Sub(start) != 0 {
			t.Fatalf("Get(b) behind a's dial: %v after %v, want ErrWaitTimeout at once", r.err, r.at.Sub(start))
		}
		// a's dial ends within a DialTimeout, b's starts then and ends
		// within another: come back once it surely ended (the Connected
		// event comes first).
		if d, ok := RetryAfter(r.err); !ok || d != 2*DefaultDialTimeout {
			t.Errorf("RetryAfter=%v,%v want two DialTimeouts while queued behind one dial", d, ok)
		}
		f.next(t).succeed() // a
		if r := <-a; r.err != nil {
			t.Fatalf("Get(a): %v", r.err)
		}
		synctest.Wait()
		b := f.next(t) // b's dial got the permit
		if b.key != "b" {
			t.Fatalf("dial of %s, want b", b.key)
		}
		// Now b's dial runs: a Get waits for it again.
		res := getAsync(context.Background(), p, "b")
		synctest.Wait()
		b.succeed()
		if r := <-res; r.err != nil || r.at.Sub(start) != 0 {
			t.Fatalf("Get(b) joining a running dial: %v after %v", r.err, r.at.Sub(start))
		}
		synctest.Wait()
		if got := ev.types(); len(got) != 2 || got[0] != Connected || got[1] != Connected {
			t.Errorf("events %v, want Connected for a and b", got)
		}
	})
}

// Dials of clusters that failed hold at most half of MaxTotalDials, so
// first dials of other clusters still start at once.
func TestSuspectDialsHoldHalfThePermits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxTotalDials: 4})
		failing := []string{"a", "b", "c"}
		for _, k := range failing { // one failure each: closed, but suspect
			res := getAsync(context.Background(), p, k)
			synctest.Wait()
			f.next(t).fail(errRefused)
			if r := <-res; !errors.Is(r.err, ErrDialFailed) {
				t.Fatalf("Get(%s): %v, want ErrDialFailed", k, r.err)
			}
		}
		synctest.Wait()
		dials := f.n.Load()
		for _, k := range failing {
			getAsync(context.Background(), p, k)
			synctest.Wait()
		}
		if n := f.n.Load() - dials; n != 2 {
			t.Fatalf("suspect dials running=%d, want half of MaxTotalDials=2", n)
		}
		for _, k := range []string{"d", "e"} {
			getAsync(context.Background(), p, k)
			synctest.Wait()
		}
		if n := f.n.Load() - dials; n != 4 {
			t.Fatalf("dials running=%d, want 2 suspect + 2 first dials", n)
		}
		running := map[string]*dialReq{}
		for range 4 {
			r := f.next(t)
			running[r.key] = r
		}
		if running["c"] != nil || running["d"] == nil || running["e"] == nil {
			t.Fatalf("running %v, want a, b, d, e (c queued in the suspect lane)", slices.Collect(maps.Keys(running)))
		}
		running["a"].succeed()
		synctest.Wait()
		if c := f.next(t); c.key != "c" {
			t.Fatalf("after a's dial: %s, want c", c.key)
		} else {
			c.succeed()
		}
		for _, k := range []string{"b", "d", "e"} {
			running[k].succeed()
		}
		synctest.Wait()
	})
}

// A half-open probe that queues for a slot keeps its rejections'
// RetryAfter in the future (the queue's bound while queued, the time to
// its deadline once it runs): callers never busy-loop at 1ms.
func TestQueuedProbeRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxTotalDials: 1, MaxSlowDials: 1,
			Breaker: breaker.Settings{ConsecutiveFailures: 1, OpenTimeout: time.Second, DisableJitter: true}})
		res := getAsync(context.Background(), p, "a")
		synctest.Wait()
		f.next(t).fail(errRefused) // a opens for 1s
		<-res
		getAsync(context.Background(), p, "b") // hangs; moves to the slow lane once c queues
		synctest.Wait()
		getAsync(context.Background(), p, "c") // runs once b is slow, and hangs too
		time.Sleep(time.Second)                // a's probe is due, and queues: both lanes are full
		synctest.Wait()
		_, err := p.Get(context.Background(), "a")
		if d, ok := RetryAfter(err); !errors.Is(err, ErrCircuitOpen) || !ok || d != 2*DefaultDialTimeout {
			t.Fatalf("Get(a) while its probe queues: %v, RetryAfter %v,%v; want ErrCircuitOpen after two DialTimeouts", err, d, ok)
		}
		time.Sleep(time.Second) // the error's RetryAt is a value: reading it later computes nothing again
		if d, _ := RetryAfter(err); d != 2*DefaultDialTimeout-time.Second {
			t.Errorf("RetryAfter read 1s later = %v, want %v (fixed when the error was made)", d, 2*DefaultDialTimeout-time.Second)
		}
		if b := f.next(t); b.key != "b" {
			t.Fatalf("first dial %s, want b", b.key)
		}
		c := f.next(t)
		if c.key != "c" {
			t.Fatalf("second dial %s, want c", c.key)
		}
		f.noDial(t)
		c.succeed() // frees the normal lane: the probe runs
		synctest.Wait()
		probe := f.next(t)
		if probe.key != "a" {
			t.Fatalf("running %s, want a's probe", probe.key)
		}
		time.Sleep(time.Second)
		_, err = p.Get(context.Background(), "a")
		if d, _ := RetryAfter(err); d != DefaultDialTimeout-time.Second {
			t.Errorf("RetryAfter while the probe runs = %v, want the time to its deadline %v", d, DefaultDialTimeout-time.Second)
		}
		probe.succeed()
		synctest.Wait()
		if _, err := p.Get(context.Background(), "a"); err != nil {
			t.Errorf("after the probe: %v", err)
		}
	})
}

// A dial in flight when Report opens the breaker, landing after the probe
// closed it again, must not replace the probe's cached client: that client
// would never reach OnClose. Found by TestPoolProperties.
func TestLateDialKeepsCachedClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxConcurrentDials: 2,
			Breaker: breaker.Settings{ConsecutiveFailures: 1, OpenTimeout: time.Second, DisableJitter: true}})
		late := getAsync(context.Background(), p, "a")
		synctest.Wait()
		first := f.next(t)
		p.Report("a", errRefused) // opens the breaker while the first dial runs
		time.Sleep(time.Second)
		synctest.Wait()
		f.next(t).succeed() // the probe closes it and caches its client
		synctest.Wait()
		probed, ok := p.Peek("a")
		if !ok {
			t.Fatal("no client after the probe")
		}
		first.succeed()
		synctest.Wait()
		if r := <-late; !errors.Is(r.err, ErrWaitTimeout) {
			t.Fatalf("the first Get: %v, want ErrWaitTimeout (it gave up before)", r.err)
		}
		if c, _ := p.Peek("a"); c != probed || probed.closed.Load() != 0 {
			t.Fatalf("cached %v (probe's %v, closed %d times), want the probe's client, open", c, probed, probed.closed.Load())
		}
		if got, err := p.Get(context.Background(), "a"); err != nil || got != probed {
			t.Fatalf("Get: %v %v, want the probe's client", got, err)
		}
		// newPool's cleanup checks that the late dial's client was closed once.
	})
}

// 100 clusters, 20 of whose first dials hang until a 2 s DialTimeout, 100
// callers at once, default Options otherwise: no healthy cluster's first
// connect waits behind the hanging dials. They leave the normal lane once
// they have run 4× the learned healthy latency (at least MaxWait), so the
// slowest healthy cluster connects within a few hundred milliseconds, not
// after the 2.07 s measured when hanging first dials held the permits.
func TestHangingFirstDialsDoNotDelayHealthyClusters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hanging := func(k string) bool { return k[0] == 'h' }
		dial := func(ctx context.Context, k string) (*client, error) {
			if hanging(k) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			select {
			case <-time.After(5 * time.Millisecond):
				return &client{key: k}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		p, err := New(dial, Options[string, *client]{DialTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		connected := map[string]time.Duration{}
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		events := p.Subscribe(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev := range events {
				if ev.Type == Connected {
					connected[ev.Key] = ev.Time.Sub(start)
				}
			}
		}()
		var keys []string
		for i := range 100 {
			k := fmt.Sprintf("c%02d", i)
			if i%5 == 0 { // every fifth, spread through the queue
				k = fmt.Sprintf("h%02d", i)
			}
			keys = append(keys, k)
			go p.Get(context.Background(), k) //nolint:errcheck // the Connected event tells
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		cancel()
		<-done
		var slowest time.Duration
		for _, k := range keys {
			if hanging(k) {
				continue
			}
			d, ok := connected[k]
			if !ok {
				t.Fatalf("healthy %s never connected", k)
			}
			slowest = max(slowest, d)
		}
		if slowest > 500*time.Millisecond {
			t.Errorf("slowest healthy first connect after %v, want well under the 2s DialTimeout", slowest)
		}
		t.Logf("slowest healthy first connect: %v", slowest)
	})
}

// 10 000 clusters asked at once: the pending dials wait in the queue with no
// goroutine each; only the dials running in the normal and the slow lane
// have one (and the pool has its one timer loop).
func TestPendingDialsHoldNoGoroutines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		dial := func(ctx context.Context, k string) (*client, error) {
			select {
			case <-release:
				return &client{key: k}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		opts := Options[string, *client]{MaxSlowDials: 8}
		p, err := New(dial, opts)
		if err != nil {
			t.Fatal(err)
		}
		before := runtime.NumGoroutine()
		for i := range 10_000 {
			if _, err := p.Get(context.Background(), fmt.Sprint(i)); !errors.Is(err, ErrWaitTimeout) {
				t.Fatalf("Get %d: %v", i, err)
			}
		}
		synctest.Wait()
		// One per running dial, and the pool's timer loop.
		if n := runtime.NumGoroutine() - before; n > DefaultMaxTotalDials+int(opts.MaxSlowDials)+1 {
			t.Errorf("%d goroutines for 10 000 pending dials, want at most MaxTotalDials+MaxSlowDials+1 (%d)",
				n, DefaultMaxTotalDials+opts.MaxSlowDials+1)
		}
		close(release)
		synctest.Wait()
		p.Close()
	})
}

// Connect dials an unknown or idle cluster without waiting, and does
// nothing for one dialing, connected or whose breaker is open (its backoff
// stands). Probe brings an open breaker's probe forward, is coalesced with
// the probe out, and dials nothing else.
func TestConnectAndProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{Breaker: breaker.Settings{ConsecutiveFailures: 1}})
		p.Probe("a") // unknown: nothing
		synctest.Wait()
		f.noDial(t)
		if p.State("a").Known {
			t.Fatal("Probe made state for an unknown key")
		}
		p.Connect("a") // unknown: dialed
		p.Connect("a") // coalesced with the dial in flight
		synctest.Wait()
		f.next(t).succeed()
		synctest.Wait()
		f.noDial(t)
		if _, up := p.Peek("a"); !up {
			t.Fatal("Connect did not connect a")
		}
		p.Connect("a") // connected: nothing to do
		p.Probe("a")
		synctest.Wait()
		f.noDial(t)

		failDial(t, p, f, "b", errRefused) // open for 5s
		time.Sleep(time.Second)
		p.Connect("b") // the backoff stands
		synctest.Wait()
		f.noDial(t)
		p.Probe("b") // the probe is due now, not in 4s
		synctest.Wait()
		probe := f.next(t)
		if s := p.State("b"); s.Breaker != breaker.StateHalfOpen || !s.Dialing {
			t.Fatalf("during the brought-forward probe: %+v", s)
		}
		p.Probe("b") // coalesced with the probe out
		synctest.Wait()
		f.noDial(t)
		probe.succeed()
		synctest.Wait()
		if _, err := p.Get(context.Background(), "b"); err != nil {
			t.Fatalf("after the probe: %v", err)
		}
		time.Sleep(time.Hour) // no second probe from the old timer
		synctest.Wait()
		f.noDial(t)
	})
}

// A Get racing Close never leaves an entry behind once Close returned.
func TestGetRacingCloseLeavesNoEntry(t *testing.T) {
	for range 200 {
		f := newFake()
		f.reply = func(string) *dialReply { return nil }
		p, err := New(f.dial, Options[string, *client]{})
		if err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			<-start
			for i := range 50 {
				p.Get(context.Background(), fmt.Sprint(i)) //nolint:errcheck // racing Close
			}
		}()
		close(start)
		p.Close()
		<-done
		n := 0
		p.entries.Range(func(any, any) bool { n++; return true })
		if n != 0 {
			t.Fatalf("%d entries after Close returned and the Gets ended", n)
		}
	}
}
