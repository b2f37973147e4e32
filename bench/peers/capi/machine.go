package main

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// machineController is the Machine controller's name in its logs and
// metrics; machineKey the key its log lines carry the Machine under.
const (
	machineController = "machine"
	machineKey        = "Machine"
)

// Cluster API v1.14.2's core/main.go defaults for the Machine reconciler.
const (
	machineConcurrency          = 100             // --machine-concurrency
	remoteConditionsGracePeriod = 5 * time.Minute // --remote-conditions-grace-period
)

// setupMachineReconciler adds Cluster API v1.14.2's Machine reconciler on
// cc, as core/main.go does (lines 650-659; no RuntimeClient: the RuntimeSDK
// and InPlaceUpdates gates are off by default, no watch filter, no
// additional synced labels or annotations).
func setupMachineReconciler(ctx context.Context, mgr manager.Manager, cc clustercache.ClusterCache) error {
	err := (&machine.Reconciler{
		Client:                      mgr.GetClient(),
		APIReader:                   mgr.GetAPIReader(),
		ClusterCache:                cc,
		RemoteConditionsGracePeriod: remoteConditionsGracePeriod,
	}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: machineConcurrency})
	if err != nil {
		return fmt.Errorf("setting up the Machine reconciler: %w", err)
	}
	return nil
}
