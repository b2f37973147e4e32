package pool

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// requeueing returns ctx marked by Requeued if on, with a SubscribeRequeue
// subscription open on p until the test ends (the event source).
func requeueing(t *testing.T, p *Pool[string, *client], ctx context.Context, on bool) context.Context {
	if !on {
		return ctx
	}
	subscribeRequeue(t.Context(), p)
	return Requeued(ctx)
}

// A Requeued Get never waits blindly: before any dial succeeded it returns
// ErrWaitTimeout at once, with the dial's deadline as RetryAfter; a plain
// one waits MaxWait for the same dial.
func TestRequeuedGetNeverWaitsBlind(t *testing.T) {
	for _, eventDriven := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			f := newFake()
			p := newPool(t, f, Options[string, *client]{})
			ctx := requeueing(t, p, context.Background(), eventDriven)
			start := time.Now()
			_, err := p.Get(ctx, "a")
			waited := time.Since(start)
			d, _ := RetryAfter(err)
			switch {
			case !errors.Is(err, ErrWaitTimeout):
				t.Fatalf("requeued=%v: Get while the first dial runs: %v, want ErrWaitTimeout", eventDriven, err)
			case eventDriven && (waited != 0 || d != DefaultDialTimeout):
				t.Errorf("requeued: waited %v, RetryAfter %v; want no wait and the dial's deadline (%v)", waited, d, DefaultDialTimeout)
			case !eventDriven && waited != DefaultMaxWait:
				t.Errorf("waited %v, want MaxWait (%v)", waited, DefaultMaxWait)
			}
			synctest.Wait()
			f.next(t).succeed()
			synctest.Wait()
		})
	}
}

// Once a dial took 200ms, a Get of another cluster whose dial just started
// does not wait (it cannot end within MaxWait); it is told to come back at
// the dial's expected end, or if requeued by events at its deadline: the
// Connected event comes first and keeps the caller's place in its queue.
// A plain Get of the same pool keeps the expected end.
func TestRequeuedRetryAfterIsTheDeadline(t *testing.T) {
	for _, eventDriven := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			f := newFake()
			p := newPool(t, f, Options[string, *client]{})
			ctx := requeueing(t, p, context.Background(), eventDriven)
			p.Connect("a")
			synctest.Wait()
			time.Sleep(200 * time.Millisecond)
			f.next(t).succeed()
			synctest.Wait()
			_, err := p.Get(ctx, "b")
			d, _ := RetryAfter(err)
			want := 200 * time.Millisecond
			if eventDriven {
				want = DefaultDialTimeout
			}
			if !errors.Is(err, ErrWaitTimeout) || d != want {
				t.Errorf("requeued=%v: %v, RetryAfter %v; want ErrWaitTimeout after %v", eventDriven, err, d, want)
			}
			synctest.Wait()
			f.next(t).succeed()
			synctest.Wait()
			p.Connect("c")
			synctest.Wait()
			_, err = p.Get(context.Background(), "c")
			if d, _ := RetryAfter(err); !errors.Is(err, ErrWaitTimeout) || d != 200*time.Millisecond {
				t.Errorf("plain Get: %v, RetryAfter %v; want the expected end (200ms)", err, d)
			}
			f.next(t).succeed()
			synctest.Wait()
		})
	}
}

// A queued dial's RetryAfter bounds its end: the n calls queued start
// within ceil(n/MaxTotalDials) rounds of the longest DialTimeout (a
// ForKey override included), and it ends one round later.
func TestQueuedRetryAfterBoundsTheEnd(t *testing.T) {
	for _, tc := range []struct {
		name    string
		longest time.Duration
	}{{"default", DefaultDialTimeout}, {"override", 30 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake()
				p := newPool(t, f, Options[string, *client]{MaxTotalDials: 2,
					ForKey: func(k string) Overrides {
						if k == "a" {
							return Overrides{DialTimeout: tc.longest}
						}
						return Overrides{}
					}})
				for _, k := range []string{"a", "b", "c", "d"} {
					p.Connect(k) // a, b run; c, d queue
				}
				synctest.Wait()
				_, err := p.Get(context.Background(), "e") // queued third
				want := 3 * tc.longest                     // ceil(3/2) rounds to start, one to end
				if d, _ := RetryAfter(err); !errors.Is(err, ErrWaitTimeout) || d != want {
					t.Errorf("%v, RetryAfter %v; want ErrWaitTimeout after %v", err, d, want)
				}
				for range 5 {
					f.next(t).succeed()
					synctest.Wait()
				}
			})
		})
	}
}

// Every end of a dial is an event: a failure that leaves the breaker
// closed is DialFailed, so callers sent away while it ran come back.
func TestDialFailedEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		ev := subscribe(t.Context(), p)
		p.Connect("a")
		synctest.Wait()
		f.next(t).fail(errRefused)
		synctest.Wait()
		if got := ev.types(); len(got) != 1 || got[0] != DialFailed {
			t.Errorf("events %v, want [DialFailed]", got)
		}
		if s := p.State("a"); s.Breaker.String() != "closed" {
			t.Errorf("breaker %v after one refused dial, want closed", s.Breaker)
		}
	})
}

// Requeue mode is per call: one pool shared by a controller whose Gets are
// requeued by events (a SubscribeRequeue subscription open, its Gets
// marked by Requeued) and a plain caller. The plain caller keeps its
// MaxWait wait before the first dial's length is known, and its RetryAfter
// of the expected end once it is; the requeued caller is sent away at once
// with the latest end.
func TestRequeueIsPerCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		requeued := requeueing(t, p, context.Background(), true)
		start := time.Now()
		_, err := p.Get(requeued, "a")
		if d, _ := RetryAfter(err); !errors.Is(err, ErrWaitTimeout) || time.Since(start) != 0 || d != DefaultDialTimeout {
			t.Errorf("requeued Get: %v after %v, RetryAfter %v; want ErrWaitTimeout at once, after the deadline", err, time.Since(start), d)
		}
		start = time.Now()
		_, err = p.Get(context.Background(), "a")
		if waited := time.Since(start); !errors.Is(err, ErrWaitTimeout) || waited != DefaultMaxWait {
			t.Errorf("plain Get of the shared pool: %v after %v; want ErrWaitTimeout after MaxWait (%v)", err, waited, DefaultMaxWait)
		}
		time.Sleep(200*time.Millisecond - DefaultMaxWait)
		f.next(t).succeed() // the pool's dials take 200ms
		synctest.Wait()
		p.Connect("b")
		synctest.Wait()
		_, err = p.Get(context.Background(), "b")
		if d, _ := RetryAfter(err); !errors.Is(err, ErrWaitTimeout) || d != 200*time.Millisecond {
			t.Errorf("plain Get: %v, RetryAfter %v; want the expected end (200ms)", err, d)
		}
		_, err = p.Get(requeued, "b")
		if d, _ := RetryAfter(err); !errors.Is(err, ErrWaitTimeout) || d != DefaultDialTimeout {
			t.Errorf("requeued Get: %v, RetryAfter %v; want the deadline (%v)", err, d, DefaultDialTimeout)
		}
		f.next(t).succeed()
		synctest.Wait()
	})
}
