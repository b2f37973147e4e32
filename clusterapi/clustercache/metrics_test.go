package clustercache_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	poolmetrics "github.com/clusterpool/clusterpool/kube/metrics"
)

// Cluster API v1.14.2's series (controllers/clustercache/metrics.go): name,
// help and type.
var capiSeries = map[string]struct {
	help string
	typ  dto.MetricType
}{
	"capi_cluster_cache_healthcheck":        {"Result of the last clustercache healthcheck for a cluster.", dto.MetricType_GAUGE},
	"capi_cluster_cache_healthchecks_total": {"Results of all clustercache healthchecks.", dto.MetricType_COUNTER},
	"capi_cluster_cache_connection_up":      {"Whether the connection to the cluster is up.", dto.MetricType_GAUGE},
}

// TestMetrics: on controller-runtime's registry, connection_up is 1 for a
// connected cluster and 0 after a failed connect; healthcheck and
// healthchecks_total{status} follow each probe, successful or not; every
// series of a Cluster goes when the Cluster goes. clusterpool's own series
// are there too. Names, help, types and labels are Cluster API's.
func TestMetrics(t *testing.T) {
	e := newEnv(t, "metrics")
	proxy := e.proxy(t, faultproxy.Pass)
	cc := e.setup(t, 10, nil)
	e.start(t, cc)
	ctx := context.Background()
	if err := e.createCluster(ctx, "up", e.kubeconfig(t, proxy.Addr()), true); err != nil {
		t.Fatal(err)
	}
	if err := e.createCluster(ctx, "refused", e.kubeconfig(t, closedAddr(t)), true); err != nil {
		t.Fatal(err)
	}
	up, refused := e.labels("up"), e.labels("refused")
	eventually(t, time.Minute, func() error {
		return errors.Join(wantSample(t, "capi_cluster_cache_connection_up", up, 1),
			wantSample(t, "capi_cluster_cache_connection_up", refused, 0))
	})
	probeBound := 3 * clustercache.ProbeInterval
	eventually(t, probeBound, func() error {
		return errors.Join(wantSample(t, "capi_cluster_cache_healthcheck", up, 1),
			wantSample(t, "capi_cluster_cache_healthchecks_total", with(up, "status", "success"), 1))
	})
	if _, ok := value(t, "capi_cluster_cache_healthcheck", refused); ok {
		t.Error("a healthcheck series for a cluster that never connected (Cluster API probes only connected ones)")
	}
	proxy.SetMode(faultproxy.Blackhole) // the next probe times out
	eventually(t, probeBound, func() error {
		return errors.Join(wantSample(t, "capi_cluster_cache_healthcheck", up, 0),
			wantSample(t, "capi_cluster_cache_healthchecks_total", with(up, "status", "error"), 1))
	})
	checkFamilies(t)
	if v, ok := value(t, poolmetrics.DialDuration+"_count", nil); !ok || v == 0 {
		t.Errorf("%s = %v, %v: clusterpool's series are not on the registry", poolmetrics.DialDuration, v, ok)
	}

	for _, name := range []string{"up", "refused"} {
		if err := e.c.Delete(ctx, &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, time.Minute, func() error {
		for name := range capiSeries {
			for _, l := range []map[string]string{up, refused} {
				if _, ok := value(t, name, l); ok {
					return fmt.Errorf("%s%v: %w", name, l, errNotYet)
				}
			}
		}
		return nil
	})
}

// labels are the Cluster's labels in Cluster API's series.
func (e *testEnv) labels(name string) map[string]string {
	return map[string]string{"cluster_name": name, "cluster_namespace": e.ns}
}

func with(l map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for lk, lv := range l {
		out[lk] = lv
	}
	return out
}

// wantSample checks that the sample of name with labels l is at least v (for a
// gauge: exactly v).
func wantSample(t *testing.T, name string, l map[string]string, v float64) error {
	got, ok := value(t, name, l)
	switch {
	case !ok:
		return fmt.Errorf("%s%v: no sample: %w", name, l, errNotYet)
	case got < v || (capiSeries[name].typ == dto.MetricType_GAUGE && got != v):
		return fmt.Errorf("%s%v = %v, want %v: %w", name, l, got, v, errNotYet)
	}
	return nil
}

// value is the sample of name (a family, or a histogram's name_count)
// whose labels include l.
func value(t *testing.T, name string, l map[string]string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			if !hasLabels(m, l) {
				continue
			}
			switch {
			case f.GetName() == name && m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case f.GetName() == name && m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case f.GetName()+"_count" == name && m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func hasLabels(m *dto.Metric, l map[string]string) bool {
	n := 0
	for _, lp := range m.GetLabel() {
		if v, ok := l[lp.GetName()]; ok && v == lp.GetValue() {
			n++
		}
	}
	return n == len(l)
}

// checkFamilies checks that each of Cluster API's families is there once,
// with its help, type and label names.
func checkFamilies(t *testing.T) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range families {
		s, ok := capiSeries[f.GetName()]
		if !ok {
			continue
		}
		seen[f.GetName()]++
		if f.GetHelp() != s.help || f.GetType() != s.typ {
			t.Errorf("%s: help %q, type %v; want Cluster API's %q, %v", f.GetName(), f.GetHelp(), f.GetType(), s.help, s.typ)
		}
		want := "[cluster_name cluster_namespace]"
		if s.typ == dto.MetricType_COUNTER {
			want = "[cluster_name cluster_namespace status]"
		}
		for _, m := range f.GetMetric() {
			var names []string
			for _, lp := range m.GetLabel() {
				names = append(names, lp.GetName())
			}
			if fmt.Sprint(names) != want {
				t.Errorf("%s: labels %v, want %s", f.GetName(), names, want)
			}
		}
	}
	for name := range capiSeries {
		if seen[name] != 1 {
			t.Errorf("%s: %d families, want 1", name, seen[name])
		}
	}
}

// closedAddr is a loopback address nothing listens on: a connect fails at
// once.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
