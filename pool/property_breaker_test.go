package pool

import (
	"context"
	"fmt"
	"sync"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"pgregory.net/rapid"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/tracing"
)

// The property test's checks of the breakers' behaviour through the pool:
// legal transitions, and open periods that never shrink.

// openPeriods models, per key, the open periods of the breaker since it
// last closed (or Remove reset it), from the transitions the pool applies.
type openPeriods struct {
	mu   sync.Mutex
	last map[string]time.Duration // the key's last open period since closed
	bad  string                   // the first violation
}

func watchOpenPeriods(p *Pool[string, *client]) *openPeriods {
	o := &openPeriods{last: map[string]time.Duration{}}
	p.observe = func(key string, tr breaker.Transition) {
		o.mu.Lock()
		defer o.mu.Unlock()
		switch tr.To {
		case breaker.StateClosed:
			delete(o.last, key)
		case breaker.StateOpen:
			if last := o.last[key]; tr.OpenFor < last && o.bad == "" {
				o.bad = fmt.Sprintf("cluster %s: open for %v after %v: the open period shrank", key, tr.OpenFor, last)
			}
			o.last[key] = tr.OpenFor
		}
	}
	return o
}

func (o *openPeriods) check(rt *rapid.T) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.bad != "" {
		rt.Fatalf("%s", o.bad)
	}
}

// checkTransitions fails on a breaker transition that is not an edge of the
// state machine (or a reset to closed by Remove).
func checkTransitions(rt *rapid.T, reader *sdkmetric.ManualReader) {
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		rt.Fatalf("collect: %v", err)
	}
	legal := map[[2]string]bool{
		{"closed", "open"}: true, {"open", "half-open"}: true, {"half-open", "closed"}: true,
		{"half-open", "open"}: true, {"open", "closed"}: true, // Remove resets an open breaker
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != "clusterpool.breaker.transitions" || !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				from, _ := dp.Attributes.Value(tracing.FromStateKey)
				to, _ := dp.Attributes.Value(tracing.ToStateKey)
				if e := [2]string{from.AsString(), to.AsString()}; !legal[e] && dp.Value > 0 {
					rt.Fatalf("illegal breaker transition %s → %s (%d times)", e[0], e[1], dp.Value)
				}
			}
		}
	}
}

// checkConnect connects k: Connect never shortens an open breaker's
// backoff (nothing else runs meanwhile: the bubble's goroutines are
// blocked between actions).
func checkConnect(rt *rapid.T, p *Pool[string, *client], k string) {
	before := p.State(k)
	p.Connect(k)
	if after := p.State(k); before.Breaker == breaker.StateOpen &&
		(after.Breaker != breaker.StateOpen || !after.NextProbe.Equal(before.NextProbe)) {
		rt.Fatalf("Connect(%s) shortened the backoff: %+v, then %+v", k, before, after)
	}
}

// checkRedial redials k: Redial never keeps the client nor forgets the
// cluster (watchOpenPeriods checks that it keeps the breaker's history).
func checkRedial(rt *rapid.T, p *Pool[string, *client], k string) {
	old, held := p.Peek(k)
	known := p.State(k).Known
	p.Redial(k)
	if c, ok := p.Peek(k); held && ok && c == old {
		rt.Fatalf("Redial(%s) kept the client", k)
	}
	if known && !p.State(k).Known {
		rt.Fatalf("Redial(%s) removed the cluster", k)
	}
}
