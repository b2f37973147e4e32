package clustercache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// TestClusterSource: GetClusterSource's source enqueues a request when an
// admitted Cluster connects, hands mapFunc the *clusterv1.Cluster (as
// KubeadmControlPlane's mapFunc requires), sends one WatchForProbeFailure
// event for a Cluster that never connected, and nothing for a Cluster
// without the WatchFilterValue label, nor for one the ClusterFilter
// removes. Reconcile, called directly as Cluster API's KubeadmControlPlane
// tests do, returns once the dial it started has ended.
func TestClusterSource(t *testing.T) {
	const filter = "mine"
	e := newEnv(t, "source")
	holdAddr := e.hold(t)
	var refused sync.Map // Cluster names the ClusterFilter refuses
	cc := e.setup(t, 10, func(o *clustercache.Options) {
		o.WatchFilterValue = filter
		o.ClusterFilter = func(c *clusterv1.Cluster) bool { _, no := refused.Load(c.Name); return !no }
	})
	e.start(t, cc)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	mapFunc := func(_ context.Context, o client.Object) []ctrl.Request {
		c := o.(*clusterv1.Cluster) // KCP's mapFunc panics on anything else
		return []ctrl.Request{{NamespacedName: client.ObjectKeyFromObject(c)}}
	}
	src := cc.GetClusterSource("test", mapFunc, clustercache.WatchForProbeFailure(time.Minute))
	if err := src.Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	mine := map[string]string{clusterv1.WatchLabel: filter}
	if err := e.createLabeled(ctx, "other", e.kubeconfig(t, ""), true, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.createLabeled(ctx, "healthy", e.kubeconfig(t, ""), true, mine); err != nil {
		t.Fatal(err)
	}
	want(t, q, "healthy") // connect
	if err := e.createLabeled(ctx, "broken", e.kubeconfig(t, holdAddr), true, mine); err != nil {
		t.Fatal(err)
	}
	want(t, q, "broken") // never probed successfully: the 1 m has passed
	if _, err := cc.GetClient(ctx, client.ObjectKey{Namespace: e.ns, Name: "other"}); err == nil {
		t.Fatal("a Cluster without the watch-filter label is connected")
	}

	if err := e.createLabeled(ctx, "direct", e.kubeconfig(t, ""), true, mine); err != nil {
		t.Fatal(err)
	}
	key := client.ObjectKey{Namespace: e.ns, Name: "direct"}
	eventually(t, 30*time.Second, func() error { // provisioned in the manager's cache
		c := &clusterv1.Cluster{}
		if err := e.mgr.GetClient().Get(ctx, key, c); err != nil || !ptr.Deref(c.Status.Initialization.InfrastructureProvisioned, false) {
			return errors.Join(errNotYet, err)
		}
		return nil
	})
	if _, err := cc.(reconcile.Reconciler).Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := cc.GetRESTConfig(ctx, key); err != nil {
		t.Fatalf("GetRESTConfig right after Reconcile: %v", err)
	}
	want(t, q, "direct")

	// Filtered out: removed, and no event (Cluster API sends none on
	// cleanup). The pool's events come in order, so had the removal sent
	// one, it would come before the next Cluster's connect.
	refused.Store("healthy", true)
	touch(t, e, client.ObjectKey{Namespace: e.ns, Name: "healthy"})
	eventually(t, 30*time.Second, func() error {
		if _, err := cc.GetClient(ctx, client.ObjectKey{Namespace: e.ns, Name: "healthy"}); err == nil {
			return errNotYet
		}
		return nil
	})
	if err := e.createLabeled(ctx, "last", e.kubeconfig(t, ""), true, mine); err != nil {
		t.Fatal(err)
	}
	want(t, q, "last")
	if n := q.Len(); n != 0 {
		t.Fatalf("%d more requests queued, want none", n)
	}
}

// want waits for the next request of q and checks it names the Cluster.
func want(t *testing.T, q workqueue.TypedRateLimitingInterface[reconcile.Request], name string) {
	t.Helper()
	got := make(chan reconcile.Request, 1)
	go func() {
		r, _ := q.Get()
		q.Done(r)
		got <- r
	}()
	select {
	case r := <-got:
		if r.Name != name {
			t.Fatalf("request for %s, want %s", r, name)
		}
	case <-time.After(time.Minute):
		q.ShutDown()
		<-got
		t.Fatalf("no request for %s", name)
	}
}

// TestWatchForProbeFailureAfterProbes: as Cluster API's ClusterCache,
// which checks after each probe, a WatchForProbeFailure duration below the
// probe interval sends nothing for a healthy cluster, and sends one event
// for a cluster once a probe of it has failed.
func TestWatchForProbeFailureAfterProbes(t *testing.T) {
	e := newEnv(t, "probefailure")
	proxy := e.proxy(t, faultproxy.Pass)
	cc := e.setup(t, 10, nil)
	e.start(t, cc)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	mapFunc := func(_ context.Context, o client.Object) []ctrl.Request {
		return []ctrl.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	}
	if err := cc.GetClusterSource("test", mapFunc, clustercache.WatchForProbeFailure(2*time.Second)).Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	if err := e.createCluster(ctx, "healthy", e.kubeconfig(t, ""), true); err != nil {
		t.Fatal(err)
	}
	want(t, q, "healthy") // connect
	if err := e.createCluster(ctx, "flaky", e.kubeconfig(t, proxy.Addr()), true); err != nil {
		t.Fatal(err)
	}
	want(t, q, "flaky") // connect
	healthy, flaky := client.ObjectKey{Namespace: e.ns, Name: "healthy"}, client.ObjectKey{Namespace: e.ns, Name: "flaky"}
	connected := cc.GetHealthCheckingState(ctx, healthy).LastProbeTime
	eventually(t, 3*clustercache.ProbeInterval, func() error { // a probe after the connect
		if st := cc.GetHealthCheckingState(ctx, healthy); !st.LastProbeTime.After(connected) || st.ConsecutiveFailures != 0 {
			return fmt.Errorf("%+v: %w", st, errNotYet)
		}
		return nil
	})
	if n := q.Len(); n != 0 {
		t.Fatalf("%d requests queued for healthy clusters, want none", n)
	}
	proxy.SetMode(faultproxy.Blackhole)
	want(t, q, "flaky")
	if st := cc.GetHealthCheckingState(ctx, flaky); st.ConsecutiveFailures == 0 {
		t.Fatalf("flaky's event came before a failed probe: %+v", st)
	}
}
