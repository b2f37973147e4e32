package pool_test

// Regression tests of issue 23: promises of the pool's documentation that
// an adversarial pass found broken. Black-box: only the public API.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

var errRefused = errors.New("connect: connection refused")

type conn struct{ key string }

// mustPool returns a pool over dial, closed at the end of the test.
func mustPool(t *testing.T, dial pool.DialFunc[string, *conn], o pool.Options[string, *conn]) *pool.Pool[string, *conn] {
	t.Helper()
	p, err := pool.New(dial, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// Item 2: with the defaults, a dial that hangs until DialTimeout opens the
// breaker for MaxOpenTimeout (30 s); the probe is then refused at once, and
// the next open period must not be shorter (it was 10 s).
func TestPromiseOpenPeriodAfterHungDialDoesNotShrink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hang atomic.Bool
		hang.Store(true)
		p := mustPool(t, func(ctx context.Context, key string) (*conn, error) {
			if hang.Load() {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return nil, errRefused
		}, pool.Options[string, *conn]{})
		p.Connect("a")
		time.Sleep(pool.DefaultDialTimeout)
		synctest.Wait()
		st := p.State("a")
		if st.Breaker != breaker.StateOpen || time.Until(st.NextProbe) != breaker.DefaultMaxOpenTimeout {
			t.Fatalf("after a hung dial: %+v, want open for %v", st, breaker.DefaultMaxOpenTimeout)
		}
		hang.Store(false)
		time.Sleep(time.Until(st.NextProbe)) // the probe runs, and is refused at once
		synctest.Wait()
		st = p.State("a")
		if st.Breaker != breaker.StateOpen || st.Opens != 2 {
			t.Fatalf("after the refused probe: %+v, want open a second time", st)
		}
		if d := time.Until(st.NextProbe); d < breaker.DefaultMaxOpenTimeout {
			t.Fatalf("open period after the refused probe: %v, shorter than the %v before it", d, breaker.DefaultMaxOpenTimeout)
		}
	})
}

// Item 3: Close must not start queued dials. Dialers that honour ctx return
// as soon as Close cancels it, and used to free slots that started queued
// dials with an already-canceled context. Real goroutines race here, so the
// scenario runs many times; with the fix no run can start a dial.
func TestPromiseCloseStartsNoQueuedDial(t *testing.T) {
	const running, queued, rounds = 32, 100, 100
	for round := range rounds {
		var closing atomic.Bool
		var late, canceled atomic.Int32
		entered := make(chan struct{}, running+queued)
		p, err := pool.New(func(ctx context.Context, key string) (*conn, error) {
			if closing.Load() {
				late.Add(1)
			}
			if ctx.Err() != nil {
				canceled.Add(1)
			}
			entered <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		}, pool.Options[string, *conn]{MaxTotalDials: running, MaxWait: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		for i := range running + queued {
			p.Connect(fmt.Sprint("c", i)) // dials without waiting
		}
		for range running {
			<-entered // every dial that may run has reached the dialer
		}
		closing.Store(true)
		if err := p.Close(); err != nil {
			t.Fatalf("round %d: Close: %v", round, err)
		}
		if n, c := late.Load(), canceled.Load(); n != 0 || c != 0 {
			t.Fatalf("round %d: %d of %d queued dials started after Close began (%d with a canceled context)",
				round, n, queued, c)
		}
	}
}

// Item 4: ForKey is called once when the pool first holds state for a key,
// also when the first Gets of a new key race: while the first call runs
// (held here), later Gets of the key wait for its answer instead of asking
// again, within their own context. Other keys are not held up.
func TestPromiseForKeyCalledOncePerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		calls := map[string]int{}
		gates := map[string]chan struct{}{"a": make(chan struct{}), "slow": make(chan struct{})}
		p := mustPool(t, func(ctx context.Context, key string) (*conn, error) {
			return &conn{key: key}, nil
		}, pool.Options[string, *conn]{ForKey: func(key string) pool.Overrides {
			mu.Lock()
			calls[key]++
			mu.Unlock()
			if g, ok := gates[key]; ok {
				<-g
			}
			return pool.Overrides{MaxWait: time.Second}
		}})
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() { _, errs[i] = p.Get(context.Background(), "a") })
			synctest.Wait() // the first is in ForKey, the others arrived
		}
		close(gates["a"])
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("Get %d: %v", i, err)
			}
		}
		mu.Lock()
		n := calls["a"]
		mu.Unlock()
		if n != 1 {
			t.Fatalf("ForKey called %d times for one key by racing first Gets, want once", n)
		}

		go p.Get(context.Background(), "slow") // its ForKey hangs
		synctest.Wait()
		if _, err := p.Get(context.Background(), "other"); err != nil {
			t.Errorf("Get of another key while a ForKey hangs: %v", err)
		}
		// A caller of the same key waits for the answer within its bound.
		start := time.Now()
		_, err := p.Get(context.Background(), "slow")
		if d, ok := pool.RetryAfter(err); !errors.Is(err, pool.ErrWaitTimeout) || !ok || d <= 0 ||
			time.Since(start) != pool.DefaultMaxWait {
			t.Errorf("Get of a key whose ForKey hangs: %v after %v, want ErrWaitTimeout after MaxWait",
				err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		if _, err := p.Get(ctx, "slow"); !errors.Is(err, pool.ErrWaitTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Get with a 1ms deadline of a key whose ForKey hangs: %v, want ErrWaitTimeout and its deadline", err)
		}
		close(gates["slow"])
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for k, n := range calls {
			if n != 1 {
				t.Errorf("ForKey called %d times for key %s, want once", n, k)
			}
		}
	})
}

// Item 5: a subscriber switching on the event type must not see a
// DialFailed with an open breaker. A dial is in flight when Reports open
// the breaker; it then fails. BreakerOpened already told subscribers.
func TestPromiseNoDialFailedWhileBreakerOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		proceed := make(chan struct{})
		p := mustPool(t, func(ctx context.Context, key string) (*conn, error) {
			<-proceed
			return nil, errRefused
		}, pool.Options[string, *conn]{MaxWait: time.Millisecond})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var mu sync.Mutex
		var got []pool.Event[string]
		sub := p.Subscribe(ctx)
		go func() {
			for ev := range sub {
				mu.Lock()
				got = append(got, ev)
				mu.Unlock()
			}
		}()
		p.Connect("a") // a dial starts and waits in the dialer
		synctest.Wait()
		for range breaker.DefaultConsecutiveFailures {
			p.Report("a", errRefused)
		}
		if st := p.State("a"); st.Breaker != breaker.StateOpen || !st.Dialing {
			t.Fatalf("state %+v, want open with the dial in flight", st)
		}
		close(proceed) // the dial in flight fails while the breaker is open
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range got {
			if ev.Type == pool.DialFailed && ev.Breaker != breaker.StateClosed {
				t.Errorf("event %v with breaker %v: DialFailed means the breaker stayed closed (events %v)",
					ev.Type, ev.Breaker, got)
			}
		}
	})
}

// Shutdown with a context that is already done waits for no dialer: those
// still running are named in ErrAbandoned. The error says they did not
// return in time; it does not claim they ignore their context (this one
// honours it, and simply had no time).
func TestPromiseShutdownDoneContextBlamesNoDialer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := mustPool(t, func(ctx context.Context, key string) (*conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}, pool.Options[string, *conn]{})
		p.Connect("a")
		synctest.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := p.Shutdown(ctx)
		if !errors.Is(err, pool.ErrAbandoned) || !strings.Contains(err.Error(), "a") {
			t.Fatalf("Shutdown with a done context: %v, want ErrAbandoned naming a", err)
		}
		if strings.Contains(err.Error(), "ignore") {
			t.Errorf("Shutdown with a done context blames the dialer: %q", err)
		}
	})
}
