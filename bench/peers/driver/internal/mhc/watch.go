package mhc

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// firstSeen is when (since a run's start) each object first met a
// predicate, by the key the predicate gives.
type firstSeen map[string]time.Duration

// keyFunc gives an object's key and whether it meets the predicate.
type keyFunc func(*unstructured.Unstructured) (string, bool)

// machineChecked: a Machine whose v1beta2 HealthCheckSucceeded condition is
// True (the MachineHealthCheck reconciler found its Node healthy), by
// Machine name.
func machineChecked(u *unstructured.Unstructured) (string, bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "HealthCheckSucceeded" {
			return u.GetName(), m["status"] == "True"
		}
	}
	return u.GetName(), false
}

// mhcHealthy returns the predicate of a MachineHealthCheck whose status
// counts want expected and want healthy Machines, by Cluster name.
func mhcHealthy(want int) keyFunc {
	return func(u *unstructured.Unstructured) (string, bool) {
		cluster, _, _ := unstructured.NestedString(u.Object, "spec", "clusterName")
		expected, ok1, _ := unstructured.NestedInt64(u.Object, "status", "expectedMachines")
		healthy, ok2, _ := unstructured.NestedInt64(u.Object, "status", "currentHealthy")
		return cluster, ok1 && ok2 && expected == int64(want) && healthy == int64(want)
	}
}

// watchFirst records, until ctx ends, when each object of kind gvk in the
// fleet's namespace first meets key (since t0): a list, then a watch from
// its resource version, listed again whenever the watch ends. ready is
// closed once the first list is in; notify, if not nil, gets each key as
// it is first recorded.
func watchFirst(ctx context.Context, c client.WithWatch, gvk schema.GroupVersionKind, t0 time.Time, key keyFunc, ready chan<- struct{}, notify chan<- string) (firstSeen, error) {
	seen := firstSeen{}
	note := func(u *unstructured.Unstructured) {
		k, ok := key(u)
		if _, dup := seen[k]; !ok || dup {
			return
		}
		seen[k] = time.Since(t0)
		if notify != nil {
			notify <- k
		}
	}
	defer func() {
		if ready != nil {
			close(ready)
		}
	}()
	listGVK := gvk.GroupVersion().WithKind(gvk.Kind + "List")
	for ctx.Err() == nil {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(listGVK)
		if err := c.List(ctx, list, client.InNamespace(fleet.Namespace)); err != nil {
			if ctx.Err() != nil {
				break
			}
			return seen, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			note(&list.Items[i])
		}
		if ready != nil {
			close(ready)
			ready = nil
		}
		wl := &unstructured.UnstructuredList{}
		wl.SetGroupVersionKind(listGVK)
		w, err := c.Watch(ctx, wl, client.InNamespace(fleet.Namespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return seen, fmt.Errorf("watching %s: %w", gvk.Kind, err)
		}
		drain(ctx, w, note)
		w.Stop()
	}
	return seen, nil
}

// drain passes w's objects to note until w ends or ctx does.
func drain(ctx context.Context, w watch.Interface, note func(*unstructured.Unstructured)) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if u, isObj := ev.Object.(*unstructured.Unstructured); isObj && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				note(u)
			}
		}
	}
}

// checkTimes are one run's times: each Machine's first
// HealthCheckSucceeded=True, and each Cluster's MachineHealthCheck's first
// status with every Machine healthy.
type checkTimes struct {
	Machines firstSeen
	MHCs     firstSeen
}

// checkWatch watches the Machines and MachineHealthChecks of a run.
type checkWatch struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	times  checkTimes
	errs   [2]error
}

// startCheckWatch starts both watches (times since t0) and returns once
// their first lists are in; notify is watchFirst's.
func startCheckWatch(ctx context.Context, c client.WithWatch, t0 time.Time, machines int, notify chan<- string) *checkWatch {
	ctx, cancel := context.WithCancel(ctx)
	w := &checkWatch{cancel: cancel}
	readies := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	w.wg.Go(func() {
		w.times.Machines, w.errs[0] = watchFirst(ctx, c, fleet.MachineGVK, t0, machineChecked, readies[0], notify)
	})
	w.wg.Go(func() {
		w.times.MHCs, w.errs[1] = watchFirst(ctx, c, fleet.MHCGVK, t0, mhcHealthy(machines), readies[1], notify)
	})
	for _, r := range readies {
		select {
		case <-r:
		case <-ctx.Done():
		}
	}
	return w
}

// stop ends the watches and returns what they saw.
func (w *checkWatch) stop() (checkTimes, error) {
	w.cancel()
	w.wg.Wait()
	if w.errs[0] != nil {
		return w.times, w.errs[0]
	}
	return w.times, w.errs[1]
}
