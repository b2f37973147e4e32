package sim

import (
	"context"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/internal/opt"
	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

func init() {
	register("clusterpool", func(env Env) (Strategy, error) { return newClusterPool(env, pool.Options[int, *Client]{}) })
	// A tuned row, labelled as such: the open period capped at 30 s, like
	// ClusterCache's retry interval, which bounds recovery latency.
	register("clusterpool-maxopen30s", func(env Env) (Strategy, error) {
		return newClusterPool(env, pool.Options[int, *Client]{Breaker: breaker.Settings{MaxOpenTimeout: 30 * time.Second}})
	})
}

// clusterPool is this library as a reconciler uses it: pool.Get, errors
// mapped by kube.Requeue, outcomes fed back with Report, and the pool's events
// enqueueing the cluster's objects as kube.Source does.
type clusterPool struct {
	p      *pool.Pool[int, *Client]
	cancel context.CancelFunc
	done   chan struct{}
}

// newClusterPool builds a pool with opts, whose zero fields are the pool's
// defaults; every duration is then scaled to the world's time.
func newClusterPool(env Env, opts pool.Options[int, *Client]) (Strategy, error) {
	w := env.World
	scale := func(d *time.Duration, def time.Duration) {
		opt.Default(d, def)
		*d = w.Scaled(*d)
	}
	scale(&opts.MaxWait, pool.DefaultMaxWait)
	scale(&opts.DialTimeout, pool.DefaultDialTimeout)
	scale(&opts.Breaker.OpenTimeout, breaker.DefaultOpenTimeout)
	scale(&opts.Breaker.MaxOpenTimeout, breaker.DefaultMaxOpenTimeout)
	p, err := pool.New(w.Dial, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &clusterPool{p: p, cancel: cancel, done: make(chan struct{})}
	events := p.Subscribe(ctx)
	go func() {
		defer close(s.done)
		for ev := range events {
			env.Enqueue(ev.Key)
		}
	}()
	return s, nil
}

func (s *clusterPool) Get(ctx context.Context, c int) (*Client, error) { return s.p.Get(ctx, c) }

// Result is kube.Requeue: not-ready-yet errors requeue after pool.RetryAfter,
// the rest go to the rate limiter.
func (s *clusterPool) Result(err error) (time.Duration, error) {
	res, err := kube.Requeue(err)
	return res.RequeueAfter, err
}

func (s *clusterPool) Report(c int, err error) { s.p.Report(c, err) }

func (s *clusterPool) Clients() int {
	n := 0
	for _, k := range s.p.Keys() {
		if _, ok := s.p.Peek(k); ok {
			n++
		}
	}
	return n
}

func (s *clusterPool) Close() {
	s.cancel()
	_ = s.p.Close()
	<-s.done
}
