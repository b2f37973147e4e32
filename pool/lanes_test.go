package pool

import (
	"context"
	"errors"
	"maps"
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
		if d, ok := RetryAfter(r.err); !ok || d != DefaultDialTimeout {
			t.Errorf("RetryAfter=%v,%v want the whole DialTimeout while queued", d, ok)
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
// RetryAfter in the future (a whole DialTimeout while queued, the time to
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
		if d, ok := RetryAfter(err); !errors.Is(err, ErrCircuitOpen) || !ok || d != DefaultDialTimeout {
			t.Fatalf("Get(a) while its probe queues: %v, RetryAfter %v,%v; want ErrCircuitOpen after DialTimeout", err, d, ok)
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
