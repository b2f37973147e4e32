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
// are admitted, its retry is admitted, and it is never reported.
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
			if err := f.Throttle(2 * time.Second); err != nil {
				t.Fatalf("a 429 whose Retry-After fits the deadline: %v, want nil (client-go retries it)", err)
			}
			f.End(nil)
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

// A 429 whose Retry-After ends after the request's deadline ends the
// request with ErrThrottled, whose RetryAfter is the server's Retry-After
// (capped at MaxRetryAfter), and is not reported. One that fits the
// deadline, or with no Retry-After, or no deadline, goes to the client.
func TestA429PastTheDeadlineEndsWithItsRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		deadline   time.Duration // 0: none
		retryAfter time.Duration
		want       time.Duration // 0: nil, the answer goes to the client
	}{
		{"fits", 10 * time.Second, time.Second, 0},
		{"ends at the deadline", 2 * time.Second, 2 * time.Second, 2 * time.Second},
		{"outlasts", 500 * time.Millisecond, time.Second, time.Second},
		{"outlasts, capped", 10 * time.Second, time.Hour, MaxRetryAfter},
		{"no Retry-After", 500 * time.Millisecond, 0, 0},
		{"no deadline", 0, time.Second, 0},
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
				_, f, err := g.Begin(ctx, Counted)
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

// With passive health off (no Report: Cluster API's drop-in), a 429 is
// its client's alone, even past the request's deadline.
func TestA429IsTheClientsWithPassiveHealthOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(Settings{Cluster: "c", MaxFirstByte: 10 * time.Second})
		g.Live()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, f, _ := g.Begin(ctx, Counted)
		if err := f.Throttle(2 * time.Second); err != nil {
			t.Fatalf("passive health off: %v, want nil", err)
		}
		f.End(nil)
	})
}
