package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// Every user callback may hang, ignore its context, panic or return
// nonsense; the pool stays bounded (issues 11 and 16).

// A dialer that ignores its context is timed out by the pool at
// DialTimeout: the dial counts as a failure, its slot comes back (another
// cluster dials with MaxTotalDials 1), the breaker trips, and Close returns
// within DialTimeout, naming the abandoned dialer. Its late client goes to
// OnClose.
func TestStuckDialerIsTimedOutByThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.stubborn.Store(true)
		var closed atomic.Int32
		// Default breaker settings: a dial that hung until its deadline
		// opens the breaker at once, for MaxOpenTimeout.
		p, err := New(f.dial, Options[string, *client]{MaxTotalDials: 1, MaxSlowDials: 1, DialTimeout: time.Second,
			Breaker: breaker.Settings{DisableJitter: true},
			OnClose: func(_ string, c *client) { closed.Add(1); c.closed.Add(1) }})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res := getAsync(context.Background(), p, "a")
		synctest.Wait()
		stuck := f.next(t)
		<-res
		time.Sleep(time.Second)
		synctest.Wait()
		if s := p.State("a"); s.Breaker != breaker.StateOpen || s.Dialing || !s.NextProbe.Equal(start.Add(time.Second+breaker.DefaultMaxOpenTimeout)) {
			t.Fatalf("after DialTimeout: %+v, want the breaker open for %v and no dial", s, breaker.DefaultMaxOpenTimeout)
		}
		if !p.idle() {
			t.Fatal("the stuck dial still holds its slot")
		}
		b := getAsync(context.Background(), p, "b") // the only slot is free again
		synctest.Wait()
		f.next(t).succeed()
		if r := <-b; r.err != nil {
			t.Fatalf("Get(b) after a's dial was timed out: %v", r.err)
		}
		// A second stuck dial, running when Close starts.
		getAsync(context.Background(), p, "c")
		synctest.Wait()
		stuckC := f.next(t)
		closeAt := time.Now()
		err = p.Close()
		if took := time.Since(closeAt); took > time.Second {
			t.Errorf("Close took %v, want at most DialTimeout", took)
		}
		if !errors.Is(err, ErrAbandoned) || !strings.Contains(err.Error(), "a") || !strings.Contains(err.Error(), "c") {
			t.Errorf("Close: %v, want ErrAbandoned naming a and c", err)
		}
		stuck.succeed() // the dialers return late, with clients
		stuckC.succeed()
		synctest.Wait()
		if n := closed.Load(); n != 3 { // b's cached client, and both late ones
			t.Errorf("OnClose calls %d, want 3", n)
		}
		f.checkClosedOnce(t)
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("the whole run took %v", took)
		}
	})
}

// A dial returning a nil client and no error is ErrDialFailed, not a
// connected cluster; a client returned together with an error is closed.
func TestNonsenseDialResults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var closed atomic.Int32
		leaked := &client{key: "b"}
		dial := func(_ context.Context, key string) (*client, error) {
			if key == "a" {
				return nil, nil
			}
			return leaked, errRefused
		}
		p, err := New(dial, Options[string, *client]{OnClose: func(string, *client) { closed.Add(1) }})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if c, err := p.Get(context.Background(), "a"); !errors.Is(err, ErrDialFailed) || c != nil {
			t.Fatalf("(nil, nil) dial: %v, %v; want ErrDialFailed", c, err)
		}
		if p.State("a").Connected {
			t.Fatal("a nil client was cached")
		}
		if _, err := p.Get(context.Background(), "b"); !errors.Is(err, ErrDialFailed) {
			t.Fatalf("dial with client and error: %v", err)
		}
		synctest.Wait()
		if n := closed.Load(); n != 1 {
			t.Errorf("client returned with an error: OnClose called %d times, want 1", n)
		}
	})
}

// Panics in OnClose, IsFailure, FormatKey and ForKey are recovered: Remove,
// Report, Get and Close go on, every client still reaches OnClose once,
// and the key is never left locked.
func TestCallbackPanicsAreRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		var onClose atomic.Int32
		errPanicky := errors.New("classifier panics on this")
		p, err := New(f.dial, Options[string, *client]{
			OnClose: func(_ string, c *client) { onClose.Add(1); c.closed.Add(1); panic("OnClose bug") },
			Breaker: breaker.Settings{IsFailure: func(err error) bool {
				if errors.Is(err, errPanicky) {
					panic("IsFailure bug")
				}
				return err != nil
			}},
			FormatKey: func(k string) string {
				if k == "unprintable" {
					panic("FormatKey bug")
				}
				return k
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"a", "b", "c", "d"} {
			connect(t, p, f, k)
		}
		p.Report("a", errPanicky) // IsFailure panics in Report: counted as a failure
		if s := p.State("a"); s.ConsecutiveFailures != 1 {
			t.Fatalf("after a panicking classifier: %+v", s)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := p.Get(ctx, "a"); err != nil { // the key is not locked
			t.Fatalf("Get after the classifier panicked: %v", err)
		}
		p.Remove("b") // OnClose panics: Remove still returns
		if p.State("b").Known {
			t.Fatal("b still known after Remove")
		}
		// IsFailure panicking on the pool's own goroutine (a dial's
		// outcome) does not take the process down.
		res := getAsync(context.Background(), p, "e")
		synctest.Wait()
		f.next(t).fail(errPanicky)
		if r := <-res; !errors.Is(r.err, ErrDialFailed) {
			t.Fatalf("Get(e): %v", r.err)
		}
		if _, err := p.Get(context.Background(), "unprintable"); err != nil && !errors.Is(err, ErrWaitTimeout) {
			t.Logf("Get(unprintable): %v", err)
		}
		synctest.Wait()
		f.next(t).succeed()
		synctest.Wait()
		if err := p.Close(); err != nil { // OnClose panics for every client: all still closed
			t.Fatalf("Close: %v", err)
		}
		f.checkClosedOnce(t)
		if n := onClose.Load(); n != 5 {
			t.Errorf("OnClose calls %d, want 5 (a, b, c, d, unprintable)", n)
		}
	})
}

// A probe whose error the classifier does not count ends in a decision:
// the breaker re-opens for its next period (it used to stay half-open,
// rejecting with RetryAfter 1ms for ever).
func TestIgnoredProbeErrorReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{Breaker: breaker.Settings{DisableJitter: true}}) // default classifier
		ev := subscribe(t.Context(), p)
		for range 3 {
			failDial(t, p, f, "a", errRefused)
		}
		time.Sleep(breaker.DefaultOpenTimeout)
		synctest.Wait()
		f.next(t).fail(context.Canceled) // the dialer's own Canceled: not counted by the default classifier
		synctest.Wait()
		s := p.State("a")
		if s.Breaker != breaker.StateOpen || time.Until(s.NextProbe) != 2*breaker.DefaultOpenTimeout {
			t.Fatalf("after an ignored probe error: %+v, want open for %v", s, 2*breaker.DefaultOpenTimeout)
		}
		time.Sleep(2 * breaker.DefaultOpenTimeout)
		synctest.Wait()
		f.next(t).succeed()
		synctest.Wait()
		if _, err := p.Get(context.Background(), "a"); err != nil {
			t.Fatalf("after the next probe: %v", err)
		}
		ev.mu.Lock()
		last := ev.got[len(ev.got)-1]
		ev.mu.Unlock()
		if last.Type != Connected || last.Breaker != breaker.StateClosed {
			t.Errorf("latest event %+v, want Connected with the breaker closed", last)
		}
	})
}

// Report after Remove neither re-creates the cluster's breaker state nor
// dials it; Remove of an open cluster sends Removed, whose state is closed.
func TestReportAfterRemoveIsIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.stubborn.Store(true)
		p := newPool(t, f, Options[string, *client]{Breaker: breaker.Settings{ConsecutiveFailures: 1}})
		ev := subscribe(t.Context(), p)
		res := getAsync(context.Background(), p, "a")
		synctest.Wait()
		dial := f.next(t)
		<-res
		p.Remove("a") // the canceled dial is still unwinding
		for range 3 {
			p.Report("a", errRefused)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		f.noDial(t)
		if _, up := p.Peek("a"); up {
			t.Fatal("Report after Remove cached a client")
		}
		dial.succeed()
		synctest.Wait()
		if p.State("a").Known {
			t.Fatal("removed key still known once its dial returned")
		}
		// Remove of an open breaker: the latest event says closed, not open.
		failDial(t, p, f, "b", errRefused)
		synctest.Wait()
		p.Remove("b")
		synctest.Wait()
		ev.mu.Lock()
		last := ev.got[len(ev.got)-1]
		ev.mu.Unlock()
		if last.Type != Removed || last.Key != "b" || last.Breaker != breaker.StateClosed || last.Connected {
			t.Fatalf("latest event %+v, want Removed with a closed breaker", last)
		}
		f.stubborn.Store(false)
	})
}

// A Get whose context is already done keeps no state and starts nothing:
// it returns the caller's own error (100 000 of them leave no entry).
func TestDoneContextKeepsNoState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		canceled, cancel2 := context.WithCancel(context.Background())
		cancel2()
		for i := range 100_000 {
			ctx := expired
			if i%2 == 1 {
				ctx = canceled
			}
			if _, err := p.Get(ctx, string(rune('A'+i%1000))+"x"); err != ctx.Err() {
				t.Fatalf("Get with a done context: %v, want %v as is", err, ctx.Err())
			}
		}
		if keys := p.Keys(); len(keys) != 0 {
			t.Fatalf("%d entries after Gets with done contexts", len(keys))
		}
		n := 0
		p.entries.Range(func(any, any) bool { n++; return true })
		if n != 0 {
			t.Fatalf("%d map entries", n)
		}
		synctest.Wait()
		f.noDial(t)
	})
}

// Options that would overflow a deadline, and NaN jitter, are refused;
// ForKey overrides are validated per key and applied.
func TestOverridesAndLimits(t *testing.T) {
	dial := func(context.Context, string) (*client, error) { return &client{}, nil }
	for _, tc := range []struct {
		o     Options[string, *client]
		field string
	}{
		{Options[string, *client]{DialTimeout: math.MaxInt64}, "DialTimeout="},
		{Options[string, *client]{MaxWait: MaxDuration + 1}, "MaxWait="},
		{Options[string, *client]{MaxSlowDials: -1}, "MaxSlowDials="},
		{Options[string, *client]{Breaker: breaker.Settings{Jitter: math.NaN()}}, "Jitter="},
		{Options[string, *client]{Breaker: breaker.Settings{MaxOpenTimeout: math.MaxInt64}}, "MaxOpenTimeout="},
	} {
		if _, err := New(dial, tc.o); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("New: %v, want an error naming %s", err, tc.field)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.stubborn.Store(true)
		p := newPool(t, f, Options[string, *client]{ForKey: func(k string) Overrides {
			switch k {
			case "bad":
				return Overrides{DialTimeout: -time.Second}
			case "panics":
				panic("ForKey bug")
			case "edge":
				return Overrides{DialTimeout: 30 * time.Second, MaxWait: time.Second,
					Breaker: &breaker.Settings{ConsecutiveFailures: 1}}
			}
			return Overrides{}
		}})
		for k, field := range map[string]string{"bad": "ForKey.DialTimeout=", "panics": "ForKey panicked"} {
			if _, err := p.Get(context.Background(), k); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), field) {
				t.Errorf("Get(%s): %v, want ErrInvalidOptions naming %s", k, err, field)
			}
			if p.State(k).Known {
				t.Errorf("state kept for %s", k)
			}
		}
		start := time.Now()
		res := getAsync(context.Background(), p, "edge")
		synctest.Wait()
		dial := f.next(t)
		if r := <-res; r.at.Sub(start) != time.Second {
			t.Errorf("edge waited %v, want its own MaxWait 1s", r.at.Sub(start))
		}
		time.Sleep(DefaultDialTimeout)
		synctest.Wait()
		if s := p.State("edge"); !s.Dialing {
			t.Fatalf("edge's dial ended at the pool's DialTimeout, not its own 30s: %+v", s)
		}
		time.Sleep(20 * time.Second)
		synctest.Wait()
		if s := p.State("edge"); s.Breaker != breaker.StateOpen { // one failure trips edge
			t.Fatalf("edge after its own 30s DialTimeout: %+v, want open", s)
		}
		dial.succeed()
		f.stubborn.Store(false)
	})
}

// A dialer whose own timeout fires a little before the pool's deadline
// (client-go's 10 s beside DialTimeout 10 s) hung all the same: the breaker
// opens at once for MaxOpenTimeout, as at the pool's deadline. A timeout
// error after a short time (a 1 s connect timeout) is one plain failure.
func TestDialerOwnTimeoutIsAHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{DialTimeout: 10 * time.Second,
			Breaker: breaker.Settings{DisableJitter: true}})
		ownTimeout := fmt.Errorf("dial tcp: %w", context.DeadlineExceeded)
		for _, tc := range []struct {
			key   string
			after time.Duration
			open  bool
		}{{"quick", time.Second, false}, {"hung", 10*time.Second - time.Millisecond, true}} {
			start := time.Now()
			res := getAsync(context.Background(), p, tc.key)
			synctest.Wait()
			d := f.next(t)
			<-res // MaxWait is over long before
			time.Sleep(time.Until(start.Add(tc.after)))
			d.fail(ownTimeout)
			synctest.Wait()
			s := p.State(tc.key)
			if open := s.Breaker == breaker.StateOpen; open != tc.open {
				t.Fatalf("%s: timeout error after %v: breaker %v, want open=%v", tc.key, tc.after, s.Breaker, tc.open)
			}
			if tc.open && !s.NextProbe.Equal(start.Add(tc.after+breaker.DefaultMaxOpenTimeout)) {
				t.Fatalf("%s: next probe %v after the failure, want %v", tc.key, s.NextProbe.Sub(start.Add(tc.after)), breaker.DefaultMaxOpenTimeout)
			}
		}
	})
}
