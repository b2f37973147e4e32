package kube

import (
	"context"
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// Reconciler runs a SecretWatcher and a Prober of one pool on one
// subscription to the pool's events, from one goroutine: the watcher's.
// Each event goes to the watcher (the end of a dial during which a Secret
// changed), then to the Prober (a Connected cluster's first tick), then to
// OnEvent. Started alone, each of them subscribes for itself.
//
// The Prober's probes run on its own workers, as when started alone; only
// its scheduling of a newly connected cluster waits while the watcher
// acts on a changed Secret (a rotation is bounded by
// DefaultRequestTimeout). Events of one cluster coalesce meanwhile, its
// latest one is never lost (see pool.Pool.Subscribe).
//
// Reconciler is a manager.Runnable: add it to a manager, or call Start;
// add neither Secrets nor Prober on their own then.
type Reconciler struct {
	// Secrets is the kubeconfig Secret watcher. Required.
	Secrets *SecretWatcher
	// Prober is the pool's Prober; nil runs none.
	Prober *Prober
	// OnSubscribed, when set, runs once the subscription is made, before
	// the first event: where a caller reads the state of the clusters that
	// changed before it (their events are gone).
	OnSubscribed func()
	// OnEvent, when set, is handed each event after the watcher and the
	// Prober. It runs on the reconciler's goroutine, under no lock of
	// kube's: it must not block.
	OnEvent func(pool.Event[client.ObjectKey])
}

// errNoSecrets is Reconciler.Start's error without Secrets.
var errNoSecrets = invalidOptions(errors.New("Reconciler.Secrets must not be nil"))

// Start runs the watcher and the Prober until ctx is done, then waits for
// the probes in flight. It returns an error matching ErrInvalidOptions
// when Secrets is nil, or the watcher's error.
func (r *Reconciler) Start(ctx context.Context) error {
	if r.Secrets == nil {
		return errNoSecrets
	}
	track := func(client.ObjectKey) {}
	subscribed := func() {}
	if r.Prober != nil {
		t, stop := r.Prober.start(ctx)
		defer stop()
		track, subscribed = t, r.Prober.trackConnected(t)
	}
	return r.Secrets.run(ctx, func() {
		subscribed()
		if r.OnSubscribed != nil {
			r.OnSubscribed()
		}
	}, func(ev pool.Event[client.ObjectKey]) {
		if ev.Type == pool.Connected {
			track(ev.Key)
		}
		if r.OnEvent != nil {
			r.OnEvent(ev)
		}
	})
}
