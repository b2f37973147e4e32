package clustercache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

// clusterCache is the ClusterCache SetupWithManager returns: Cluster API's
// interface on a clusterpool Pool. Connections are the pool's clients; the
// pool dials only clusters the admission controller admits, in the
// background, so that no method dials on its caller's path.
type clusterCache struct {
	pool      *pool.Pool[client.ObjectKey, *kube.Cluster]
	admission *kube.Admission
	prober    *kube.Prober
	secrets   *kube.SecretWatcher
	// clusters reads Cluster objects for the sources' mapFuncs: the
	// manager's cached client.
	clusters client.Reader
	// admitted is the admission's Admitted.
	admitted    func(client.ObjectKey) bool
	dialTimeout time.Duration
	log         logr.Logger

	watches watches
	metrics clusterMetrics
	// probes are the sources told of each health probe.
	probes probeListeners
	traces *traceExport // nil: no export
	// retryInterval is SetConnectionCreationRetryInterval's value (a
	// time.Duration); zero keeps the breaker's own periods.
	retryInterval atomic.Int64

	stopOnce sync.Once
	stop     chan struct{} // closed by Shutdown
	closed   atomic.Bool   // Shutdown ran, or Start returned
}

var (
	_ ClusterCache         = (*clusterCache)(nil)
	_ reconcile.Reconciler = (*clusterCache)(nil)
)

// connected returns key's client, or a NotConnectedError naming op. A
// client dialed for a Cluster since deleted and created again under key
// (kube.Admission.Current) is not handed out: the caller may have read the
// new Cluster, and the admission is about to replace the client.
func (cc *clusterCache) connected(op string, key client.ObjectKey) (*kube.Cluster, error) {
	c, ok := cc.pool.Peek(key)
	switch {
	case ok && cc.admission.Current(c):
		return c, nil
	case ok:
		return nil, recreated(op, key, cc.dialTimeout)
	}
	return nil, notConnected(op, key, cc.pool.State(key), cc.closed.Load(), cc.dialTimeout, cc.retryDelay())
}

// admittedUID is the UID of the Cluster admitted under key (the dialer's
// ObjectUID), or "" before the admission is wired.
func (cc *clusterCache) admittedUID(key client.ObjectKey) types.UID {
	if cc.admission == nil {
		return ""
	}
	return cc.admission.UID(key)
}

// GetClient returns the cluster's cached client (reads from its informer
// cache, bounded by Client.Timeout; writes to its apiserver), or at once an
// error matching ErrClusterNotConnected if it is not connected. It never
// dials.
func (cc *clusterCache) GetClient(_ context.Context, key client.ObjectKey) (client.Client, error) {
	c, err := cc.connected("getting client", key)
	if err != nil {
		return nil, err
	}
	return guard(c.Client, key), nil
}

// GetReader is GetClient as a client.Reader.
func (cc *clusterCache) GetReader(_ context.Context, key client.ObjectKey) (client.Reader, error) {
	c, err := cc.connected("getting client reader", key)
	if err != nil {
		return nil, err
	}
	return guard(c.Client, key), nil
}

// GetUncachedClient returns the cluster's live client, or at once an error
// matching ErrClusterNotConnected.
func (cc *clusterCache) GetUncachedClient(_ context.Context, key client.ObjectKey) (client.Client, error) {
	c, err := cc.connected("getting uncached client", key)
	if err != nil {
		return nil, err
	}
	return guard(c.Uncached, key), nil
}

// GetRESTConfig returns a copy of the cluster's REST config (with the
// request guard in its transport), or at once an error matching
// ErrClusterNotConnected.
func (cc *clusterCache) GetRESTConfig(_ context.Context, key client.ObjectKey) (*rest.Config, error) {
	c, err := cc.connected("getting REST config", key)
	if err != nil {
		return nil, err
	}
	return c.RESTConfig(), nil
}

// Watch adds w to the cluster's cache once per connection (by w.Name()),
// or returns an error matching ErrClusterNotConnected if the cluster is not
// connected. After a reconnect the caller adds it again, as with Cluster
// API's ClusterCache.
func (cc *clusterCache) Watch(ctx context.Context, key client.ObjectKey, w Watcher) error {
	c, err := cc.connected(fmt.Sprintf("creating watch %s for %T", w.Name(), w.Object()), key)
	if err != nil {
		return err
	}
	return cc.watches.add(ctx, c, w, func() bool {
		cur, ok := cc.pool.Peek(key)
		return ok && cur == c
	})
}

// GetHealthCheckingState returns the cluster's probe history from the pool:
// dials count as probes, as do the Prober's probes (as in Cluster API,
// connect attempts and health checks; requests' outcomes do not count,
// see dialerOptions). It is the zero value for a cluster the pool holds
// nothing for.
func (cc *clusterCache) GetHealthCheckingState(_ context.Context, key client.ObjectKey) HealthCheckingState {
	st := cc.pool.State(key)
	return HealthCheckingState{
		LastProbeTime:        st.LastProbe,
		LastProbeSuccessTime: st.LastProbeSuccess,
		ConsecutiveFailures:  int(st.ProbeFailures),
	}
}

// SetConnectionCreationRetryInterval sets the wait between connect
// attempts of a cluster that failed to connect, for clusters the pool
// first holds state for from now on: their breaker's open periods are
// exactly interval (no doubling), and a failed dial that leaves the
// breaker closed is retried after interval. Cluster API's suites call it
// (without ok) right after SetupWithManager; it is meant for tests. A
// non-positive interval restores the defaults.
func (cc *clusterCache) SetConnectionCreationRetryInterval(interval time.Duration) {
	cc.retryInterval.Store(int64(max(interval, 0)))
	if cc.admission != nil {
		cc.admission.SetRetry(cc.retryDelay())
	}
}

// forKey is the pool's ForKey: SetConnectionCreationRetryInterval's open
// periods.
func (cc *clusterCache) forKey(client.ObjectKey) pool.Overrides {
	d := time.Duration(cc.retryInterval.Load())
	if d <= 0 {
		return pool.Overrides{}
	}
	s := breakerSettings(d)
	return pool.Overrides{Breaker: &s}
}

// retryDelay is the wait before a failed dial that left the breaker closed
// is retried: SetConnectionCreationRetryInterval's interval, else the
// breaker's first open period.
func (cc *clusterCache) retryDelay() time.Duration {
	if d := time.Duration(cc.retryInterval.Load()); d > 0 {
		return d
	}
	return breaker.DefaultOpenTimeout
}

// Shutdown stops the cache: every connection closes (its informers end),
// the prober and the Secret watcher stop, and every method then reports
// ErrClusterNotConnected (with pool.ErrClosed). Cluster API's suites call
// it (without ok) when their manager stops; it is idempotent.
func (cc *clusterCache) Shutdown() {
	cc.stopOnce.Do(func() { close(cc.stop) })
	cc.shutdownPool()
	cc.traces.stop(cc.log)
}

// shutdownPool closes the pool (idempotent); a dialer that outlives the
// close is logged.
func (cc *clusterCache) shutdownPool() {
	cc.closed.Store(true)
	if err := cc.pool.Close(); err != nil {
		cc.log.Error(err, "closing the cluster pool")
	}
}
