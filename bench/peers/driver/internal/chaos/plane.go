package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// chaosPlane is one cache's management plane in the chaos run: a
// management apiserver of its own, holding the same objects as every
// other plane's (Clusters, Secrets, Machines, BenchMachines,
// MachineHealthChecks), written in the same steps (onAll). Each Cluster
// has a fault proxy per plane (chaosCluster.Proxies[index]) in front of
// the one workload apiserver every plane shares; a fault sets every
// plane's proxy in one step.
type chaosPlane struct {
	cache string // the cache whose manager reads this plane
	index int    // into chaosCluster.Proxies and Kubeconfigs
	// mgmt is a client of the management apiserver; kubeconfig its
	// kubeconfig file (the manager's); proc its process.
	mgmt       client.Client
	kubeconfig string
	proc       *fleet.APIServerProc
}

// planeName names the plane in errors: its cache's.
func (p *chaosPlane) planeName() string { return p.cache }

// onAll runs op on every plane at once, each in its own goroutine, all
// released together, and returns when every one has returned: no plane
// sees a step before another (beyond scheduling). The error joins each
// failed plane's, prefixed with its name.
func onAll[P interface{ planeName() string }](ctx context.Context, planes []P, op func(context.Context, P) error) error {
	errs := make([]error, len(planes))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range planes {
		wg.Go(func() {
			<-start
			if err := op(ctx, p); err != nil {
				errs[i] = fmt.Errorf("%s: %w", p.planeName(), err)
			}
		})
	}
	close(start)
	wg.Wait()
	return errors.Join(errs...)
}

// writeSecret writes Cluster name's kubeconfig Secret with value
// (creating it if missing).
func (p *chaosPlane) writeSecret(ctx context.Context, name string, value []byte) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: name + "-kubeconfig",
		Labels: map[string]string{fleet.ClusterNameLabel: name}}, Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"value": value}}
	err := p.mgmt.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		err = p.mgmt.Update(ctx, s)
	}
	if err != nil {
		return fmt.Errorf("writing Secret of %s: %w", name, err)
	}
	return nil
}

// deleteSecret deletes Cluster name's kubeconfig Secret.
func (p *chaosPlane) deleteSecret(ctx context.Context, name string) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: name + "-kubeconfig"}}
	return client.IgnoreNotFound(p.mgmt.Delete(ctx, s))
}

// createCluster creates c's Cluster object (annotated with incarnation
// inc, its endpoint the plane's proxy at endpoint) and its status.
func (p *chaosPlane) createCluster(ctx context.Context, name, endpoint string, inc int) error {
	obj := fleet.ClusterObject(name, endpoint)
	obj.SetAnnotations(map[string]string{chaosIncarnation: strconv.Itoa(inc)})
	if err := p.mgmt.Create(ctx, obj); ignoreExists(err) != nil {
		return fmt.Errorf("creating Cluster %s: %w", name, err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(fleet.ClusterGVK)
	if err := p.mgmt.Get(ctx, client.ObjectKey{Namespace: fleet.Namespace, Name: name}, got); err != nil {
		return err
	}
	status := fleet.ClusterStatus()
	status["conditions"] = append(status["conditions"].([]any), map[string]any{"type": "InfrastructureReady", "status": "True",
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "reason": "Ready", "message": ""})
	got.Object["status"] = status
	return p.mgmt.Status().Update(ctx, got)
}

// createMHC creates Cluster name's MachineHealthCheck if missing.
func (p *chaosPlane) createMHC(ctx context.Context, name string) error {
	return retry(ctx, func(ctx context.Context) error {
		return ignoreExists(p.mgmt.Create(ctx, fleet.MHCObject(name, chaosMHCSuffix[1:])))
	})
}

// removeCluster deletes Cluster name and its Secret, and, if all, its
// MachineHealthCheck, and its Machines and BenchMachines (machines).
func (p *chaosPlane) removeCluster(ctx context.Context, name string, all bool, machines []string) error {
	objs := []client.Object{fleet.ClusterObject(name, "127.0.0.1:1"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: name + "-kubeconfig"}}}
	if all {
		objs = append(objs, fleet.MHCObject(name, chaosMHCSuffix[1:]))
	}
	for _, o := range objs {
		if err := retry(ctx, func(ctx context.Context) error { return client.IgnoreNotFound(p.mgmt.Delete(ctx, o)) }); err != nil {
			return err
		}
	}
	if all {
		return p.deleteMachines(ctx, machines)
	}
	return nil
}

// setInfrastructure sets Cluster name's
// status.initialization.infrastructureProvisioned.
func (p *chaosPlane) setInfrastructure(ctx context.Context, name string, provisioned bool) error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"initialization": map[string]any{"infrastructureProvisioned": provisioned}}})
	if err != nil {
		return err
	}
	obj := fleet.ClusterObject(name, "127.0.0.1:1")
	return retry(ctx, func(ctx context.Context) error {
		return p.mgmt.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
	})
}

// poke annotates what key names (see keysOf): a Cluster's
// MachineHealthCheck, or a Machine; that makes its reconciler reconcile
// it.
func (p *chaosPlane) poke(ctx context.Context, key string) error {
	obj := client.Object(fleet.MHCObject(key, chaosMHCSuffix[1:]))
	if isMachine(key) {
		obj = namedObject(fleet.MachineGVK, key)
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, chaosPoke, strconv.FormatInt(time.Now().UnixNano(), 10))
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return client.IgnoreNotFound(p.mgmt.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)))
}
