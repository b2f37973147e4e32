package clustercache_test

import (
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	// Was: "sigs.k8s.io/cluster-api/controllers/clustercache". Nothing
	// else in main.go changes.
	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
)

// Example is Cluster API's core/main.go setup of the ClusterCache, with the
// one import changed: the returned ClusterCache goes, unchanged, to every
// reconciler's ClusterCache field.
func Example() {
	ctx := ctrl.SetupSignalHandler()
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	clusterCache, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: mgr.GetClient(), // core/main.go: setup.CreateSecretCachingClient(mgr)
		Cache:        clustercache.CacheOptions{Indexes: []clustercache.CacheOptionsIndex{clustercache.NodeProviderIDIndex}},
		Client:       clustercache.ClientOptions{UserAgent: "cluster-api-controller-manager"},
	}, controller.Options{MaxConcurrentReconciles: 100}) // --clustercache-concurrency
	if err != nil {
		panic(err)
	}
	_ = clusterCache // e.g. (&machine.Reconciler{ClusterCache: clusterCache, ...}).SetupWithManager(...)
	if err := mgr.Start(ctx); err != nil {
		fmt.Println(err)
	}
}
