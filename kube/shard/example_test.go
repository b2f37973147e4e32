package shard_test

import (
	"context"
	"errors"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/kube/shard"
	"github.com/clusterpool/clusterpool/pool"
)

// clusters lists Cluster API Clusters; a typed clusterv1.ClusterList works
// the same way.
func clusters() client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	l.SetKind("ClusterList")
	return l
}

// Every replica runs the same code with its own identity (the Pod name);
// the group's Leases decide which replica owns which cluster.
func ExampleNew() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	d, _ := kube.NewDialer(kube.SecretSource{Reader: mgr.GetAPIReader()}, kube.DialerOptions{Scheme: mgr.GetScheme()})
	p, _ := kube.NewPool(d, pool.Options[client.ObjectKey, *kube.Cluster]{})
	defer p.Close()

	// The Leases are read past the cache.
	leases, err := client.New(mgr.GetConfig(), client.Options{HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme()})
	if err != nil {
		panic(err)
	}
	s, err := shard.New(leases, shard.Options{
		Group:     "capi-controller",
		Identity:  os.Getenv("POD_NAME"),
		Namespace: os.Getenv("POD_NAMESPACE"),
		Clusters:  shard.ListKeys(mgr.GetClient(), clusters),
		Pool:      shard.PoolOf(p), // lost clusters are removed, gained ones dialed
	})
	if err != nil {
		panic(err)
	}
	if err := mgr.Add(s); err != nil {
		panic(err)
	}
	clients := shard.NewGetter(s, p)
	reconciler := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		wc, err := clients.Get(ctx, req.NamespacedName)
		if errors.Is(err, shard.ErrNotOwned) {
			return reconcile.Result{}, nil // another replica's cluster now
		}
		if err != nil {
			return kube.Requeue(err)
		}
		_ = wc // reconcile with the workload cluster's client
		return reconcile.Result{}, nil
	})
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion("cluster.x-k8s.io/v1beta2")
	cluster.SetKind("Cluster")
	err = ctrl.NewControllerManagedBy(mgr).For(cluster).
		WithEventFilter(s.Predicate(shard.ObjectKeyOf)).         // drop other replicas' clusters
		WatchesRawSource(shard.Source(s, shard.ClusterRequest)). // reconcile a cluster when gained
		Complete(reconciler)
	if err != nil {
		panic(err)
	}
	_ = mgr.Start(ctrl.SetupSignalHandler())
}
