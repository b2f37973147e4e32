package load

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Run starts calls on schedule (open loop): a call that hangs delays
// neither the next start nor the count; calls past their timeout fail.
func TestRunIsOpenLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		starts := map[int]time.Duration{}
		t0 := time.Now()
		get := func(ctx context.Context, k int) error {
			mu.Lock()
			starts[k] = time.Since(t0)
			mu.Unlock()
			switch k {
			case 3: // hangs until its timeout
				<-ctx.Done()
				return ctx.Err()
			case 5:
				return errors.New("refused")
			}
			time.Sleep(20 * time.Millisecond)
			return nil
		}
		res := Run(context.Background(), 100, time.Second, 500*time.Millisecond, get)
		if len(res.All) != 100 || len(starts) != 100 {
			t.Fatalf("%d calls (%d started), want 100 in 1 s at 100/s", len(res.All), len(starts))
		}
		for k, at := range starts {
			if want := time.Duration(k) * 10 * time.Millisecond; at != want {
				t.Fatalf("call %d started at %v, want %v", k, at, want)
			}
		}
		d := res.Dists()
		if g, f := d[GetName], d[FailedName]; g.N != 100 || g.P50 != 20 || g.Max != 500 || f.N != 2 || f.Max != 500 {
			t.Fatalf("dists %+v", d)
		}
	})
}

// Run stops starting calls when its context ends and waits for those in
// flight.
func TestRunStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 95*time.Millisecond)
		defer cancel()
		var mu sync.Mutex
		ended := 0
		res := Run(ctx, 100, time.Minute, time.Second, func(context.Context, int) error {
			time.Sleep(time.Second) // outlives ctx: not cut short by it
			mu.Lock()
			ended++
			mu.Unlock()
			return nil
		})
		if len(res.All) != 10 || ended != 10 {
			t.Fatalf("%d results, %d ended; want the 10 calls started in 95 ms", len(res.All), ended)
		}
		if r := Run(ctx, 0, time.Minute, time.Second, nil); len(r.All) != 0 {
			t.Fatalf("rate 0: %d calls", len(r.All))
		}
	})
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	d := Summarize(ds)
	if d.N != 100 || d.P50 != 51 || d.P90 != 91 || d.P99 != 100 || d.Max != 100 || d.Mean != 50.5 {
		t.Fatalf("%+v", d)
	}
	if (Summarize(nil) != Dist{}) {
		t.Fatal("empty: not zero")
	}
	if _, ok := (Result{All: ds}).Dists()[FailedName]; ok {
		t.Fatal("a failed summary without failures")
	}
}
