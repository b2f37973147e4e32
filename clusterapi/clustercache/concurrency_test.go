package clustercache_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	capiclustercache "sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/pool"
)

// The bounds of Cluster API's TestClusterCacheConcurrency, 1.2 × its
// probe interval and 1.2 × its connection creation retry interval, with two
// changes:
//   - the probe bound is 1.5 ×: on a loaded 2-core machine (80 /readyz
//     probes every 10 s to one envtest apiserver, beside the rest of the
//     suite) a probe's answer came 0.05 to 0.3 s past 1.2 × in two runs of
//     five;
//   - the connect bound is the open period after a hung dial
//     (breaker.DefaultMaxOpenTimeout, 30 s) plus the pool's dial deadline
//     (pool.DefaultDialTimeout). Here the unreachable clusters' dials hang
//     (the hold proxy accepts and never answers), so a cluster's failed
//     connects are an open period plus a hung dial apart, as in Cluster API,
//     whose retry interval also runs from the connect's error. Its own bound
//     (36 s) assumes a connect that fails within 6 s: with dials that hang
//     about 5 s it passed with 1 s to spare and failed under load.
const (
	probeBound   = clustercache.ProbeInterval * 150 / 100
	connectBound = breaker.DefaultMaxOpenTimeout + pool.DefaultDialTimeout
)

// TestClusterCacheConcurrency ports Cluster API's
// TestClusterCacheConcurrency (cluster_cache_test.go) to the public API:
// 100 Clusters, 20 % unreachable (their kubeconfig points at a proxy that
// accepts connections and never answers), a dial concurrency of 10, and
// 100 consumers calling GetClient. Healthy clusters: no error, the Node
// list works, a successful probe within 1.2 × 10 s. Unreachable ones: an
// error matching ErrClusterNotConnected, and a failed connect within
// connectBound (30 s + the dial deadline). No reconcile error or panic of the
// "clustercache" controller. The healthy Clusters all point at the suite's
// apiserver.
//
// The consumers run longer than connectBound (consumerRun), so a cluster
// that is never dialed again fails the test.
func TestClusterCacheConcurrency(t *testing.T) {
	const (
		clusterCount     = 100
		brokenPercentage = 20
		concurrency      = 10
		consumers        = 100
		consumerRun      = 50 * time.Second
	)
	e := newEnv(t, "concurrency")
	holdAddr := e.hold(t)
	cc := e.setup(t, concurrency, nil)
	e.start(t, cc)

	clusters := make([]testCluster, clusterCount)
	for i := range clusters {
		clusters[i] = testCluster{key: client.ObjectKey{Namespace: e.ns, Name: fmt.Sprintf("scale-%03d", i+1)},
			broken: i%(100/brokenPercentage) == 0}
	}
	createClusters(t, e, clusters, holdAddr)

	// Every Cluster was dialed once: healthy ones are connected, broken
	// ones have a failed connect.
	eventually(t, 3*time.Minute, func() error {
		for _, tc := range clusters {
			if err := tc.check(cc, false); err != nil {
				return err
			}
		}
		return nil
	})

	ctx, cancel := context.WithTimeout(context.Background(), consumerRun)
	defer cancel()
	errs := make(chan error, consumers)
	var wg sync.WaitGroup
	for range consumers {
		wg.Go(func() {
			for ctx.Err() == nil {
				tc := clusters[rand.IntN(len(clusters))]
				if err := tc.check(cc, true); err != nil {
					errs <- err
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, m := range []string{"controller_runtime_reconcile_errors_total", "controller_runtime_reconcile_panics_total"} {
		if n := counter(t, m, clustercache.ControllerName); n != 0 {
			t.Errorf("%s{controller=%q} = %v, want 0", m, clustercache.ControllerName, n)
		}
	}
}

// testCluster is one Cluster of the test; broken ones are unreachable.
type testCluster struct {
	key    client.ObjectKey
	broken bool
}

// check checks what a consumer sees of tc; with bounds, also the probe
// times.
func (tc testCluster) check(cc clustercache.ClusterCache, bounds bool) error {
	ctx := context.Background()
	c, err := cc.GetClient(ctx, tc.key)
	st := cc.GetHealthCheckingState(ctx, tc.key)
	if tc.broken {
		switch {
		case err == nil:
			return fmt.Errorf("cluster %s: expected an error when getting the client", tc.key)
		case !errors.Is(err, capiclustercache.ErrClusterNotConnected) || !errors.Is(err, pool.ErrCircuitOpen):
			return fmt.Errorf("cluster %s: %w does not match ErrClusterNotConnected and pool.ErrCircuitOpen", tc.key, err)
		case st.LastProbeTime.IsZero() || st.ConsecutiveFailures == 0:
			return fmt.Errorf("cluster %s: no failed connect yet (%+v)", tc.key, st)
		case bounds && time.Since(st.LastProbeTime) > connectBound:
			return fmt.Errorf("cluster %s: no connect attempt within %v (last %v ago)", tc.key, connectBound, time.Since(st.LastProbeTime))
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster %s: unexpected error when getting the client: %w", tc.key, err)
	}
	if err := c.List(ctx, &corev1.NodeList{}); err != nil {
		return fmt.Errorf("cluster %s: listing Nodes: %w", tc.key, err)
	}
	if bounds && time.Since(st.LastProbeSuccessTime) > probeBound {
		return fmt.Errorf("cluster %s: no successful probe within %v (last %v ago)", tc.key, probeBound, time.Since(st.LastProbeSuccessTime))
	}
	return nil
}

// createClusters creates the Clusters with 10 workers; broken ones reach
// the apiserver through holdAddr.
func createClusters(t *testing.T, e *testEnv, clusters []testCluster, holdAddr string) {
	t.Helper()
	healthy, broken := e.kubeconfig(t, ""), e.kubeconfig(t, holdAddr)
	work := make(chan testCluster)
	errs := make(chan error, len(clusters))
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			for tc := range work {
				kc := healthy
				if tc.broken {
					kc = broken
				}
				if err := e.createCluster(context.Background(), tc.key.Name, kc, true); err != nil {
					errs <- fmt.Errorf("cluster %s: %w", tc.key, err)
				}
			}
		})
	}
	for _, tc := range clusters {
		work <- tc
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// counter sums the controller-runtime counter name of controller.
func counter(t *testing.T, name, controller string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
