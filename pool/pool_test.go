package pool

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// connect dials key through the fake and returns its client.
func connect(t *testing.T, p *Pool[string, *client], f *fakeDialer, key string) *client {
	t.Helper()
	res := getAsync(context.Background(), p, key)
	synctest.Wait()
	f.next(t).succeed()
	r := <-res
	if r.err != nil {
		t.Fatalf("Get(%s): %v", key, r.err)
	}
	synctest.Wait() // the dial goroutine ends its span after waking waiters
	return r.c
}

// Rule 1: a connected cluster's client is returned without a lock, an
// allocation or a span, and without dialing again.
func TestHitIsFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		spans := newSpanRecorder()
		p := newPool(t, f, Options[string, *client]{TracerProvider: spans.provider()})
		c := connect(t, p, f, "a")
		before := len(spans.Ended())
		ctx := context.Background()
		allocs := testing.AllocsPerRun(1000, func() {
			got, err := p.Get(ctx, "a")
			if err != nil || got != c {
				t.Fatalf("hit: %v %v", got, err)
			}
		})
		if allocs != 0 {
			t.Errorf("hit allocates %v times", allocs)
		}
		if n := len(spans.Ended()) - before; n != 0 {
			t.Errorf("hits recorded %d spans", n)
		}
		if n := f.n.Load(); n != 1 {
			t.Errorf("dials=%d want 1", n)
		}
		// No lock: a hit succeeds while the entry's mutex is held.
		e, _ := p.entries.Load("a")
		e.(*entry[string, *client]).mu.Lock()
		got, err := p.Get(ctx, "a")
		e.(*entry[string, *client]).mu.Unlock()
		if err != nil || got != c {
			t.Errorf("hit with the entry locked: %v %v", got, err)
		}
	})
}

// Rule 2: a miss waits at most MaxWait; the dial runs on under the pool's
// context when the caller gives up.
func TestWaitIsBoundedByMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxWait: 40 * time.Millisecond})
		start := time.Now()
		res := getAsync(context.Background(), p, "a")
		synctest.Wait()
		dial := f.next(t)
		r := <-res
		if waited := r.at.Sub(start); waited != 40*time.Millisecond {
			t.Errorf("waited %v, want exactly MaxWait", waited)
		}
		if !errors.Is(r.err, ErrWaitTimeout) {
			t.Fatalf("err=%v, want ErrWaitTimeout", r.err)
		}
		if d, ok := RetryAfter(r.err); !ok || d != DefaultDialTimeout-40*time.Millisecond {
			t.Errorf("RetryAfter=%v,%v want the dial's remaining %v", d, ok, DefaultDialTimeout-40*time.Millisecond)
		}
		if dial.ctx.Err() != nil {
			t.Fatalf("the caller's timeout canceled the dial: %v", dial.ctx.Err())
		}
		if dl, ok := dial.ctx.Deadline(); !ok || dl.Sub(start) != DefaultDialTimeout {
			t.Errorf("dial deadline %v after start, want DialTimeout", dl.Sub(start))
		}
		dial.succeed()
	})
}

func TestWaitIsBoundedByCallerDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxWait: time.Second})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		start := time.Now()
		res := getAsync(ctx, p, "a")
		synctest.Wait()
		dial := f.next(t)
		r := <-res
		if waited := r.at.Sub(start); waited != 10*time.Millisecond {
			t.Errorf("waited %v, want the caller's 10ms", waited)
		}
		if !errors.Is(r.err, ErrWaitTimeout) || !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("err=%v, want ErrWaitTimeout and DeadlineExceeded", r.err)
		}
		if dial.ctx.Err() != nil {
			t.Fatal("the caller's deadline canceled the dial")
		}
		dial.succeed()
	})
}

func TestCallerCancelReturnsCtxErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxWait: time.Second})
		ctx, cancel := context.WithCancel(context.Background())
		res := getAsync(ctx, p, "a")
		synctest.Wait()
		cancel()
		if r := <-res; r.err != context.Canceled {
			t.Errorf("err=%v, want context.Canceled itself", r.err)
		}
		// Already canceled: no dial is started.
		if _, err := p.Get(ctx, "b"); err != context.Canceled {
			t.Errorf("Get with a done ctx: %v", err)
		}
		dial := f.next(t)
		if dial.ctx.Err() != nil {
			t.Fatal("the caller's cancel canceled the dial")
		}
		dial.succeed()
		synctest.Wait()
		f.noDial(t)
	})
}

// Rule 2: the semaphores cap dials per cluster and across the pool, FIFO.
func TestTotalDialsAreCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxTotalDials: 2})
		for _, k := range []string{"a", "b", "c", "d"} {
			getAsync(context.Background(), p, k)
			synctest.Wait() // queue in this order
		}
		if n := f.n.Load(); n != 2 {
			t.Fatalf("dials running=%d, want MaxTotalDials=2", n)
		}
		first := f.next(t)
		second := f.next(t)
		if first.key != "a" || second.key != "b" {
			t.Fatalf("running %s,%s want a,b", first.key, second.key)
		}
		first.fail(errRefused)
		synctest.Wait()
		third := f.next(t)
		if third.key != "c" || f.n.Load() != 3 {
			t.Fatalf("after a permit came back: %s (dials %d), want c (FIFO)", third.key, f.n.Load())
		}
		second.succeed()
		third.succeed()
		synctest.Wait()
		f.next(t).succeed()
	})
}

// Rule 3: a herd of first Gets causes one dial and shares its client.
func TestHerdSharesOneDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		const n = 100
		results := make([]<-chan getResult, n)
		for i := range results {
			results[i] = getAsync(context.Background(), p, "a")
		}
		synctest.Wait() // all 100 are waiting
		time.Sleep(20 * time.Millisecond)
		f.next(t).succeed()
		var first *client
		for i, ch := range results {
			r := <-ch
			if r.err != nil {
				t.Fatalf("caller %d: %v", i, r.err)
			}
			if first == nil {
				first = r.c
			} else if r.c != first {
				t.Fatalf("caller %d got another client", i)
			}
		}
		if d := f.n.Load(); d != 1 {
			t.Errorf("dials=%d want 1", d)
		}
	})
}

// Rule 4: a dial that lands after its waiters left is cached and announced.
func TestLateSuccessIsCachedAndAnnounced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		ev := subscribe(context.Background(), p)
		res := getAsync(context.Background(), p, "a")
		synctest.Wait()
		dial := f.next(t)
		if r := <-res; !errors.Is(r.err, ErrWaitTimeout) {
			t.Fatalf("first Get: %v", r.err)
		}
		time.Sleep(3 * time.Second)
		dial.succeed()
		synctest.Wait()
		if got := ev.types(); len(got) != 1 || got[0] != Connected {
			t.Fatalf("events %v, want [Connected]", got)
		}
		if _, err := p.Get(context.Background(), "a"); err != nil {
			t.Fatalf("Get after the late success: %v", err)
		}
		if n := f.n.Load(); n != 1 {
			t.Errorf("dials=%d want 1", n)
		}
	})
}

// waitOnHang starts a Get whose dial hangs and returns how long it waited;
// the dial goes on until its deadline.
func waitOnHang(t *testing.T, p *Pool[string, *client], f *fakeDialer, key string) time.Duration {
	t.Helper()
	start := time.Now()
	res := getAsync(context.Background(), p, key)
	synctest.Wait()
	f.next(t) // hangs: the fake returns at its context's deadline
	r := <-res
	if !errors.Is(r.err, ErrWaitTimeout) {
		t.Fatalf("Get: %v, want ErrWaitTimeout", r.err)
	}
	return r.at.Sub(start)
}

// Rule 5: a Get waits only for a dial expected to end within its bound.
// A cluster whose last dial hung until its deadline is not waited for
// (ErrWaitTimeout at once, RetryAfter the deadline of the dial in flight);
// one refused at once is; a success restores the wait.
func TestWaitSkipsHangingCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxWait: 80 * time.Millisecond,
			Breaker: breaker.Settings{ConsecutiveFailures: 10, DisableTrip: true}})
		if got := waitOnHang(t, p, f, "a"); got != 80*time.Millisecond {
			t.Fatalf("first wait: %v, want the whole 80ms (nothing known yet)", got)
		}
		time.Sleep(DefaultDialTimeout) // the first dial hangs until its deadline
		synctest.Wait()
		start := time.Now()
		r := <-getAsync(context.Background(), p, "a")
		if !errors.Is(r.err, ErrWaitTimeout) || r.at != start {
			t.Fatalf("Get after a hung dial: %v after %v, want ErrWaitTimeout at once", r.err, r.at.Sub(start))
		}
		if d, ok := RetryAfter(r.err); !ok || d != DefaultDialTimeout {
			t.Errorf("RetryAfter=%v,%v, want the dial's deadline %v", d, ok, DefaultDialTimeout)
		}
		synctest.Wait()
		f.next(t).fail(errRefused) // refused at once: the next dial is waited for
		synctest.Wait()
		res := getAsync(context.Background(), p, "a")
		synctest.Wait()
		f.next(t).succeed()
		if r := <-res; r.err != nil || r.at != start {
			t.Fatalf("Get after a refused dial: %v after %v, want the client", r.err, r.at.Sub(start))
		}
		if s := p.State("a"); s.ConsecutiveFailures != 0 || s.Breaker != breaker.StateClosed {
			t.Fatalf("state %+v", s)
		}
	})
}

func failDial(t *testing.T, p *Pool[string, *client], f *fakeDialer, key string, err error) error {
	t.Helper()
	res := getAsync(context.Background(), p, key)
	synctest.Wait()
	f.next(t).fail(err)
	return (<-res).err
}

// Rule 6: ConsecutiveFailures failed dials open the breaker; Get then
// rejects at once without dialing, with RetryAfter the time to the probe.
func TestBreakerTripsAndRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{Breaker: breaker.Settings{DisableJitter: true}})
		for i := range 3 {
			err := failDial(t, p, f, "a", errRefused)
			if !errors.Is(err, ErrDialFailed) || !errors.Is(err, errRefused) {
				t.Fatalf("dial %d: %v, want ErrDialFailed wrapping the cause", i, err)
			}
			if d, ok := RetryAfter(err); i < 2 && (!ok || d != DefaultMaxWait) {
				t.Errorf("RetryAfter of failure %d=%v,%v, want MaxWait (the next Get dials again)", i, d, ok)
			}
			if i == 2 {
				if d, ok := RetryAfter(err); !ok || d != breaker.DefaultOpenTimeout {
					t.Errorf("RetryAfter of the tripping failure=%v,%v", d, ok)
				}
			}
		}
		time.Sleep(time.Second)
		start := time.Now()
		_, err := p.Get(context.Background(), "a")
		if !errors.Is(err, ErrCircuitOpen) || time.Since(start) != 0 {
			t.Fatalf("Get on an open breaker: %v after %v", err, time.Since(start))
		}
		if d, ok := RetryAfter(err); !ok || d != breaker.DefaultOpenTimeout-time.Second {
			t.Errorf("RetryAfter=%v,%v want %v", d, ok, breaker.DefaultOpenTimeout-time.Second)
		}
		synctest.Wait()
		f.noDial(t)
		if n := f.n.Load(); n != 3 {
			t.Errorf("dials=%d want 3", n)
		}
		if s := p.State("a"); s.Breaker != breaker.StateOpen || s.Opens != 1 ||
			!s.NextProbe.Equal(start.Add(breaker.DefaultOpenTimeout-time.Second)) {
			t.Errorf("state %+v", s)
		}
	})
}

// The classifier decides what counts: errors it ignores never trip.
func TestClassifierIgnoredErrorsDoNotTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		errForbidden := errors.New("forbidden")
		p := newPool(t, f, Options[string, *client]{Breaker: breaker.Settings{
			IsFailure: func(err error) bool { return !errors.Is(err, errForbidden) },
		}})
		for range 5 {
			failDial(t, p, f, "a", errForbidden)
		}
		if s := p.State("a"); s.Breaker != breaker.StateClosed || s.ConsecutiveFailures != 0 {
			t.Fatalf("state %+v after ignored errors", s)
		}
	})
}
