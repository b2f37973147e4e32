package clustercache_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	capiclustercache "sigs.k8s.io/cluster-api/controllers/clustercache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/pool"
)

// testWatcher counts the sources Watch adds (Cluster API's testWatcher).
type testWatcher struct{ watches atomic.Int32 }

func (w *testWatcher) Watch(source.TypedSource[ctrl.Request]) error {
	w.watches.Add(1)
	return nil
}

// TestWatch ports Cluster API's TestWatch (cluster_accessor_test.go): Watch
// fails with ErrClusterNotConnected before the cluster connects, adds a
// watch once per name and connection (also under concurrent calls), and
// forgets it when the connection closes, so that a Watch after a
// reconnect adds it again.
func TestWatch(t *testing.T) {
	e := newEnv(t, "watch")
	var refuse atomic.Bool // a ClusterFilter the test flips to disconnect
	cc := e.setup(t, 10, func(o *clustercache.Options) {
		o.ClusterFilter = func(*clusterv1.Cluster) bool { return !refuse.Load() }
	})
	e.start(t, cc)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: e.ns, Name: "test-cluster"}
	if err := e.createCluster(ctx, key.Name, e.kubeconfig(t, ""), false); err != nil {
		t.Fatal(err)
	}
	tw := &testWatcher{}
	w := clustercache.NewWatcher(clustercache.WatcherOptions{Name: "test-watch", Watcher: tw,
		Kind: &corev1.Node{}, EventHandler: &handler.EnqueueRequestForObject{}})

	// Not connected: infrastructure not provisioned.
	err := cc.Watch(ctx, key, w)
	if !errors.Is(err, capiclustercache.ErrClusterNotConnected) || !errors.Is(err, pool.ErrRemoved) {
		t.Fatalf("Watch before connect = %v, want ErrClusterNotConnected and pool.ErrRemoved", err)
	}

	if err := e.setProvisioned(ctx, key.Name, true); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, cc, key)
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if err := cc.Watch(ctx, key, w); err != nil {
				t.Errorf("Watch: %v", err)
			}
		})
	}
	wg.Wait()
	if n := tw.watches.Load(); n != 1 {
		t.Fatalf("10 Watch calls of one name added %d watches, want 1", n)
	}

	// Disconnect: the filter refuses the Cluster, which is removed.
	refuse.Store(true)
	touch(t, e, key)
	eventually(t, 30*time.Second, func() error {
		if err := cc.Watch(ctx, key, w); !errors.Is(err, clustercache.ErrClusterNotConnected) {
			return errors.Join(errNotYet, err)
		}
		return nil
	})

	// Reconnect: the watch is added to the new connection's cache.
	refuse.Store(false)
	touch(t, e, key)
	waitConnected(t, cc, key)
	if err := cc.Watch(ctx, key, w); err != nil {
		t.Fatalf("Watch after reconnect: %v", err)
	}
	if n := tw.watches.Load(); n != 2 {
		t.Fatalf("after a reconnect Watch added %d watches in all, want 2", n)
	}
}

// waitConnected waits until GetClient succeeds for key.
func waitConnected(t testing.TB, cc clustercache.ClusterCache, key client.ObjectKey) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		_, err := cc.GetClient(context.Background(), key)
		return err
	})
}

// touch changes an annotation of the Cluster, so that it is reconciled.
func touch(t *testing.T, e *testEnv, key client.ObjectKey) {
	t.Helper()
	cluster := &clusterv1.Cluster{}
	if err := e.c.Get(context.Background(), key, cluster); err != nil {
		t.Fatal(err)
	}
	metav1.SetMetaDataAnnotation(&cluster.ObjectMeta, "test/touched", time.Now().Format(time.RFC3339Nano))
	if err := e.c.Update(context.Background(), cluster); err != nil {
		t.Fatal(err)
	}
}
