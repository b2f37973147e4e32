package workload

import (
	"context"
	"net/url"
	"testing"
	"time"
)

func TestTimingsTraceOneRequest(t *testing.T) {
	tm := NewTimings()
	cm := url.URL{Host: "h", Path: "/api/v1/namespaces/{namespace}/configmaps/{name}"}
	err := tm.traced(context.Background(), func(ctx context.Context) error {
		// What client-go and the clusterpool peer's transport report for
		// one request: 30 ms in the limiter, 50 ms in all, 15 on the wire.
		latencyHook{t: tm, name: "ratelimit"}.Observe(ctx, "GET", cm, 30*time.Millisecond)
		AddWire(ctx, 15*time.Millisecond)
		latencyHook{t: tm, name: "request"}.Observe(ctx, "GET", cm, 50*time.Millisecond)
		// Not a ConfigMap request: not recorded.
		latencyHook{t: tm, name: "request"}.Observe(ctx, "GET", url.URL{Host: "h", Path: "/readyz"}, time.Second)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d := tm.Dists()
	for name, want := range map[string]float64{"ratelimit": 30, "request": 50, "request_less_ratelimit": 20, "guard_and_decode": 5} {
		if got := d[name]; got.N != 1 || got.P99 != want {
			t.Errorf("%s: %+v, want one sample of %v ms", name, got, want)
		}
	}
	var none *Timings
	none.Add("x", time.Second) // a nil Timings records nothing
	if none.Dists() != nil {
		t.Fatal("nil Timings has dists")
	}
}
