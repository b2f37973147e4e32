package sim

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Strategy is one way for a reconciler to get a cluster's client: the
// behaviour of Cluster API's ClusterCacheTracker, of its ClusterCache, or of
// clusterpool. Strategies run at the world's scaled time.
type Strategy interface {
	// Get returns cluster c's client.
	Get(ctx context.Context, c int) (*Client, error)
	// Result is what the reconciler returns to controller-runtime for a
	// Get error: a requeue delay (real time) with no error, or an error for
	// the rate limiter.
	Result(err error) (requeueAfter time.Duration, ret error)
	// Report tells the strategy the outcome of using c's client.
	Report(c int, err error)
	// Clients returns how many clients the strategy holds.
	Clients() int
	// Close stops the strategy's goroutines.
	Close()
}

// Requester is a strategy that sends a reconcile's request on an
// established client itself (clusterpool: through the client's guard);
// for the others the request is Client.Do.
type Requester interface {
	Do(ctx context.Context, c int, cl *Client) error
}

// Env is what a strategy is built with: the world, and a way to enqueue
// every object of a cluster (the cluster source of the controller).
type Env struct {
	World   *World
	Enqueue func(c int)
}

// Factory builds a strategy.
type Factory func(Env) (Strategy, error)

var factories = map[string]Factory{}

// register adds a strategy under name; called from init of each model.
func register(name string, f Factory) { factories[name] = f }

// Strategies returns the registered strategy names, sorted.
func Strategies() []string {
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func newStrategy(name string, env Env) (Strategy, error) {
	f, ok := factories[name]
	if !ok {
		return nil, fmt.Errorf("sim: unknown strategy %q (have %v)", name, Strategies())
	}
	return f(env)
}
