package kube

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// follow is kube's one loop over a pool's events. It subscribes to p,
// calls subscribed (the place to read the state of clusters that changed
// before the subscription), then hands each event to onEvent, one at a
// time on the caller's goroutine, until ctx is done. When the pool
// closes, it calls closed, then returns at once unless untilDone, else
// when ctx is done (nothing connects any more, but changed Secrets are
// still read).
func follow(ctx context.Context, p ClusterPool, subscribed func(),
	onEvent func(pool.Event[client.ObjectKey]), closed func(), untilDone bool) {
	events := p.Subscribe(ctx)
	subscribed()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				closed()
				if !untilDone {
					return
				}
				events = nil
				continue
			}
			onEvent(ev)
		case <-ctx.Done():
			return
		}
	}
}
