package reqguard

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/pool"
)

// Only the cluster's own failures are reported. A caller that gives up
// after 50 ms on a cluster answering in 300 ms reports nothing; the same
// wait under the request timeout (a deadline of at least half
// MaxFirstByte) is the cluster's failure; a first-byte timeout goes to
// Report (it counts in a row), every other outcome to ReportRequest.
func TestOnlyTheClustersOwnFailuresAreReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inARow, byRate := &reports{}, &reports{}
		g := New(Settings{Cluster: "c", MinFirstByte: 2 * time.Second, MaxFirstByte: 10 * time.Second,
			Report: inARow.report, ReportRequest: byRate.report})
		g.Live()
		for range 5 { // callers giving up after 50 ms, the cluster answering in 300 ms
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			_, f, err := g.Begin(ctx, Counted)
			if err != nil {
				t.Fatal(err)
			}
			<-ctx.Done()
			f.End(ctx.Err())
			cancel()
			time.Sleep(250 * time.Millisecond) // the answer comes, to no one
		}
		if got := append(inARow.list(), byRate.list()...); len(got) != 0 {
			t.Fatalf("the callers' own deadlines were reported: %v", got)
		}
		// The request timeout (client-go's, on the request's context): the cluster's.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, f, _ := g.Begin(ctx, Counted)
		f.FirstByte() // headers came; the body stalls until the timeout
		<-ctx.Done()
		f.End(ctx.Err())
		if got := byRate.list(); len(got) != 1 || !errors.Is(got[0], context.DeadlineExceeded) {
			t.Fatalf("request timeout: ReportRequest got %v, want its DeadlineExceeded", got)
		}
		// A first-byte timeout: Report.
		_, f, _ = g.Begin(context.Background(), Counted)
		<-f.ctx.Done()
		f.End(f.Err(f.ctx.Err()))
		if got := inARow.list(); len(got) != 1 || !errors.Is(got[0], ErrFirstByteTimeout) {
			t.Fatalf("first-byte timeout: Report got %v, want ErrFirstByteTimeout", got)
		}
		if got := byRate.list(); len(got) != 1 {
			t.Fatalf("first-byte timeout also reached ReportRequest: %v", got)
		}
	})
}

// A 429 is back-pressure: not reported; counted requests that begin within
// its Retry-After are rejected with ErrThrottled and a RetryAfter of the
// rest of it; exempt ones are not; the request sent after it is admitted.
func TestRetryAfterHoldsBackCountedRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, r := newGuard(t, Settings{MaxFirstByte: 10 * time.Second})
		for range 3 {
			_, f, err := g.Begin(context.Background(), Counted)
			if err != nil {
				t.Fatalf("after the Retry-After: %v", err)
			}
			f.FirstByte()
			f.Throttle(2 * time.Second)
			f.End(nil)
			time.Sleep(500 * time.Millisecond)
			_, _, err = g.Begin(context.Background(), CountedWrite)
			d, ok := pool.RetryAfter(err)
			if !errors.Is(err, ErrThrottled) || !ok || d != 1500*time.Millisecond {
				t.Fatalf("within the Retry-After: %v (RetryAfter %v, %v), want ErrThrottled after 1.5s", err, d, ok)
			}
			_, f, err = g.Begin(context.Background(), Exempt)
			if err != nil {
				t.Fatalf("exempt request within the Retry-After: %v", err)
			}
			f.End(nil)
			time.Sleep(1500 * time.Millisecond)
		}
		if got := r.list(); len(got) != 3 || got[0] != nil || got[1] != nil || got[2] != nil {
			t.Fatalf("reported %v, want only the 3 exempt successes", got)
		}
		_, f, _ := g.Begin(context.Background(), Counted)
		f.Throttle(time.Hour)
		f.End(nil)
		_, _, err := g.Begin(context.Background(), Counted)
		if d, _ := pool.RetryAfter(err); d != MaxRetryAfter {
			t.Fatalf("Retry-After of an hour holds for %v, want the cap %v", d, MaxRetryAfter)
		}
	})
}

// With passive health off (no Report: Cluster API's drop-in), a 429's
// Retry-After holds nothing back: the requests are their client's alone.
func TestRetryAfterIsTheClientsWithPassiveHealthOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := New(Settings{Cluster: "c", MaxFirstByte: 10 * time.Second})
		g.Live()
		_, f, _ := g.Begin(context.Background(), Counted)
		f.Throttle(2 * time.Second)
		f.End(nil)
		_, f, err := g.Begin(context.Background(), Counted)
		if err != nil {
			t.Fatalf("within the Retry-After, passive health off: %v", err)
		}
		f.End(nil)
	})
}
