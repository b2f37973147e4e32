package clustercache_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/pool"
)

// A Cluster deleted and created again under its name before the admission
// has reconciled it (its only worker is busy: the delete and the create
// wait in its queue as one item): a reconciler that reads the new Cluster
// must not be handed the deleted one's client. GetClient answers
// ErrClusterNotConnected (pool.ErrRemoved) until the admission runs; then
// the new Cluster connects, and the old client is stopped. The chaos run
// found Machine reconciles reading a deleted incarnation's Nodes this way
// (its re-created Clusters live on another apiserver).
func TestGetClientRefusesARecreatedClustersOldClient(t *testing.T) {
	e := newEnv(t, "recreate")
	busy, release := make(chan struct{}), make(chan struct{})
	var blocked sync.Once // the busy Cluster's first reconcile blocks
	cc := e.setup(t, 1, func(o *clustercache.Options) {
		o.ClusterFilter = func(c *clusterv1.Cluster) bool {
			if c.Name == "busy" {
				blocked.Do(func() { close(busy); <-release })
			}
			return true
		}
	})
	e.start(t, cc)
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // before the manager stops (cleanups run last first)
	ctx := context.Background()
	key := client.ObjectKey{Namespace: e.ns, Name: "a"}
	if err := e.createCluster(ctx, key.Name, e.kubeconfig(t, e.hostPort(t)), true); err != nil {
		t.Fatal(err)
	}
	waitConnected(t, cc, key)
	oldClient, err := cc.GetUncachedClient(ctx, key)
	if err != nil {
		t.Fatal(err)
	}

	// The admission's one worker blocks on another Cluster.
	if err := e.createCluster(ctx, "busy", e.kubeconfig(t, e.hostPort(t)), true); err != nil {
		t.Fatal(err)
	}
	select {
	case <-busy:
	case <-time.After(30 * time.Second):
		t.Fatal("the admission did not reconcile the busy Cluster")
	}
	old := &clusterv1.Cluster{}
	if err := e.c.Get(ctx, key, old); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := e.recreate(ctx, key); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error { // the manager's cache sees the new Cluster
		cur := &clusterv1.Cluster{}
		if err := e.mgr.GetClient().Get(ctx, key, cur); err != nil || cur.UID == old.UID {
			return fmt.Errorf("%w: %v", errNotYet, err)
		}
		return nil
	})
	_, err = cc.GetClient(ctx, key)
	if !errors.Is(err, clustercache.ErrClusterNotConnected) || !errors.Is(err, pool.ErrRemoved) {
		t.Fatalf("GetClient of the re-created Cluster before the admission ran: %v, want ErrClusterNotConnected and pool.ErrRemoved", err)
	}
	if _, err := cc.GetRESTConfig(ctx, key); !errors.Is(err, clustercache.ErrClusterNotConnected) {
		t.Fatalf("GetRESTConfig: %v, want ErrClusterNotConnected", err)
	}

	releaseOnce()
	waitConnected(t, cc, key)
	if err := oldClient.List(ctx, &corev1.NodeList{}); !errors.Is(err, clustercache.ErrClusterNotConnected) {
		t.Fatalf("the deleted Cluster's client after the new one connected: %v, want ErrClusterNotConnected (stopped)", err)
	}
}

// recreate creates the Cluster key again (its Secret stays), with its
// infrastructure provisioned.
func (e *testEnv) recreate(ctx context.Context, key client.ObjectKey) error {
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: clusterv1.ClusterSpec{ControlPlaneEndpoint: clusterv1.APIEndpoint{Host: "127.0.0.1", Port: 6443}}}
	if err := e.c.Create(ctx, cluster); err != nil {
		return fmt.Errorf("creating Cluster: %w", err)
	}
	return e.setProvisioned(ctx, key.Name, true)
}
