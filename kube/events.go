package kube

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// follow is kube's one loop over a pool's events. It subscribes to p,
// calls subscribed (if set: the place to read the state of clusters that
// changed before the subscription), then hands each event to onEvent and
// each signal of wake to onWake, one at a time on the caller's goroutine,
// until ctx is done. When the pool closes, it returns at once if wake is
// nil, else it goes on serving wake until ctx is done (nothing connects
// any more, but changed Secrets are still read).
func follow(ctx context.Context, p ClusterPool, subscribed func(),
	onEvent func(pool.Event[client.ObjectKey]), wake <-chan struct{}, onWake func()) {
	events := p.Subscribe(ctx)
	if subscribed != nil {
		subscribed()
	}
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				if wake == nil {
					return
				}
				events = nil
				continue
			}
			onEvent(ev)
		case <-wake:
			onWake()
		case <-ctx.Done():
			return
		}
	}
}
