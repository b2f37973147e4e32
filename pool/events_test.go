package pool

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// A slow subscriber loses intermediate events of a key but never its
// latest one, and publishing never blocks the pool.
func TestSlowSubscriberGetsLatestPerKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		p := newPool(t, f, Options[string, *client]{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ch := p.Subscribe(ctx) // nobody reads yet
		for i := range 1000 {
			p.publish(Event[string]{Type: Connected, Key: "a", Time: time.Unix(int64(i), 0)})
			p.publish(Event[string]{Type: BreakerOpened, Key: "b", Time: time.Unix(int64(i), 0)})
		}
		p.publish(Event[string]{Type: Disconnected, Key: "a", Time: time.Unix(5000, 0)})
		var got []Event[string]
	drain:
		for {
			synctest.Wait() // the subscriber goroutine is blocked sending, or idle
			select {
			case ev := <-ch:
				got = append(got, ev)
			default:
				break drain
			}
		}
		// At most one event per key is queued, plus the one the subscriber
		// goroutine may have taken before the burst.
		if len(got) < 2 || len(got) > 3 {
			t.Fatalf("received %d events, want 2 or 3: %+v", len(got), got)
		}
		last := map[string]Event[string]{}
		for _, e := range got {
			last[e.Key] = e
		}
		if e := last["a"]; e.Type != Disconnected || e.Time.Unix() != 5000 {
			t.Errorf("latest of a: %+v", e)
		}
		if e := last["b"]; e.Type != BreakerOpened || e.Time.Unix() != 999 {
			t.Errorf("latest of b: %+v", e)
		}
		cancel()
		synctest.Wait()
		if _, ok := <-ch; ok {
			t.Error("channel open after ctx cancel")
		}
	})
}
