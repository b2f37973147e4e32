// Command clusterpool is the bench/peers program of this repository's pool,
// wired as the README's Kubernetes section shows: kube.NewDialer over the
// kubeconfig Secrets, kube.NewPool with default Options, kube.NewProber and
// kube.SecretWatcher on the manager, and kube.Source enqueueing a
// cluster's objects on every pool event. The workload reconciler calls
// Get, reads and writes ConfigMaps with the cluster's uncached client (as
// Cluster API reads ConfigMaps) and maps the errors of both with
// kube.Requeue. It does not call Report: the Dialer's request protection
// (kube.RequestOptions, on by default) reports every request's outcome to
// the cluster's breaker itself, and reporting its ErrBulkheadFull
// rejections again as failures opened the breakers of healthy clusters.
//
// With -watch-nodes (scale runs) the Dialer's WatchTypes hold a Node
// informer per cluster, as ClusterCache's NodeProviderIDIndex does; with
// -timings each workload request's time on the wire (inside the request
// guard) is recorded as "roundtrip", so that the guard's share is the
// request's time less it and the rate limiter's.
//
// With -sample-connected (the driver's rotation and gray runs) a cluster
// counts as connected while the pool holds its client (Peek), and its
// breaker as open while the pool's State says it is not closed. The
// SecretWatcher above is what rotates a cluster's credentials in place
// when its kubeconfig Secret changes only them.
//
// Flags and output: see bench/peers/workload.
package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/clusterpool/clusterpool/bench/peers/workload"
	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

// version names the code under test: this working tree.
const version = "tree"

func main() {
	// clusterpool reads no Cluster API type: the Secrets are all it needs.
	none := func(*kruntime.Scheme) error { return nil }
	workload.Main(workload.Peer{Name: "clusterpool", Version: version, AddToScheme: none, Setup: setup})
}

func setup(_ context.Context, mgr manager.Manager, plan workload.Plan) (workload.Strategy, func(*builder.Builder) *builder.Builder, error) {
	var src kube.ConfigSource = kube.SecretSource{Reader: mgr.GetClient()}
	if plan.Timings != nil {
		src = timedSource{src: src, t: plan.Timings}
	}
	dopts := kube.DialerOptions{Scheme: scheme.Scheme}
	if plan.WatchNodes {
		dopts.WatchTypes = []client.Object{&corev1.Node{}}
	}
	d, err := kube.NewDialer(src, dopts)
	if err != nil {
		return workload.Strategy{}, nil, err
	}
	p, err := kube.NewPool(d, pool.Options[client.ObjectKey, *kube.Cluster]{})
	if err != nil {
		return workload.Strategy{}, nil, err
	}
	prober, err := kube.NewProber(p, kube.ProberOptions{})
	if err != nil {
		p.Close()
		return workload.Strategy{}, nil, err
	}
	closer := manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		p.Close()
		return nil
	})
	for _, r := range []manager.Runnable{prober, &kube.SecretWatcher{Informers: mgr.GetCache(), Pool: p, Connect: true}, closer} {
		if err := mgr.Add(r); err != nil {
			p.Close()
			return workload.Strategy{}, nil, err
		}
	}
	objects := func(_ context.Context, ev pool.Event[client.ObjectKey]) []reconcile.Request {
		return plan.Requests(ev.Key)
	}
	watch := func(b *builder.Builder) *builder.Builder { return b.WatchesRawSource(kube.Source(p, objects)) }
	return workload.Strategy{
		Get: func(ctx context.Context, cluster client.ObjectKey) (client.Client, error) {
			c, err := p.Get(pool.Requeued(ctx), cluster) // kube.Source brings it back
			if err != nil {
				return nil, err
			}
			return c.Uncached, nil
		},
		Result:     kube.Requeue,
		WorkResult: kube.Requeue,
		Connected: func(_ context.Context, cluster client.ObjectKey) bool {
			_, ok := p.Peek(cluster)
			return ok
		},
		BreakerOpen: func(cluster client.ObjectKey) bool { return p.State(cluster).Breaker != breaker.StateClosed },
	}, watch, nil
}
