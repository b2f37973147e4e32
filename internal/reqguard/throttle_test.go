package reqguard

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/pool"
)

// A 429 is back-pressure on the request it answers, not on the cluster:
// counted requests (reads and writes) that begin within its Retry-After
// are admitted, and it is never reported.
func TestA429HoldsBackNoOtherRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := newGuard(t, Settings{MaxInFlight: 3, MaxFirstByte: 10 * time.Second})
		for range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, f, err := g.Begin(ctx, Counted)
			if err != nil {
				t.Fatalf("a request after a 429: %v", err)
			}
			f.FirstByte()
			f.End(f.Throttle(2 * time.Second))
			time.Sleep(500 * time.Millisecond)
			for _, c := range []Class{Counted, CountedWrite, Exempt} {
				_, other, err := g.Begin(context.Background(), c)
				if err != nil {
					t.Fatalf("class %d within another request's Retry-After: %v, want admitted", c, err)
				}
				other.FirstByte()
				other.End(nil)
			}
			cancel()
		}
		if got := r.list(); len(got) != 9 || errors.Join(got...) != nil {
			t.Fatalf("reported %v, want only the 9 other requests' successes", got)
		}
	})
}

// A counted request answered 429 with a Retry-After ends at that answer
// with ErrThrottled, whatever its deadline, and RetryAfter gives the
// server's Retry-After (capped at MaxRetryAfter); it is not reported. A
// 429 without Retry-After, or to an exempt or unreported request, goes to
// the client (nil).
func TestA429EndsACountedRequestWithItsRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		class      Class
		deadline   time.Duration // 0: none
		retryAfter time.Duration
		want       time.Duration // 0: nil, the answer goes to the client
	}{
		{"read, deadline far past the Retry-After", Counted, 10 * time.Second, time.Second, time.Second},
		{"read, no deadline", Counted, 0, time.Second, time.Second},
		{"read, Retry-After past the deadline", Counted, 500 * time.Millisecond, 2 * time.Second, 2 * time.Second},
		{"write", CountedWrite, 10 * time.Second, 3 * time.Second, 3 * time.Second},
		{"capped", Counted, 10 * time.Second, time.Hour, MaxRetryAfter},
		{"no Retry-After", Counted, 10 * time.Second, 0, 0},
		{"exempt (an informer's list)", Exempt, 0, time.Second, 0},
		{"unreported (a probe)", Unreported, 0, time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, r := newGuard(t, Settings{MaxFirstByte: 10 * time.Second})
				ctx := context.Background()
				if tc.deadline > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.deadline)
					defer cancel()
				}
				_, f, err := g.Begin(ctx, tc.class)
				if err != nil {
					t.Fatal(err)
				}
				f.FirstByte()
				err = f.Throttle(tc.retryAfter)
				f.End(err)
				d, ok := pool.RetryAfter(err)
				switch {
				case tc.want == 0 && err != nil:
					t.Fatalf("Throttle = %v, want nil", err)
				case tc.want > 0 && (!errors.Is(err, ErrThrottled) || !ok || d != tc.want):
					t.Fatalf("Throttle = %v (RetryAfter %v, %v), want ErrThrottled after %v", err, d, ok, tc.want)
				}
				if got := r.list(); len(got) != 0 {
					t.Fatalf("a 429 was reported: %v", got)
				}
			})
		})
	}
}

// With passive health off (no Report: Cluster API's drop-in), a counted
// request's 429 is its client's alone.
func TestA429IsTheClientsWithPassiveHealthOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(Settings{Cluster: "c", MaxFirstByte: 10 * time.Second})
		g.Live()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, f, _ := g.Begin(ctx, Counted)
		if err := f.Throttle(time.Second); err != nil {
			t.Fatalf("passive health off: %v, want nil", err)
		}
		f.End(nil)
	})
}
