// Command clustercache is the bench/peers program of Cluster API v1.14.2's
// ClusterCache (sigs.k8s.io/cluster-api/controllers/clustercache), wired as
// Cluster API v1.14.2's core/main.go wires it (lines 440-455): SetupWithManager
// with setup.CreateSecretCachingClient, setup.ClusterCacheCacheOptions and
// setup.ClusterCacheClientOptions (QPS 20 / burst 30, main.go lines
// 255-259), concurrency 100 (--clustercache-concurrency, line 212). Its
// reconciler connects a Cluster only once
// status.initialization.infrastructureProvisioned is true
// (controllers/clustercache/cluster_cache.go line 485); the driver sets it.
//
// The workload controller watches GetClusterSource with
// WatchForProbeFailure(5 min), as the Machine controller does
// (core/reconcilers/machine/machine_controller.go line 164, grace period
// default main.go line 199), calls GetClient and returns its error as is
// (machine_controller_noderef.go lines 77-80): controller-runtime requeues
// it rate-limited.
//
// With -sample-connected (the driver's rotation scenario) a cluster counts
// as not connected while GetClient answers ErrClusterNotConnected: from
// the health probe's 401 after a rotation (cluster_accessor.go
// HealthCheck: Unauthorized disconnects at once) until the reconnect with
// the re-read Secret.
//
// Flags and output: see bench/peers/workload.
package main

import (
	"context"
	"time"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/setup"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/clusterpool/clusterpool/bench/peers/workload"
)

// version is the Cluster API version this module requires.
const version = "v1.14.2"

// remoteConditionsGracePeriod is --remote-conditions-grace-period's default.
const remoteConditionsGracePeriod = 5 * time.Minute

func main() {
	workload.Main(workload.Peer{Name: "clustercache", Version: version, AddToScheme: clusterv1.AddToScheme, Setup: setupPeer})
}

func setupPeer(ctx context.Context, mgr manager.Manager, plan workload.Plan) (workload.Strategy, func(*builder.Builder) *builder.Builder, error) {
	secrets, err := setup.CreateSecretCachingClient(mgr)
	if err != nil {
		return workload.Strategy{}, nil, err
	}
	cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
		SecretClient: secrets,
		Cache:        setup.ClusterCacheCacheOptions(),
		Client:       setup.ClusterCacheClientOptions("bench-peers", 20, 30),
	}, controller.Options{MaxConcurrentReconciles: 100})
	if err != nil {
		return workload.Strategy{}, nil, err
	}
	objects := func(_ context.Context, cluster client.Object) []ctrl.Request {
		return plan.Requests(client.ObjectKeyFromObject(cluster))
	}
	watch := func(b *builder.Builder) *builder.Builder {
		return b.WatchesRawSource(cc.GetClusterSource("workload", objects, clustercache.WatchForProbeFailure(remoteConditionsGracePeriod)))
	}
	return workload.Strategy{
		Get:    cc.GetClient,
		Result: func(err error) (ctrl.Result, error) { return ctrl.Result{}, err },
		// connected: GetClient does not answer ErrClusterNotConnected
		// (it never dials on the caller's path)
		Connected: func(ctx context.Context, cluster client.ObjectKey) bool {
			_, err := cc.GetClient(ctx, cluster)
			return err == nil
		},
	}, watch, nil
}
