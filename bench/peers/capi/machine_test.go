package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/index"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// providerNode is a marked Node with a providerID.
func providerNode(name, cluster, inc, providerID string) *corev1.Node {
	n := node(name, cluster, inc)
	n.Spec.ProviderID = providerID
	return n
}

// remoteWithProviderIDs is a fake workload cluster client holding nodes,
// indexed by providerID as the ClusterCache's caches are.
func remoteWithProviderIDs(t *testing.T, nodes ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(nodes...).
		WithIndex(&corev1.Node{}, index.NodeProviderIDField, func(o client.Object) []string {
			return []string{o.(*corev1.Node).Spec.ProviderID}
		}).Build()
}

// A Node listed by providerID through cluster c001's client is checked as
// a Node read by name is; a list of every Node is not (a workload
// apiserver serves several clusters).
func TestCheckedClientChecksNodesListedByProviderID(t *testing.T) {
	mgmt := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(clusterObj("c001", "2")).Build()
	remote := remoteWithProviderIDs(t, providerNode("c001-node-0", "c001", "2", "bench:///c001/0"),
		providerNode("old", "c001", "1", "bench:///c001/1"), providerNode("c002-node-0", "c002", "1", "bench:///c002/0"))
	k := newChecks(mgmt, time.Minute)
	listed := 0
	k.listedNodes = func(string) { listed++ }
	c, err := (&checkedCache{ClusterCache: &fixedCache{c: remote}, k: k}).GetClient(t.Context(), client.ObjectKey{Namespace: "fleet", Name: "c001"})
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]client.ListOption{
		{client.MatchingFields{index.NodeProviderIDField: "bench:///c001/0"}},
		{client.MatchingFields{index.NodeProviderIDField: "bench:///c001/1"}},
		{client.MatchingFields{index.NodeProviderIDField: "bench:///c002/0"}},
		nil,
	} {
		if err := c.List(t.Context(), &corev1.NodeList{}, opts...); err != nil {
			t.Fatal(err)
		}
	}
	crossed, _ := k.take()
	if len(crossed) != 2 || crossed[0].Node != "old" || crossed[1].Node != "c002-node-0" {
		t.Fatalf("crossed %+v, want the older incarnation's Node and c002's", crossed)
	}
	if listed != 4 {
		t.Fatalf("%d Node lists reported, want 4", listed)
	}
}

// A Machine's successful reconcile counts only if, within that reconcile
// (its reconcileID), it listed Nodes through the cluster's client; a
// MachineHealthCheck's counts anyway. The reconciles run in a real
// controller-runtime controller, which logs their ends.
func TestMachineSuccessNeedsANodeList(t *testing.T) {
	ends := make(chan string, 16)
	to := funcr.New(func(_, args string) {
		if strings.Contains(args, "Reconcile") {
			ends <- args
		}
	}, funcr.Options{Verbosity: successVerbosity})
	counter := newErrorCounter()
	counter.trackSuccesses()
	log := counter.logger(to)
	mgmt := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(clusterObj("c001", "1")).Build()
	k := newChecks(mgmt, time.Minute)
	k.listedNodes = counter.listedNodes
	cc := &checkedCache{ClusterCache: &fixedCache{c: remoteWithProviderIDs(t, providerNode("c001-node-0", "c001", "1", "bench:///c001/0"))}, k: k}
	reconciler := reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		if req.Name == "c001-machine-early" { // as when adding the finalizer
			return reconcile.Result{}, nil
		}
		c, err := cc.GetClient(ctx, client.ObjectKey{Namespace: "fleet", Name: "c001"})
		if err == nil {
			err = c.List(ctx, &corev1.NodeList{}, client.MatchingFields{index.NodeProviderIDField: "bench:///c001/0"})
		}
		switch {
		case err != nil:
			return reconcile.Result{}, err
		case req.Name == "c001-machine-failed":
			return reconcile.Result{}, reconcile.TerminalError(errors.New("patching the Machine failed")) // not retried: its retry could be mid-reconcile at the end
		case req.Name == "c001-machine-requeued":
			return reconcile.Result{RequeueAfter: time.Hour}, nil
		}
		return reconcile.Result{}, nil
	})
	names := []string{"c001-machine-0", "c001-machine-early", "c001-machine-failed", "c001-machine-requeued"}
	startController(t, log, reconciler, names)
	for range names {
		select {
		case <-ends:
		case <-time.After(30 * time.Second):
			t.Fatal("a reconcile did not end within 30 s")
		}
	}
	got := counter.successesSince(time.Time{})
	if len(got) != 1 || got["c001-machine-0"].IsZero() {
		t.Fatalf("successes %v, want c001-machine-0 only", got)
	}
	counter.mu.Lock()
	defer counter.mu.Unlock()
	if len(counter.listed) != 0 {
		t.Fatalf("reconciles still remembered after they ended: %v", counter.listed)
	}
}

// startController runs r in a controller named as Cluster API's Machine
// controller, logging as Cluster API's builder does, on one request per
// Machine name, until the test ends.
func startController(t *testing.T, log logr.Logger, r reconcile.Reconciler, names []string) {
	t.Helper()
	c, err := controller.NewUnmanaged(machineController, controller.Options{
		Reconciler:         r,
		SkipNameValidation: ptr.To(true),
		LogConstructor: func(req *reconcile.Request) logr.Logger {
			l := log.WithValues("controller", machineController)
			if req != nil {
				l = l.WithValues(machineKey, klog.KRef(req.Namespace, req.Name))
			}
			return l
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Watch(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		for _, n := range names {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "fleet", Name: n}})
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
	})
}
