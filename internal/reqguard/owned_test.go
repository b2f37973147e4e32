package reqguard

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
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
