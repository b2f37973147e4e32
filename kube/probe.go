package kube

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// Unauthorized answer removes the cluster at once and starts a new dial,
// which reads the credentials afresh. One scheduler goroutine and at most
// Concurrency probe goroutines serve every cluster.
//
// Prober is a manager.Runnable: add it to a manager, or call Start.
type Prober struct {
	pool *pool.Pool[client.ObjectKey, *Cluster]
	opts ProberOptions
}

// NewProber returns a Prober of p.
func NewProber(p *pool.Pool[client.ObjectKey, *Cluster], opts ProberOptions) (*Prober, error) {
	if err := opt.FirstNegative("kube: ProberOptions.", opt.F("Interval", opts.Interval),
		opt.F("Timeout", opts.Timeout), opt.F("Concurrency", opts.Concurrency)); err != nil {
		return nil, err
	}
	opt.Default(&opts.Interval, DefaultProbeInterval)
	opt.Default(&opts.Timeout, DefaultProbeTimeout)
	opt.Default(&opts.Concurrency, DefaultProbeConcurrency)
	return &Prober{pool: p, opts: opts}, nil
}

// Start probes until ctx is done, then waits for probes in flight.
func (pr *Prober) Start(ctx context.Context) error {
	events := pr.pool.Subscribe(ctx)
	var due dueHeap
	scheduled := map[client.ObjectKey]bool{}
	slots := make(chan struct{}, pr.opts.Concurrency)
	results := make(chan client.ObjectKey, pr.opts.Concurrency)
	var probes sync.WaitGroup
	defer probes.Wait()
	// Clusters connected before the subscription: their Connected events
	// are gone.
	for _, key := range pr.pool.Keys() {
		if _, ok := pr.pool.Peek(key); ok && !scheduled[key] {
			scheduled[key] = true
			heap.Push(&due, dueProbe{key: key, at: time.Now().Add(pr.opts.Interval)})
		}
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if len(due) > 0 {
			timer.Reset(time.Until(due[0].at))
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return nil
			}
			if ev.Type == pool.Connected && !scheduled[ev.Key] {
				scheduled[ev.Key] = true
				heap.Push(&due, dueProbe{key: ev.Key, at: time.Now().Add(pr.opts.Interval)})
			}
		case key := <-results:
			pr.ended(key, &due, scheduled)
		case <-timer.C:
			for len(due) > 0 && !due[0].at.After(time.Now()) {
				c, ok := pr.pool.Peek(due[0].key)
				if !ok {
					delete(scheduled, heap.Pop(&due).(dueProbe).key)
					continue
				}
				// Wait for a slot; meanwhile take in ended probes, which
				// only push future times.
				select {
				case slots <- struct{}{}:
				case key := <-results:
					pr.ended(key, &due, scheduled)
					continue
				case <-ctx.Done():
					return nil
				}
				key := heap.Pop(&due).(dueProbe).key
				probes.Go(func() {
					pr.probe(ctx, c)
					<-slots
					select {
					case results <- key:
					case <-ctx.Done():
					}
				})
			}
		}
	}
}

// ended schedules the next probe of key if it is still connected.
func (pr *Prober) ended(key client.ObjectKey, due *dueHeap, scheduled map[client.ObjectKey]bool) {
	if _, ok := pr.pool.Peek(key); ok {
		heap.Push(due, dueProbe{key: key, at: time.Now().Add(pr.opts.Interval)})
		return
	}
	delete(scheduled, key)
}

// probe checks one cluster and reports the outcome to the pool.
func (pr *Prober) probe(ctx context.Context, c *Cluster) {
	pctx, cancel := context.WithTimeout(ctx, pr.opts.Timeout)
	err := c.Readyz(pctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: not the cluster's fault
	}
	if err != nil {
		pr.opts.Logger.V(1).Info("probe failed", "cluster", c.Key.String(), "error", err.Error())
	}
	if apierrors.IsUnauthorized(err) {
		pr.pool.Remove(c.Key)
		redial(ctx, pr.pool, c.Key)
		return
	}
	pr.pool.Report(c.Key, err)
}

// redial starts a dial of key without waiting for it: the pool's dial goes on
// after the Get returns, and its Connected event triggers reconciles.
func redial(ctx context.Context, p *pool.Pool[client.ObjectKey, *Cluster], key client.ObjectKey) {
	gctx, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	p.Get(gctx, key) //nolint:errcheck // only starts the dial
}

type dueProbe struct {
	key client.ObjectKey
	at  time.Time
}

// dueHeap orders probes by time.
type dueHeap []dueProbe

// Len, Less, Swap, Push and Pop implement heap.Interface.
func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h dueHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *dueHeap) Push(x any)        { *h = append(*h, x.(dueProbe)) }
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
