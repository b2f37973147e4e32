package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/metric"
	nooptrace "go.opentelemetry.io/otel/trace/noop"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/kube/metrics"
	"github.com/clusterpool/clusterpool/pool"
)

// Cluster keys of drive. They must appear in no series: the metrics carry
// no cluster label.
const (
	waitingCluster = "fleet/waits-canary-4711"
	deadCluster    = "fleet/dead-canary-0815"
	panickyCluster = "fleet/panics-canary-1312"
)

var errRefused = errors.New("connection refused")

type fakeClient struct{ key string }

// drive runs a pool recording into mp through a Get that waits for its
// dial and gets the client, a dial that fails and opens the cluster's
// breaker (closed → open), a Get rejected by that open breaker, and a dial
// that panics (and opens its cluster's breaker). The pool is closed when
// the test ends.
func drive(t *testing.T, mp metric.MeterProvider) {
	t.Helper()
	started, release := make(chan struct{}), make(chan struct{})
	dial := func(ctx context.Context, key string) (*fakeClient, error) {
		switch key {
		case deadCluster:
			return nil, errRefused
		case panickyCluster:
			panic("dialer bug")
		}
		close(started) // dialed once: the client is cached
		select {
		case <-release:
			return &fakeClient{key: key}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p, err := pool.New(dial, pool.Options[string, *fakeClient]{
		MaxWait:     time.Minute, // the Get waits for the dial, however slow the machine
		DialTimeout: time.Minute,
		Breaker: breaker.Settings{ConsecutiveFailures: 1, OpenTimeout: time.Hour, MaxOpenTimeout: time.Hour,
			DisableJitter: true}, // no probe during the test
		TracerProvider: nooptrace.NewTracerProvider(),
		MeterProvider:  mp,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	got := make(chan error, 1)
	go func() {
		_, err := p.Get(ctx, waitingCluster)
		got <- err
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the dial of the waiting Get never started")
	}
	close(release)
	if err := <-got; err != nil {
		t.Fatalf("Get %s: %v", waitingCluster, err)
	}
	if _, err := p.Get(ctx, deadCluster); !errors.Is(err, pool.ErrDialFailed) {
		t.Fatalf("first Get %s: %v, want ErrDialFailed", deadCluster, err)
	}
	if _, err := p.Get(ctx, deadCluster); !errors.Is(err, pool.ErrCircuitOpen) {
		t.Fatalf("second Get %s: %v, want ErrCircuitOpen", deadCluster, err)
	}
	if _, err := p.Get(ctx, panickyCluster); !errors.Is(err, pool.ErrDialPanic) {
		t.Fatalf("Get %s: %v, want ErrDialPanic", panickyCluster, err)
	}
}

// family is what a metric family of the pool must look like.
type family struct {
	typ     dto.MetricType
	help    string   // the instrument's description, from package tracing
	labels  []string // label names, sorted, without le
	buckets []float64
}

// families are the pool's metric families as Prometheus sees them.
var families = map[string]family{
	metrics.WaitDuration: {dto.MetricType_HISTOGRAM, "Time a Get that was not a hit spent waiting.",
		[]string{metrics.OutcomeLabel},
		[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}},
	metrics.GetOutcomes: {dto.MetricType_COUNTER, "Gets that were not hits, by outcome.",
		[]string{metrics.OutcomeLabel}, nil},
	metrics.DialDuration: {dto.MetricType_HISTOGRAM, "Duration of dials, by result.",
		[]string{metrics.DialResultLabel},
		[]float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}},
	metrics.DialsInflight: {dto.MetricType_GAUGE, "Dials in flight, queued for a permit or running.",
		nil, nil},
	metrics.BreakerClusters: {dto.MetricType_GAUGE, "Clusters known to the pool, by breaker state.",
		[]string{metrics.BreakerStateLabel}, nil},
	metrics.BreakerTransitions: {dto.MetricType_COUNTER, "Breaker state changes, by from and to state.",
		[]string{metrics.FromStateLabel, metrics.ToStateLabel}, nil},
	metrics.CallbackPanics: {dto.MetricType_COUNTER,
		"Panics of user callbacks (dialer, OnClose, IsFailure, FormatKey, ForKey) the pool recovered, by callback.",
		[]string{metrics.CallbackLabel}, nil},
}

// driven are the samples drive leaves, exactly: counters and gauges by
// value, histograms by their count.
var driven = map[string]float64{
	`clusterpool_wait_duration_seconds_count{clusterpool_outcome="acquired"}`:                                1,
	`clusterpool_wait_duration_seconds_count{clusterpool_outcome="failed"}`:                                  2,
	`clusterpool_wait_duration_seconds_count{clusterpool_outcome="rejected"}`:                                1,
	`clusterpool_get_outcomes_total{clusterpool_outcome="acquired"}`:                                         1,
	`clusterpool_get_outcomes_total{clusterpool_outcome="failed"}`:                                           2,
	`clusterpool_get_outcomes_total{clusterpool_outcome="rejected"}`:                                         1,
	`clusterpool_dial_duration_seconds_count{clusterpool_dial_result="success"}`:                             1,
	`clusterpool_dial_duration_seconds_count{clusterpool_dial_result="error"}`:                               1,
	`clusterpool_dial_duration_seconds_count{clusterpool_dial_result="panic"}`:                               1,
	`clusterpool_dials_inflight`:                                                                             0,
	`clusterpool_breaker_clusters{clusterpool_breaker_state="closed"}`:                                       1,
	`clusterpool_breaker_clusters{clusterpool_breaker_state="open"}`:                                         2,
	`clusterpool_breaker_transitions_total{clusterpool_breaker_from="closed",clusterpool_breaker_to="open"}`: 2,
	`clusterpool_callback_panics_total{clusterpool_callback="dial"}`:                                         1,
}

// checkFamilies reports how the clusterpool_ families of fams differ from
// families, and their samples from want.
func checkFamilies(fams map[string]*dto.MetricFamily, want map[string]float64) error {
	var errs []error
	got := map[string]float64{}
	for name, mf := range fams {
		if !strings.HasPrefix(name, "clusterpool_") {
			continue
		}
		f, ok := families[name]
		if !ok {
			errs = append(errs, fmt.Errorf("unexpected family %s", name))
			continue
		}
		if mf.GetType() != f.typ || mf.GetHelp() != f.help {
			errs = append(errs, fmt.Errorf("%s: type %v help %q, want %v %q", name, mf.GetType(), mf.GetHelp(), f.typ, f.help))
		}
		for _, m := range mf.GetMetric() {
			var names, pairs []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
				pairs = append(pairs, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			sort.Strings(names)
			sort.Strings(pairs)
			if !slices.Equal(names, f.labels) {
				errs = append(errs, fmt.Errorf("%s: labels %v, want %v", name, names, f.labels))
			}
			key := name
			if len(pairs) > 0 {
				key += "{" + strings.Join(pairs, ",") + "}"
			}
			switch f.typ {
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				var bounds []float64
				for _, b := range h.GetBucket() {
					if !math.IsInf(b.GetUpperBound(), 1) { // the text format's le="+Inf"
						bounds = append(bounds, b.GetUpperBound())
					}
				}
				if !slices.Equal(bounds, f.buckets) {
					errs = append(errs, fmt.Errorf("%s: buckets %v, want %v", key, bounds, f.buckets))
				}
				got[strings.Replace(key, name, name+"_count", 1)] = float64(h.GetSampleCount())
			case dto.MetricType_COUNTER:
				got[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				got[key] = m.GetGauge().GetValue()
			}
		}
	}
	if !maps.Equal(got, want) {
		errs = append(errs, fmt.Errorf("samples:\n%s\nwant:\n%s", dump(got), dump(want)))
	}
	return errors.Join(errs...)
}

func dump(samples map[string]float64) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(samples)) {
		fmt.Fprintf(&b, "  %s %v\n", k, samples[k])
	}
	return b.String()
}

// eventually calls check until it returns nil or 20 s have passed, and
// fails the test with its last error then. The pool records a dial's end
// just after the waiting Get returns, so the figures settle a moment after
// drive.
func eventually(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
