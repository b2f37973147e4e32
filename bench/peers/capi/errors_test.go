package main

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	"sigs.k8s.io/cluster-api/controllers/clustercache"

	cpclustercache "github.com/clusterpool/clusterpool/clusterapi/clustercache"
)

// TestCounterCountsReconcilerErrorsByController logs as controller-runtime
// does (the controller name in WithValues, then more values and a name)
// and checks what the counter keeps.
func TestCounterCountsReconcilerErrorsByController(t *testing.T) {
	c := newErrorCounter()
	log := c.logger(logr.Discard())
	mhc := log.WithValues("controller", machineHealthCheckController, "controllerKind", "MachineHealthCheck").
		WithName("sub").WithValues(objectKey, klog.KRef("fleet", "c012-run0"), "reconcileID", "x")
	notConnected := fmt.Errorf("getting client: %w", clustercache.ErrClusterNotConnected)
	mhc.Error(notConnected, reconcilerError)
	mhc.Error(notConnected, reconcilerError)
	mhc.Error(errors.New("failed to patch machine c012-machine-3"), reconcilerError)
	log.WithValues("controller", machineHealthCheckController).Error(notConnected, reconcilerError, objectKey, klog.KRef("fleet", "c001-run0"))
	mhc.Error(notConnected, "Failed to fetch Cluster for MachineHealthCheck") // not a reconcile's error
	log.WithValues("controller", "clustercache").Error(errors.New("dial"), reconcilerError)
	log.Error(errors.New("no controller"), reconcilerError)

	got := c.counts()
	if got.MHC != 4 {
		t.Errorf("machinehealthcheck errors = %d, want 4", got.MHC)
	}
	wantKinds := map[string]int{"ErrClusterNotConnected": 3, "failed to patch machine cN-machine-N": 1}
	if !maps.Equal(got.Kinds, wantKinds) {
		t.Errorf("kinds = %v, want %v", got.Kinds, wantKinds)
	}
	if want := map[string]int{"c012-run0": 3, "c001-run0": 1}; !maps.Equal(got.ByObject, want) {
		t.Errorf("by object = %v, want %v", got.ByObject, want)
	}
	if want := map[string]int{"clustercache": 1, "": 1}; !maps.Equal(got.Other, want) {
		t.Errorf("other controllers = %v, want %v", got.Other, want)
	}
}

// TestKindMatchesBothCaches: the adapter's errors match Cluster API's
// sentinel, so both caches' not-connected errors get the same kind.
func TestKindMatchesBothCaches(t *testing.T) {
	for _, err := range []error{clustercache.ErrClusterNotConnected, cpclustercache.ErrClusterNotConnected,
		fmt.Errorf("wrapped: %w", clustercache.ErrClusterNotConnected)} {
		if got := kind(err); got != "ErrClusterNotConnected" {
			t.Errorf("kind(%v) = %q", err, got)
		}
	}
	long := kind(errors.New(string(make([]byte, 400))))
	if len(long) != 160+len("…") {
		t.Errorf("long message kept %d bytes, want it cut at 160", len(long))
	}
}

func TestParseFlags(t *testing.T) {
	if _, err := parseFlags([]string{"-kubeconfig", "k", "-cache", "other"}); err == nil {
		t.Error("-cache other accepted")
	}
	p, err := parseFlags([]string{"-kubeconfig", "k", "-cache", "adapter", "-duration", "5s"})
	if err != nil || p.Cache != "adapter" || p.Duration.Seconds() != 5 {
		t.Fatalf("parseFlags = %+v, %v", p, err)
	}
	if _, err := parseFlags([]string{"-kubeconfig", "k", "-feature-gates", "NoSuchGate=true"}); err == nil {
		t.Error("unknown feature gate accepted")
	}
	if setupFor("adapter") == nil || setupFor("stock") == nil {
		t.Fatal("no SetupWithManager")
	}
}
