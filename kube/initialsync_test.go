package kube

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// gateSource hands out configs whose transport holds every list and watch
// of ConfigMaps across namespaces (an informer's: client-go may sync with a
// watch that sends the initial objects) until gate is closed or the request
// is canceled: a cluster whose ConfigMap list is too large to sync within a
// dial.
func gateSource(src ConfigSource, gate chan struct{}) ConfigSource {
	return transportSource{ConfigSource: src, wrap: func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.URL.Path == "/api/v1/configmaps" {
				select {
				case <-gate:
				case <-req.Context().Done():
					return nil, req.Context().Err()
				}
			}
			return rt.RoundTrip(req)
		})
	}}
}

// newGateDialer returns a Dialer of key whose ConfigMap informer, started
// in the dial (WatchTypes), waits for the returned gate to close.
func newGateDialer(t *testing.T, key client.ObjectKey, opts DialerOptions) (*Dialer, chan struct{}) {
	t.Helper()
	needEnvtest(t)
	putKubeconfig(t, key, kubeconfig(t, "", ""))
	gate := make(chan struct{})
	opts.WatchTypes = []client.Object{&corev1.ConfigMap{}}
	d, err := NewDialer(gateSource(SecretSource{Reader: mgmt}, gate), opts)
	if err != nil {
		t.Fatal(err)
	}
	return d, gate
}

// Without InitialSyncTimeout the sync is part of the dial: a list that
// outlasts the dial fails it.
func TestInitialSyncWithinDial(t *testing.T) {
	d, _ := newGateDialer(t, client.ObjectKey{Namespace: "fleet", Name: "sync-in-dial"}, DialerOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := d.Dial(ctx, client.ObjectKey{Namespace: "fleet", Name: "sync-in-dial"})
	if err == nil {
		c.Stop()
		t.Fatal("the dial returned a cluster whose cache did not sync")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not sync") {
		t.Fatalf("dial: %v, want a sync timeout", err)
	}
}

// With InitialSyncTimeout, a list that outlasts the dial does not stop the
// cluster from connecting: the dial returns before its deadline, cached
// reads of the type fail within ReadTimeout while it syncs, and work once
// the sync ends, on the same Cluster.
func TestInitialSyncOutlastsDial(t *testing.T) {
	key := client.ObjectKey{Namespace: "fleet", Name: "sync-after-dial"}
	d, gate := newGateDialer(t, key, DialerOptions{InitialSyncTimeout: time.Minute, ReadTimeout: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	c, err := d.Dial(ctx, key)
	if err != nil {
		t.Fatalf("dial of a cluster syncing slowly: %v", err)
	}
	defer c.Stop()
	if ctx.Err() != nil {
		t.Fatal("the dial returned after its deadline")
	}
	err = c.Client.List(context.Background(), &corev1.ConfigMapList{})
	if !errors.Is(err, ErrReadTimeout) {
		t.Fatalf("cached List while the sync goes on: %v, want ErrReadTimeout", err)
	}
	close(gate)
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if !c.Cache.WaitForCacheSync(sctx) {
		t.Fatal("the cache did not sync once the list was let through")
	}
	if err := c.Client.List(context.Background(), &corev1.ConfigMapList{}); err != nil {
		t.Fatalf("cached List after the sync: %v", err)
	}
}

// A sync still not done when InitialSyncTimeout has passed replaces the
// Cluster by a new dial (pool Redial: no Removed event), as ClusterCache
// fails the connect and retries it.
func TestInitialSyncTimeoutRedials(t *testing.T) {
	key := client.ObjectKey{Namespace: "fleet", Name: "sync-never"}
	d, _ := newGateDialer(t, key, DialerOptions{InitialSyncTimeout: 6 * time.Second})
	p, err := NewPool(d, pool.Options[client.ObjectKey, *Cluster]{DialTimeout: 3 * time.Second, MaxWait: 4 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	events := watchEvents(t, p)
	first := getEventually(t, p, key)
	next := events.waitFor(t, 0, key, func(ev pool.Event[client.ObjectKey]) bool { return ev.Type == pool.Redialed }, 30*time.Second)
	events.waitFor(t, next, key, connected(true), 30*time.Second)
	second, ok := p.Peek(key)
	if !ok || second == first {
		t.Fatalf("after InitialSyncTimeout: held %v (%v), want a new Cluster", second, ok)
	}
	if slices.ContainsFunc(events.snapshot(), func(ev pool.Event[client.ObjectKey]) bool { return ev.Type == pool.Removed }) {
		t.Fatalf("the cluster was removed, not redialed: %+v", events.snapshot())
	}
}
