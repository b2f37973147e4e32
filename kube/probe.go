package kube

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/internal/opt"
	"github.com/clusterpool/clusterpool/pool"
)

// Defaults of ProberOptions.
const (
	DefaultProbeInterval    = 10 * time.Second
	DefaultProbeTimeout     = 5 * time.Second
	DefaultProbeConcurrency = 10
)

// ProberOptions configures a Prober. Zero fields are the defaults.
type ProberOptions struct {
	// Interval between two probes of one cluster. Zero means 10s.
	Interval time.Duration
	// Timeout of one probe. Zero means 5s.
	Timeout time.Duration
	// Concurrency bounds the probes in flight across all clusters. Zero
	// means 10.
	Concurrency int
	// Logger receives probe failures; the zero value discards them.
	Logger logr.Logger
}

// Prober probes the pool's connected clusters with GET /readyz and feeds the
// results into their breakers (pool.Report): the breaker's
// ConsecutiveFailures (default 3) failed probes evict the client. An
// Unauthorized answer (one that a retry with newer credentials, for a
// cluster whose credentials rotate in place, did not cure; see
// SecretWatcher) replaces the client at once by a new dial (pool Redial:
// its breaker's history kept, no Removed event), which reads the
// credentials afresh. A client-go delaying
// workqueue schedules the probes (each connected cluster once per Interval;
// a cluster is in it at most once) and Concurrency workers send them.
//
// Prober is a manager.Runnable: add it to a manager, or call Start.
type Prober struct {
	pool ClusterPool
	opts ProberOptions
}

// NewProber returns a Prober of p, or an error matching ErrInvalidOptions,
// naming the field, when p is nil or a field of opts is negative.
func NewProber(p ClusterPool, opts ProberOptions) (*Prober, error) {
	if isNilPool(p) {
		return nil, invalidOptions(errors.New("NewProber: pool must not be nil"))
	}
	if err := opt.FirstNegative("ProberOptions.", opt.F("Interval", opts.Interval),
		opt.F("Timeout", opts.Timeout), opt.F("Concurrency", opts.Concurrency)); err != nil {
		return nil, invalidOptions(err)
	}
	opt.Default(&opts.Interval, DefaultProbeInterval)
	opt.Default(&opts.Timeout, DefaultProbeTimeout)
	opt.Default(&opts.Concurrency, DefaultProbeConcurrency)
	return &Prober{pool: p, opts: opts}, nil
}

// Start probes until ctx is done, then waits for probes in flight.
func (pr *Prober) Start(ctx context.Context) error {
	q := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[client.ObjectKey]{})
	events := pr.pool.Subscribe(ctx)
	// Clusters connected before the subscription: their Connected events
	// are gone.
	for _, key := range pr.pool.Keys() {
		if _, ok := pr.pool.Peek(key); ok {
			q.AddAfter(key, pr.opts.Interval)
		}
	}
	var workers sync.WaitGroup
	for range pr.opts.Concurrency {
		workers.Go(func() { pr.work(ctx, q) })
	}
	defer workers.Wait()
	defer q.ShutDown()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if ev.Type == pool.Connected {
				q.AddAfter(ev.Key, pr.opts.Interval) // an earlier schedule wins
			}
		}
	}
}

// work probes the clusters q hands out until q shuts down.
func (pr *Prober) work(ctx context.Context, q workqueue.TypedDelayingInterface[client.ObjectKey]) {
	for {
		key, shutdown := q.Get()
		if shutdown {
			return
		}
		pr.probe(ctx, key, q)
		q.Done(key)
	}
}

// probe checks key's current client, reports the outcome to the pool, and
// schedules the next probe while the cluster stays connected.
func (pr *Prober) probe(ctx context.Context, key client.ObjectKey, q workqueue.TypedDelayingInterface[client.ObjectKey]) {
	c, ok := pr.pool.Peek(key)
	if !ok || ctx.Err() != nil {
		return // disconnected: its next Connected event schedules it again
	}
	pctx, cancel := context.WithTimeout(ctx, pr.opts.Timeout)
	err := c.Readyz(pctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: not the cluster's fault
	}
	if err != nil {
		pr.opts.Logger.V(1).Info("probe failed", "cluster", key.String(), "error", err.Error())
	}
	if apierrors.IsUnauthorized(err) {
		pr.pool.Redial(key) // a new dial reads the credentials afresh
		return
	}
	pr.pool.Report(key, err)
	if _, ok := pr.pool.Peek(key); ok {
		q.AddAfter(key, pr.opts.Interval)
	}
}

// isNilPool reports whether p is nil, or a nil *pool.Pool in an interface.
func isNilPool(p ClusterPool) bool {
	pp, ok := p.(*pool.Pool[client.ObjectKey, *Cluster])
	return p == nil || (ok && pp == nil)
}
