package reqguard

import (
	"context"
	"testing"
	"time"
)

// BenchmarkFlight is the guard's cost per request on a healthy cluster:
// Begin, the response headers, End with a success. rules=none is the bare
// bookkeeping (a context, the flight set); bulkhead adds the cap check;
// all adds kube's defaults: the first-byte deadline (a timer armed and
// stopped) and passive health (an outcome reported).
func BenchmarkFlight(b *testing.B) {
	for _, bc := range []struct {
		name string
		s    Settings
	}{
		{"rules=none", Settings{}},
		{"rules=bulkhead", Settings{MaxInFlight: 10}},
		{"rules=all", Settings{MaxInFlight: 10, MinFirstByte: 2 * time.Second, MaxFirstByte: 10 * time.Second,
			Report: func(error) {}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := New(bc.s)
			g.Live()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				fctx, f, err := g.Begin(ctx, Counted)
				if err != nil {
					b.Fatal(err)
				}
				_ = fctx.Done() // a request waits on it
				f.FirstByte()
				f.End(f.Err(nil))
			}
		})
	}
}
