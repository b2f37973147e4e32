package pool

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
)

// ReportRequest judges by rate only: failures in a row do not open the
// breaker, 60 % of failures interleaved (never 3 in a row) over 20
// requests do, and the client goes to OnClose; 20 % never does. Report
// still opens at ConsecutiveFailures in a row.
func TestReportRequestJudgesByRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.reply = func(string) *dialReply { return nil } // dials succeed at once
		p := newPool(t, f, Options[string, *client]{MaxWait: time.Minute})
		ctx := context.Background()
		for _, k := range []string{"busy", "half", "dead"} {
			if _, err := p.Get(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 200 { // 20 %: one failure in five
			var err error
			if i%5 == 4 {
				err = errRefused
			}
			p.ReportRequest("busy", err)
		}
		for range 5 {
			p.ReportRequest("half", errRefused)
		}
		if s := p.State("busy"); s.Breaker != breaker.StateClosed || !s.Connected {
			t.Fatalf("20%% failures: %+v", s)
		}
		if s := p.State("half"); s.Breaker != breaker.StateClosed || s.ConsecutiveFailures != 0 || s.WindowFailures != 5 {
			t.Fatalf("5 request failures in a row: %+v, want closed, no row, 5 in the window", s)
		}
		for i := range 16 { // with the 5 above: 21 requests, 15 failures
			var err error
			if i%5 != 2 && i%5 != 4 {
				err = errRefused
			}
			p.ReportRequest("half", err)
		}
		if s := p.State("half"); s.Breaker != breaker.StateOpen || s.Connected {
			t.Fatalf("60%% failures over 21 requests: %+v, want open and evicted", s)
		}
		for range 3 {
			p.Report("dead", errRefused)
		}
		if s := p.State("dead"); s.Breaker != breaker.StateOpen {
			t.Fatalf("3 Reports in a row: %+v, want open", s)
		}
	})
}
