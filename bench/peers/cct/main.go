// Command cct is the bench/peers program of Cluster API v1.8.4's
// ClusterCacheTracker (sigs.k8s.io/cluster-api/controllers/remote), wired
// as Cluster API v1.8.4's main.go wires it (lines 398-434): a
// ClusterCacheTracker on the manager with a secret-caching client, the
// NodeProviderIDIndex and QPS 20 / burst 30, plus its
// ClusterCacheReconciler with concurrency 10 (the
// --clustercachetracker-concurrency default, main.go line 184). The
// workload reconciler calls GetClient and answers ErrClusterLocked with
// RequeueAfter one minute and any other error by returning it, as
// internal/controllers/machine/machine_controller.go does (lines 225-228).
//
// Flags and output: see bench/peers/workload.
package main

import (
	"context"
	"errors"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/v1beta1"
	"sigs.k8s.io/cluster-api/controllers/remote"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/clusterpool/clusterpool/bench/peers/workload"
)

// version is the Cluster API version this module requires.
const version = "v1.8.4"

func main() {
	workload.Main(workload.Peer{Name: "cct", Version: version, AddToScheme: clusterv1.AddToScheme, Setup: setup})
}

func setup(ctx context.Context, mgr manager.Manager, _ workload.Plan) (workload.Strategy, func(*builder.Builder) *builder.Builder, error) {
	secrets, err := client.New(mgr.GetConfig(), client.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Cache:      &client.CacheOptions{Reader: mgr.GetCache()},
	})
	if err != nil {
		return workload.Strategy{}, nil, err
	}
	log := mgr.GetLogger()
	tracker, err := remote.NewClusterCacheTracker(mgr, remote.ClusterCacheTrackerOptions{
		SecretCachingClient: secrets,
		ControllerName:      "bench-peers",
		Log:                 &log,
		Indexes:             []remote.Index{remote.NodeProviderIDIndex},
		ClientQPS:           20,
		ClientBurst:         30,
	})
	if err != nil {
		return workload.Strategy{}, nil, err
	}
	if err := (&remote.ClusterCacheReconciler{Client: mgr.GetClient(), Tracker: tracker}).
		SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 10}); err != nil {
		return workload.Strategy{}, nil, err
	}
	return workload.Strategy{
		Get: func(ctx context.Context, cluster client.ObjectKey) (client.Client, error) {
			return tracker.GetClient(ctx, cluster)
		},
		Result: func(err error) (ctrl.Result, error) {
			if errors.Is(err, remote.ErrClusterLocked) {
				return ctrl.Result{RequeueAfter: time.Minute}, nil
			}
			return ctrl.Result{}, err
		},
	}, nil, nil
}
