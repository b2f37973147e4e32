package clustercache

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/clusterpool/clusterpool/pool"
)

// Cluster API's ClusterCache series (its metrics.go), with the same names,
// help, labels and meaning. Its package registers its own collectors in
// init; SetupWithManager replaces them on controller-runtime's registry by
// these (Prometheus' Unregister matches collectors by their descriptors,
// which are the same), and sets these.
var (
	healthCheck = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "capi_cluster_cache_healthcheck",
		Help: "Result of the last clustercache healthcheck for a cluster.",
	}, []string{"cluster_name", "cluster_namespace"})
	healthChecksTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "capi_cluster_cache_healthchecks_total",
		Help: "Results of all clustercache healthchecks.",
	}, []string{"cluster_name", "cluster_namespace", "status"})
	connectionUp = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "capi_cluster_cache_connection_up",
		Help: "Whether the connection to the cluster is up.",
	}, []string{"cluster_name", "cluster_namespace"})
)

// The status label values of healthChecksTotal.
const (
	statusSuccess = "success"
	statusError   = "error"
)

var (
	takeOverOnce sync.Once
	errTakeOver  error
)

// takeOverMetrics puts this package's collectors on controller-runtime's
// registry in place of Cluster API's, once per process: a program that
// never calls SetupWithManager keeps Cluster API's.
func takeOverMetrics() error {
	takeOverOnce.Do(func() {
		for _, c := range []prometheus.Collector{healthCheck, healthChecksTotal, connectionUp} {
			ctrlmetrics.Registry.Unregister(c) // Cluster API's, or nothing
			if err := ctrlmetrics.Registry.Register(c); err != nil {
				errTakeOver = errors.Join(errTakeOver, fmt.Errorf("clustercache: registering Cluster API's metrics: %w", err))
			}
		}
	})
	return errTakeOver
}

// clusterMetrics sets the series of admitted clusters: connection_up from
// the pool's events (1 once connected, 0 after a failed connect or a
// disconnect), healthcheck and healthchecks_total from each probe the
// Prober makes; the Removed event of a cluster no longer admitted deletes
// its series (its Cluster is gone or filtered out: Cluster API's
// cleanupMetricsForCluster). mu orders the updates of a cluster after its
// forget: the admission forgets a cluster (Admitted turns false) before
// it removes it from the pool, and an update checks Admitted under mu, so
// none recreates a deleted series.
type clusterMetrics struct {
	mu       sync.Mutex
	admitted func(client.ObjectKey) bool
}

// connection sets key's connection_up.
func (m *clusterMetrics) connection(key client.ObjectKey, up bool) {
	v := 0.0
	if up {
		v = 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.admitted(key) {
		connectionUp.WithLabelValues(key.Name, key.Namespace).Set(v)
	}
}

// probe records the outcome of one of key's health probes.
func (m *clusterMetrics) probe(key client.ObjectKey, ok bool) {
	v, status := 0.0, statusError
	if ok {
		v, status = 1, statusSuccess
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.admitted(key) {
		healthCheck.WithLabelValues(key.Name, key.Namespace).Set(v)
		healthChecksTotal.WithLabelValues(key.Name, key.Namespace, status).Inc()
	}
}

// event is the reconciler's OnEvent: key's connection_up, or the deletion
// of its series once it is removed and no longer admitted.
func (m *clusterMetrics) event(ev pool.Event[client.ObjectKey]) {
	if ev.Type == pool.Removed && !m.admitted(ev.Key) {
		m.forget(ev.Key)
		return
	}
	m.connection(ev.Key, ev.Connected)
}

// forget deletes key's series.
func (m *clusterMetrics) forget(key client.ObjectKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	healthCheck.DeleteLabelValues(key.Name, key.Namespace)
	connectionUp.DeleteLabelValues(key.Name, key.Namespace)
	healthChecksTotal.DeleteLabelValues(key.Name, key.Namespace, statusSuccess)
	healthChecksTotal.DeleteLabelValues(key.Name, key.Namespace, statusError)
}

// held sets connection_up of the clusters the pool held when the
// subscription to its events began (their events are gone); afterwards
// each event sets it (connection, from the reconciler's OnEvent). Each
// event carries the cluster's state after it, so the last one of a
// cluster (events coalesce) gives the gauge's value.
func (m *clusterMetrics) held(p interface {
	Keys() []client.ObjectKey
	State(client.ObjectKey) pool.ClusterState
}) {
	for _, key := range p.Keys() {
		if st := p.State(key); st.Connected || !st.LastProbe.IsZero() {
			m.connection(key, st.Connected)
		}
	}
}
