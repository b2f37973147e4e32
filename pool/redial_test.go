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

// Redial during a dial: the dial is canceled and a new one follows (a
// Secret that changed while the cluster was dialing is honoured), the
// waiters of the old dial get the new one's client, a requeued caller sent
// away before is brought back by the Redialed event, the old dial's
// client, should its dialer return one, is closed, and no Removed is sent.
func TestRedialDuringDial(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.stubborn.Store(true) // returns its client although canceled
		p := newPool(t, f, Options[string, *client]{MaxConcurrentDials: 2, MaxTotalDials: 2})
		ev := subscribe(t.Context(), p)
		p.Connect("a")
		synctest.Wait()
		old := f.next(t)
		_, err := p.Get(Requeued(context.Background()), "a")
		if !errors.Is(err, ErrWaitTimeout) {
			t.Fatalf("requeued Get during the dial: %v, want ErrWaitTimeout", err)
		}
		retryAfter, _ := RetryAfter(err)
		waiter := getAsync(context.Background(), p, "a")
		synctest.Wait()

		p.Redial("a")
		synctest.Wait()
		if got := ev.types(); !slices.Equal(got, []EventType{Redialed}) {
			t.Fatalf("events %v, want [Redialed] at once (RetryAfter was %v)", got, retryAfter)
		}
		if old.ctx.Err() == nil {
			t.Fatal("the old dial's context was not canceled")
		}
		fresh := f.next(t)
		old.succeed() // returns after its cancel: not cached
		synctest.Wait()
		if _, ok := p.Peek("a"); ok {
			t.Fatal("the old dial's client was cached")
		}
		fresh.succeed()
		synctest.Wait()
		r := <-waiter
		if c, ok := p.Peek("a"); r.err != nil || !ok || r.c != c {
			t.Fatalf("the old dial's waiter got %v, %v; want the new client %v", r.c, r.err, c)
		}
		if got := ev.types(); !slices.Equal(got, []EventType{Redialed, Connected}) {
			t.Fatalf("events %v, want [Redialed Connected]", got)
		}
	})
}

// Redial of a connected cluster closes its client and dials again, with
// the breaker's count kept; of an unknown or removed key it does nothing.
func TestRedialConnected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		p.Redial("a") // unknown: nothing
		synctest.Wait()
		f.noDial(t)
		p.Connect("a")
		synctest.Wait()
		f.next(t).succeed()
		synctest.Wait()
		first, _ := p.Peek("a")
		p.Report("a", errRefused)
		ev := subscribe(t.Context(), p)
		p.Redial("a")
		synctest.Wait()
		if first.closed.Load() != 1 {
			t.Fatal("the replaced client was not closed")
		}
		f.next(t).fail(errRefused)
		synctest.Wait()
		if s := p.State("a"); s.Breaker != breaker.StateClosed || s.ConsecutiveFailures != 2 {
			t.Fatalf("after the new dial failed: %+v, want 2 failures counted (the history kept)", s)
		}
		// Disconnected comes first, and may be coalesced with Redialed.
		if got := ev.types(); !slices.Contains(got, Redialed) || got[len(got)-1] != DialFailed || slices.Contains(got, Removed) {
			t.Fatalf("events %v, want Redialed, then DialFailed, and no Removed", got)
		}
		p.Remove("a")
		p.Redial("a") // removed: nothing
		time.Sleep(time.Hour)
		synctest.Wait()
		f.noDial(t)
		if p.State("a").Known {
			t.Fatal("Redial brought a removed cluster back")
		}
	})
}
