package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

// fakeCluster is an HTTP server that answers 200 to everything: enough for
// a dial, which checks /readyz and reads discovery only when a client
// first needs a mapping.
func fakeCluster() (*httptest.Server, kube.ConfigSource) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	return srv, kube.ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
		return &rest.Config{Host: srv.URL}, nil
	})
}

// A Dialer's options are checked when it is built: an invalid one is an
// error matching ErrInvalidOptions that names the field.
func ExampleNewDialer() {
	srv, src := fakeCluster()
	defer srv.Close()
	_, err := kube.NewDialer(src, kube.DialerOptions{QPS: -1})
	fmt.Println(errors.Is(err, kube.ErrInvalidOptions))
	fmt.Println(err)
	// Output:
	// true
	// kube: invalid options: DialerOptions.QPS=-1 must not be negative
}

// The quick start: a Dialer reading each cluster's config from a
// ConfigSource (SecretSource in a Cluster API controller), and a pool that
// dials with it. Get returns a connected Cluster, dialing it first if
// needed; its clients are controller-runtime's.
func ExampleNewPool() {
	srv, src := fakeCluster()
	defer srv.Close()
	d, err := kube.NewDialer(src, kube.DialerOptions{UserAgent: "example-controller"})
	if err != nil {
		panic(err)
	}
	// Get waits up to MaxWait for a dial in flight (default 50 ms, then
	// ErrWaitTimeout: a reconciler requeues); here it waits for the first.
	p, err := kube.NewPool(d, pool.Options[client.ObjectKey, *kube.Cluster]{MaxWait: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	c, err := p.Get(context.Background(), client.ObjectKey{Namespace: "fleet", Name: "edge-1"})
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Key, c.Readyz(context.Background()))
	// Output: fleet/edge-1 <nil>
}

// Source enqueues a reconcile request on each pool event: here the
// cluster's own key (ClusterRequest) when it connects. A controller passes
// it to its builder's WatchesRawSource.
func ExampleSource() {
	srv, src := fakeCluster()
	defer srv.Close()
	d, err := kube.NewDialer(src, kube.DialerOptions{})
	if err != nil {
		panic(err)
	}
	p, err := kube.NewPool(d, pool.Options[client.ObjectKey, *kube.Cluster]{})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := kube.Source(p, kube.ClusterRequest).Start(ctx, q); err != nil {
		panic(err)
	}
	p.Connect(client.ObjectKey{Namespace: "fleet", Name: "edge-1"})
	req, _ := q.Get()
	fmt.Println("reconcile", req.NamespacedName)
	// Output: reconcile fleet/edge-1
}

// A SecretWatcher picks up rotated kubeconfig Secrets from the manager's
// cache: a connected cluster whose credentials alone changed switches to
// them in place; any other change re-dials it. With Connect it also dials
// each cluster whose Secret appears. (It needs a management cluster, so
// this example is not run.)
func ExampleSecretWatcher() {
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		panic(err)
	}
	d, err := kube.NewDialer(kube.SecretSource{Reader: mgr.GetClient()}, kube.DialerOptions{})
	if err != nil {
		panic(err)
	}
	p, err := kube.NewPool(d, pool.Options[client.ObjectKey, *kube.Cluster]{})
	if err != nil {
		panic(err)
	}
	if err := mgr.Add(&kube.SecretWatcher{Informers: mgr.GetCache(), Pool: p, Connect: true}); err != nil {
		panic(err)
	}
	// Then mgr.Start(ctx).
}
