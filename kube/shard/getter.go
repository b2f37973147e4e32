package shard

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Getter hands out clients of the clusters its Sharder owns and refuses the
// others with ErrNotOwned, so a reconcile that was queued before its
// cluster moved does not dial it here. Ownership is checked when Get is
// called: a client already obtained stays usable, so keep reconciles
// shorter than RenewDeadline.
type Getter[C any] struct {
	shard *Sharder
	pool  ClientPool[C]
}

// NewGetter returns a Getter of p's clients that asks s about ownership.
func NewGetter[C any](s *Sharder, p ClientPool[C]) *Getter[C] {
	return &Getter[C]{shard: s, pool: p}
}

// Get returns p.Get(ctx, key) if this replica owns key, else an error
// matching ErrNotOwned (and no pool.RetryAfter hint).
func (g *Getter[C]) Get(ctx context.Context, key client.ObjectKey) (C, error) {
	if !g.shard.Owns(key) {
		var zero C
		return zero, fmt.Errorf("%w: %s (group %q, replica %q)", ErrNotOwned, key, g.shard.opts.Group, g.shard.opts.Identity)
	}
	return g.pool.Get(ctx, key)
}
