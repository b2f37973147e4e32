package kube

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/pool"
)

// checker is a fake endpoint check: it records when each check of each
// cluster started, and answers with answer (nil: 200), or hangs until
// its context ends (hang), or until release is closed (stuck, ignoring
// its context).
type checker struct {
	mu       sync.Mutex
	answer   error
	hang     bool
	stuck    chan struct{} // non-nil: checks block on it, ignoring ctx
	started  map[client.ObjectKey][]time.Duration
	origin   time.Time
	inFlight int
	maxOut   int
}

func newChecker(answer error) *checker {
	return &checker{answer: answer, started: map[client.ObjectKey][]time.Duration{}, origin: time.Now()}
}

func (c *checker) check(ctx context.Context, key client.ObjectKey) error {
	c.mu.Lock()
	c.started[key] = append(c.started[key], time.Since(c.origin))
	c.inFlight++
	c.maxOut = max(c.maxOut, c.inFlight)
	answer, hang, stuck := c.answer, c.hang, c.stuck
	c.mu.Unlock()
	defer func() { c.mu.Lock(); c.inFlight--; c.mu.Unlock() }()
	switch {
	case stuck != nil:
		<-stuck
		return errors.New("stuck check returned")
	case hang:
		<-ctx.Done()
		return ctx.Err()
	}
	return answer
}

func (c *checker) set(answer error) { c.mu.Lock(); c.answer = answer; c.mu.Unlock() }

func (c *checker) times(key client.ObjectKey) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.started[key]...)
}

// reviveProber runs, in a synctest bubble, a Reconciler of fp (its
// SecretWatcher on fake informers, admitting what admit does, nil: all)
// with a Prober (Interval 10s, Timeout 5s, Concurrency as given:
// ReviveInterval 1s, checks bounded by 2s, at most Concurrency/2 in
// flight) whose endpoint check is c's, until the test's end.
// Its ReviveWindow is 10m, longer than these tests wait.
func reviveProber(t *testing.T, fp *fakePool, c *checker, concurrency int, admit func(client.ObjectKey) bool) {
	t.Helper()
	reviveProberWith(t, fp, c, ProberOptions{Interval: 10 * time.Second, Timeout: 5 * time.Second, Concurrency: concurrency,
		ReviveWindow: 10 * time.Minute}, admit)
}

// reviveProberWith is reviveProber with the Prober's options.
func reviveProberWith(t *testing.T, fp *fakePool, c *checker, opts ProberOptions, admit func(client.ObjectKey) bool) {
	t.Helper()
	pr, err := NewProber(fp, opts)
	if err != nil {
		t.Fatal(err)
	}
	pr.check = c.check // a fake pool has no Dialer
	r := &Reconciler{Prober: pr, Secrets: &SecretWatcher{Informers: newFakeInformers(), Pool: fp, Admit: admit}}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error)
	go func() { stopped <- r.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Error(err)
		}
	})
}

// sendEvent hands the reconciler an event of key, of type typ, with the state
// it leaves.
func sendEvent(fp *fakePool, key client.ObjectKey, typ pool.EventType, brk breaker.State, connected bool) {
	fp.events <- pool.Event[client.ObjectKey]{Type: typ, Key: key, Time: time.Now(), Breaker: brk, Connected: connected}
}

// lose hands the reconciler the events of a cluster that was connected
// and whose breaker opened: it lost its client now.
func lose(fp *fakePool, key client.ObjectKey) {
	sendEvent(fp, key, pool.Connected, breaker.StateClosed, true)
	sendEvent(fp, key, pool.BreakerOpened, breaker.StateOpen, false)
}

var deadKey = client.ObjectKey{Namespace: "f", Name: "dead"}

// A dead cluster (every check fails) whose breaker stays open is checked
// 1s after it opened, 2s later, then every 3s, each ±20 %: about 200
// checks in 10 minutes, never two at once, and the pool is asked for
// nothing.
func TestReviveBacksOffADeadCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fp, c := newFakePool(), newChecker(errors.New("connection refused"))
		reviveProber(t, fp, c, 10, nil)
		lose(fp, deadKey)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		got := c.times(deadKey)
		if len(got) < 166 || len(got) > 600/2.4+2 {
			t.Fatalf("%d checks in 10 minutes, want about 200 (one per 3s ±20 %%): %v", len(got), got)
		}
		prev := time.Duration(0)
		for i, at := range got {
			want := []time.Duration{time.Second, 2 * time.Second}[min(i, 1)]
			if i >= 2 {
				want = 3 * time.Second
			}
			if gap := at - prev; gap < want*8/10 || gap > want*12/10 {
				t.Fatalf("check %d came %v after the last (at %v), want %v ±20 %%", i, gap, at, want)
			}
			prev = at
		}
		if calls := fp.callLog(); len(calls) != 0 {
			t.Fatalf("the pool was asked %v for a dead cluster", calls)
		}
	})
}

// With the default ReviveWindow (2m), a cluster lost at t0 is checked
// until t0+2m, then left to the breaker's own probes; one never connected
// since the reconciler started (dead from the start) is not checked at
// all, nor is one connected again and then removed.
func TestReviveOnlyWithinTheWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fp, c := newFakePool(), newChecker(errors.New("connection refused"))
		reviveProberWith(t, fp, c, ProberOptions{Interval: 10 * time.Second, Timeout: 5 * time.Second}, nil)
		neverKey := client.ObjectKey{Namespace: "f", Name: "never"}
		sendEvent(fp, neverKey, pool.BreakerOpened, breaker.StateOpen, false)
		lose(fp, deadKey)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		got := c.times(deadKey)
		// 1s, 3s, then every 3s ±20 %: 40 or so before 2m, none after.
		if len(got) < 33 || len(got) > 52 || got[len(got)-1] > DefaultReviveWindow {
			t.Fatalf("checks at %v, want one per 3s until %v", got, DefaultReviveWindow)
		}
		if n := len(c.times(neverKey)); n != 0 {
			t.Fatalf("%d checks of a cluster never connected, want none", n)
		}
		sendEvent(fp, deadKey, pool.Removed, breaker.StateClosed, false)
		sendEvent(fp, deadKey, pool.BreakerOpened, breaker.StateOpen, false) // added again, dead
		if n := checksIn(c, deadKey, time.Minute); n != 0 {
			t.Fatalf("%d checks after Removed, want none", n)
		}
		if calls := fp.callLog(); len(calls) != 0 {
			t.Fatalf("the pool was asked %v", calls)
		}
	})
}

// checksIn returns how many checks of key started during the next d.
func checksIn(c *checker, key client.ObjectKey, d time.Duration) int {
	synctest.Wait()
	n := len(c.times(key))
	time.Sleep(d)
	synctest.Wait()
	return len(c.times(key)) - n
}

// No check while the half-open probe is out (the pool's own, at the end
// of the open period); a failed probe (BreakerOpened again) starts them
// again at the pace the failed checks reached; a check that answers 200
// calls Pool.Probe once; Removed, Connected, or a client in the pool (its
// event not read yet), end them.
func TestReviveProbesOnAnAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fp, c := newFakePool(), newChecker(errors.New("connection reset by peer"))
		reviveProber(t, fp, c, 10, nil)
		lose(fp, deadKey)
		if n := checksIn(c, deadKey, 3700*time.Millisecond); n != 2 { // at 1s and 3s, ±20 % each
			t.Fatalf("%d checks in 3.7s, want 2", n)
		}
		sendEvent(fp, deadKey, pool.BreakerHalfOpen, breaker.StateHalfOpen, false) // the pool's own probe
		if n := checksIn(c, deadKey, time.Minute); n != 0 {
			t.Fatalf("%d checks while the probe was out, want none", n)
		}
		sendEvent(fp, deadKey, pool.BreakerOpened, breaker.StateOpen, false) // the probe failed
		if n := checksIn(c, deadKey, time.Minute); n < 16 || n > 26 {
			t.Fatalf("%d checks in the minute after the probe failed, want one per 3s ±20 %%", n)
		}
		if calls := fp.callLog(); len(calls) != 0 {
			t.Fatalf("pool calls %v before a check succeeded", calls)
		}
		c.set(nil) // back
		checksIn(c, deadKey, 4*time.Second)
		if calls := fp.callLog(); len(calls) != 1 || calls[0] != "probe "+deadKey.String() {
			t.Fatalf("after a 200: pool calls %v, want one probe", calls)
		}
		for _, typ := range []pool.EventType{pool.Removed, pool.Connected} {
			c.set(errors.New("connection refused"))
			lose(fp, deadKey)
			time.Sleep(2 * time.Second) // a check or two
			sendEvent(fp, deadKey, typ, breaker.StateClosed, typ == pool.Connected)
			if n := checksIn(c, deadKey, time.Minute); n != 0 {
				t.Fatalf("%d checks after %v, want none", n, typ)
			}
		}
		// Connected before its event arrives: the pool holds its client.
		lose(fp, deadKey)
		fp.connect(&Cluster{Key: deadKey})
		if n := checksIn(c, deadKey, time.Minute); n != 0 {
			t.Fatalf("%d checks of a connected cluster, want none", n)
		}
	})
}

// A cluster that is not admitted (the SecretWatcher's Admit refuses it)
// is not checked, nor is any once the pool has closed.
func TestReviveChecksOnlyAdmittedClustersOfAnOpenPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fp, c := newFakePool(), newChecker(errors.New("connection refused"))
		other := client.ObjectKey{Namespace: "f", Name: "other"}
		reviveProber(t, fp, c, 10, func(key client.ObjectKey) bool { return key == deadKey })
		lose(fp, other)
		lose(fp, deadKey)
		if n, m := checksIn(c, other, time.Minute), len(c.times(deadKey)); n != 0 || m < 16 {
			t.Fatalf("%d checks of a cluster not admitted, %d of one admitted; want none, one per 3s", n, m)
		}
		close(fp.events) // the pool closed
		if n := checksIn(c, deadKey, time.Minute); n != 0 {
			t.Fatalf("%d checks a minute after the pool closed, want none", n)
		}
	})
}

// Many dead clusters whose checks hang: at most Concurrency/2 checks are
// in flight at once, each given up after 2s; a check that ignores its
// context keeps its cluster from being checked again until it returns.
func TestReviveBoundsChecksInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fp, c := newFakePool(), newChecker(nil)
		c.hang = true
		reviveProber(t, fp, c, 6, nil) // 3 checks in flight at most
		var keys []client.ObjectKey
		for i := range 20 {
			key := client.ObjectKey{Namespace: "f", Name: fmt.Sprintf("hung-%d", i)}
			keys = append(keys, key)
			lose(fp, key)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		c.mu.Lock()
		maxOut := c.maxOut
		c.mu.Unlock()
		total := 0
		for _, key := range keys {
			total += len(c.times(key))
		}
		// 3 slots, each check held 2s: at most 1.5 checks a second.
		if maxOut != 3 || total > 300*3/2+3 || total < 100 {
			t.Fatalf("%d checks at most in flight, %d in 5 minutes; want 3, at most 450 (and the slots used)", maxOut, total)
		}
	})
}

// A check that ignores its context and never returns holds its cluster:
// no second check of it starts while the first is out, and the workers go
// on (a probe of a connected cluster is not held up); once it returns, the
// checks go on.
func TestReviveOneCheckPerCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fp, c := newFakePool(), newChecker(errors.New("connection refused"))
		c.stuck = make(chan struct{})
		reviveProber(t, fp, c, 10, nil)
		lose(fp, deadKey)
		time.Sleep(time.Minute)
		synctest.Wait()
		// The pool's own probe goes out and fails meanwhile: the breaker
		// opens again, and a check is due again.
		sendEvent(fp, deadKey, pool.BreakerHalfOpen, breaker.StateHalfOpen, false)
		sendEvent(fp, deadKey, pool.BreakerOpened, breaker.StateOpen, false)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := c.times(deadKey); len(got) != 1 {
			t.Fatalf("checks %v while the first was stuck, want one", got)
		}
		c.mu.Lock()
		close(c.stuck)
		c.stuck = nil
		c.mu.Unlock()
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := c.times(deadKey); len(got) < 10 {
			t.Fatalf("checks %v once the stuck one returned, want one per 3s", got)
		}
	})
}

// ReviveInterval is validated by NewProber (the error names the field),
// defaults to 1s or Interval if shorter; the checks are the Dialer's for a
// pool NewPool built, none with DisableRevive or another pool.
func TestProberOptionsRevive(t *testing.T) {
	fp := newFakePool()
	for _, tc := range []struct {
		opts ProberOptions
		want string
	}{
		{ProberOptions{ReviveInterval: -time.Second}, "kube: invalid options: ProberOptions.ReviveInterval=-1s must not be negative"},
		{ProberOptions{ReviveInterval: 11 * time.Second}, "kube: invalid options: ProberOptions.ReviveInterval=11s must not exceed Interval=10s"},
		{ProberOptions{Interval: time.Second, ReviveInterval: 2 * time.Second}, "kube: invalid options: ProberOptions.ReviveInterval=2s must not exceed Interval=1s"},
	} {
		_, err := NewProber(fp, tc.opts)
		if !errors.Is(err, ErrInvalidOptions) || err.Error() != tc.want {
			t.Errorf("NewProber(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
	for _, tc := range []struct{ interval, revive, want time.Duration }{
		{0, 0, DefaultReviveInterval}, {100 * time.Millisecond, 0, 100 * time.Millisecond}, {0, 5 * time.Second, 5 * time.Second},
	} {
		pr, err := NewProber(fp, ProberOptions{Interval: tc.interval, ReviveInterval: tc.revive})
		if err != nil || pr.opts.ReviveInterval != tc.want {
			t.Errorf("Interval %v, ReviveInterval %v: got %v, %v; want ReviveInterval %v", tc.interval, tc.revive, pr, err, tc.want)
		}
	}
	d, err := NewDialer(unusedSource, DialerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPool(d, pool.Options[client.ObjectKey, *Cluster]{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, tc := range []struct {
		p       ClusterPool
		disable bool
		want    bool
	}{{p, false, true}, {p, true, false}, {fp, false, false}} {
		pr, err := NewProber(tc.p, ProberOptions{DisableRevive: tc.disable})
		if err != nil || (pr.check != nil) != tc.want || (newReviver(pr) != nil) != tc.want {
			t.Errorf("pool %T, DisableRevive %v: %v, checks %v; want checks %v", tc.p, tc.disable, err, pr.check != nil, tc.want)
		}
	}
}

// No check holds a worker: with one worker, and the checks of 20 dead
// clusters hanging to their timeout back to back, a connected cluster's
// probes (no wire: one per Interval) go out on time.
func TestReviveHoldsNoWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fp, c := newFakePool(), newChecker(nil)
		c.hang = true
		srv := &fakeAPIServer{origin: time.Now(), mode: "ok"}
		done := make(chan struct{})
		close(done)
		fp.connect(&Cluster{Key: wiredKey, config: &rest.Config{Host: "https://wired.invalid"},
			httpClient: &http.Client{Transport: srv}, cancel: func() {}, done: done})
		reviveProber(t, fp, c, 1, nil) // one worker, one check in flight
		for i := range 20 {
			lose(fp, client.ObjectKey{Namespace: "f", Name: fmt.Sprintf("hung-%d", i)})
		}
		at(srv.origin, 65*time.Second)
		if got, want := srv.requests(), seconds(10, 20, 30, 40, 50, 60); !slices.Equal(got, want) {
			t.Fatalf("probes at %v, want %v", got, want)
		}
	})
}

// A check's read of the ConfigSource says it is one (IsEndpointCheck), so
// that a source that counts dials can leave it out; other reads do not.
func TestCheckReadIsMarked(t *testing.T) {
	var marked []bool
	src := ConfigFunc(func(ctx context.Context, _ client.ObjectKey) (*rest.Config, error) {
		marked = append(marked, IsEndpointCheck(ctx))
		return nil, errors.New("no config")
	})
	d, err := NewDialer(src, DialerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: "fleet", Name: "marked"}
	if err := d.check(context.Background(), key); err == nil {
		t.Fatal("check with no config succeeded")
	}
	if _, _, err := src.Config(context.Background(), key); err == nil {
		t.Fatal("read with no config succeeded")
	}
	if len(marked) != 2 || !marked[0] || marked[1] {
		t.Fatalf("IsEndpointCheck of the check's read, then another read: %v, want [true false]", marked)
	}
}
