package workload

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/tools/metrics"

	"github.com/clusterpool/clusterpool/bench/peers/workload/load"
)

// Dist summarises one timing's samples, in milliseconds (load.Dist: the
// floor reports the same summaries without linking this package).
type Dist = load.Dist

// Timings collects named durations (Plan.Timings): the phases of
// successful reconciles and client-go's rate-limiter wait and request
// latency of the workload requests. It is safe for concurrent use; a nil
// *Timings records nothing.
type Timings struct {
	mu      sync.Mutex
	samples map[string][]time.Duration
}

// NewTimings returns an empty Timings.
func NewTimings() *Timings { return &Timings{samples: map[string][]time.Duration{}} }

// Add records d under name.
func (t *Timings) Add(name string, d time.Duration) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.samples[name] = append(t.samples[name], d)
	t.mu.Unlock()
}

// Dists returns every timing's summary (nil for a nil Timings).
func (t *Timings) Dists() map[string]Dist {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]Dist, len(t.samples))
	for name, ds := range t.samples {
		out[name] = load.Summarize(slices.Clone(ds))
	}
	return out
}

// HookClientGo makes client-go report, into t, the rate limiter's wait
// ("ratelimit") and the whole request ("request": wait, transport and
// server) of every ConfigMap request: the workload's requests to workload
// clusters (the management side reads from the manager's cache). It sets
// client-go's process-wide metric hooks directly, as metrics.Register is
// once-only and controller-runtime calls it first.
func HookClientGo(t *Timings) {
	metrics.RateLimiterLatency = latencyHook{t: t, name: "ratelimit"}
	metrics.RequestLatency = latencyHook{t: t, name: "request"}
}

type latencyHook struct {
	t    *Timings
	name string
}

func (h latencyHook) Observe(ctx context.Context, _ string, u url.URL, d time.Duration) {
	if !strings.Contains(u.Path, "/configmaps") {
		return
	}
	h.t.Add(h.name, d)
	if tr, ok := ctx.Value(traceKey{}).(*reqTrace); ok {
		if h.name == "ratelimit" {
			tr.wait = d
		} else {
			tr.total = d
		}
	}
}

// reqTrace is one request's timings, gathered through its context from
// client-go's hooks and, in the clusterpool peer, its transport (AddWire).
// One request's hooks run one after the other on the caller's goroutine.
type reqTrace struct{ wait, total, wire time.Duration }

type traceKey struct{}

// traced runs request with a context that collects its timings and records
// "request_less_ratelimit" (client-go's whole request less its rate-limiter
// wait: transport, server and decoding) and, if the peer reported the time
// on the wire, "guard_and_decode" (that less the wire time). A nil t runs
// request as is.
func (t *Timings) traced(ctx context.Context, request func(context.Context) error) error {
	if t == nil {
		return request(ctx)
	}
	tr := &reqTrace{}
	err := request(context.WithValue(ctx, traceKey{}, tr))
	if tr.total > 0 {
		t.Add("request_less_ratelimit", tr.total-tr.wait)
		if tr.wire > 0 {
			t.Add("guard_and_decode", tr.total-tr.wait-tr.wire)
		}
	}
	return err
}

// AddWire notes d as the time on the wire of the request whose context is
// ctx (a transport inside the peer's own request handling calls it).
func AddWire(ctx context.Context, d time.Duration) {
	if tr, ok := ctx.Value(traceKey{}).(*reqTrace); ok {
		tr.wire = d
	}
}
