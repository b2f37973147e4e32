package pool

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// Rule 10: Close cancels dials, wakes waiters with ErrClosed, closes cached
// clients, waits for its goroutines and is idempotent.
func TestCloseEndsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxWait: time.Minute})
		cached := connect(t, p, f, "a")
		waiter := getAsync(context.Background(), p, "b")
		synctest.Wait()
		dial := f.next(t)
		tripped := func() { // c: an open breaker with a probe timer pending
			for range 3 {
				failDial(t, p, f, "c", errRefused)
			}
		}
		tripped()
		sub := p.Subscribe(context.Background())

		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if dial.ctx.Err() == nil {
			t.Error("Close left a dial's context alive")
		}
		if r := <-waiter; !errors.Is(r.err, ErrClosed) {
			t.Errorf("waiter: %v, want ErrClosed", r.err)
		}
		if n := cached.closed.Load(); n != 1 {
			t.Errorf("cached client closed %d times", n)
		}
		if _, ok := <-sub; ok {
			t.Error("subscription still open after Close")
		}
		if err := p.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		for _, k := range []string{"a", "b", "c", "new"} {
			if _, err := p.Get(context.Background(), k); !errors.Is(err, ErrClosed) {
				t.Errorf("Get(%s) after Close: %v", k, err)
			}
		}
		if p.State("new").Known {
			t.Error("Get after Close created an entry")
		}
		if ch := p.Subscribe(context.Background()); ch != nil {
			if _, ok := <-ch; ok {
				t.Error("Subscribe after Close delivered")
			}
		}
		time.Sleep(time.Hour) // no probe fires after Close
		synctest.Wait()
		f.noDial(t)
		p.Report("a", errRefused)
		p.Remove("a")
	})
}

// Rule 10: a dial that returns a client after Close has it closed.
func TestCloseClosesLateClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		f.stubborn.Store(true) // a dialer that ignores cancellation
		getAsync(context.Background(), p, "a")
		synctest.Wait()
		dial := f.next(t)
		closed := make(chan struct{})
		go func() { p.Close(); close(closed) }()
		synctest.Wait()
		select {
		case <-closed:
			t.Fatal("Close returned while a dial was still running")
		default:
		}
		dial.succeed()
		<-closed
	})
}

// Rule 10: Remove during a dial: waiters get ErrRemoved, the late client is
// closed, not cached, and the next dial waits for the old one's permit.
func TestRemoveDuringDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxWait: time.Second})
		f.stubborn.Store(true)
		ev := subscribe(context.Background(), p)
		waiter := getAsync(context.Background(), p, "a")
		synctest.Wait()
		old := f.next(t)
		p.Remove("a")
		if r := <-waiter; !errors.Is(r.err, ErrRemoved) {
			t.Fatalf("waiter: %v, want ErrRemoved", r.err)
		}
		if old.ctx.Err() == nil {
			t.Fatal("Remove did not cancel the dial")
		}
		// The next Get starts a new dial, which queues for the cluster's
		// single slot until the old dialer returns: the Get does not wait
		// for a queued dial.
		if r := <-getAsync(context.Background(), p, "a"); !errors.Is(r.err, ErrWaitTimeout) {
			t.Fatalf("Get after Remove, the old dial still running: %v, want ErrWaitTimeout", r.err)
		}
		synctest.Wait()
		f.noDial(t)
		old.succeed() // returns a client although canceled
		synctest.Wait()
		f.next(t).succeed()
		synctest.Wait()
		r := <-getAsync(context.Background(), p, "a")
		if r.err != nil {
			t.Fatalf("Get after Remove: %v", r.err)
		}
		if r.c.id == 1 {
			t.Fatal("the removed dial's client was cached")
		}
		f.mu.Lock()
		late := f.made[0]
		f.mu.Unlock()
		if late.closed.Load() != 1 {
			t.Errorf("late client closed %d times, want 1", late.closed.Load())
		}
		synctest.Wait()
		if got := ev.types(); !slices.Equal(got, []EventType{Removed, Connected}) {
			t.Errorf("events %v, want [Removed Connected]", got)
		}
	})
}

func TestRemoveForgetsCluster(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		if _, ok := p.Peek("a"); ok {
			t.Fatal("Peek of an unknown key")
		}
		c := connect(t, p, f, "a")
		if got, ok := p.Peek("a"); !ok || got != c {
			t.Fatal("Peek of a connected key")
		}
		if keys := p.Keys(); len(keys) != 1 || keys[0] != "a" {
			t.Fatalf("Keys()=%v", keys)
		}
		p.Remove("a")
		if _, ok := p.Peek("a"); ok || len(p.Keys()) != 0 {
			t.Fatalf("after Remove: Peek=%v Keys()=%v", ok, p.Keys())
		}
		if c.closed.Load() != 1 || p.State("a").Known {
			t.Fatalf("after Remove: closed=%d state=%+v", c.closed.Load(), p.State("a"))
		}
		for range 3 {
			failDial(t, p, f, "b", errRefused)
		}
		p.Remove("b") // resets the breaker, drops the probe
		if s := p.State("b"); s.Known {
			t.Fatalf("b after Remove: %+v", s)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		f.noDial(t)
		connect(t, p, f, "b")
		p.Remove("never-seen")
	})
}

// No semaphore permit survives timeouts, failures, panics and Remove; the
// cleanup of newPool checks every semaphore after Close.
func TestNoPermitLeaks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{MaxConcurrentDials: 2, MaxTotalDials: 3,
			Breaker: breaker.Settings{ConsecutiveFailures: 100, DisableTrip: true}})
		for i := range 30 {
			res := getAsync(context.Background(), p, "k")
			synctest.Wait()
			d := f.next(t)
			switch i % 4 {
			case 0:
				d.fail(errRefused)
			case 1:
				d.panicWith(i)
			case 2:
				p.Remove("k")
				d.succeed()
			case 3: // the Get times out, then the dial does
				time.Sleep(DefaultDialTimeout)
			}
			<-res
			synctest.Wait()
		}
		if !p.idle() {
			t.Fatal("slots held with no dial running")
		}
	})
}

// Rule 11: bad input is an error naming the field; zero Options are the
// documented defaults.
func TestNewValidates(t *testing.T) {
	dial := func(context.Context, string) (int, error) { return 0, nil }
	if _, err := New[string, int](nil, Options[string, int]{}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("nil dialer: %v", err)
	}
	for _, tc := range []struct {
		o     Options[string, int]
		field string
	}{
		{Options[string, int]{MaxWait: -1}, "MaxWait="},
		{Options[string, int]{DialTimeout: -time.Second}, "DialTimeout="},
		{Options[string, int]{MaxConcurrentDials: -1}, "MaxConcurrentDials="},
		{Options[string, int]{MaxTotalDials: -1}, "MaxTotalDials="},
		{Options[string, int]{MaxConcurrentDials: 101}, "MaxConcurrentDials="},
		{Options[string, int]{MaxConcurrentDials: 4, MaxTotalDials: 2}, "MaxConcurrentDials="},
		{Options[string, int]{Breaker: breaker.Settings{OpenTimeout: -1}}, "OpenTimeout="},
	} {
		p, err := New(dial, tc.o)
		if p != nil || !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("New(%+v) = %v, want an error naming %s", tc.o, err, tc.field)
		}
	}
	p, err := New(dial, Options[string, int]{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if o := p.opts; o.MaxWait != 50*time.Millisecond || o.DialTimeout != 10*time.Second ||
		o.MaxConcurrentDials != 1 || o.MaxTotalDials != 100 || o.MaxSlowDials != 40 || o.FormatKey("x") != "x" {
		t.Errorf("defaults: %+v", o)
	}
}
