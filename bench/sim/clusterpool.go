package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/internal/opt"
	"github.com/clusterpool/clusterpool/internal/reqguard"
	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

func init() {
	register("clusterpool", func(env Env) (Strategy, error) { return newClusterPool(env, pool.Options[int, *Client]{}) })
	// A tuned row, labelled as such: the open period capped at 5 min (the
	// default before it became 30 s), for the trade-off between recovery
	// latency and dials to dead clusters.
	register("clusterpool-maxopen5m", func(env Env) (Strategy, error) {
		return newClusterPool(env, pool.Options[int, *Client]{Breaker: breaker.Settings{MaxOpenTimeout: 5 * time.Minute}})
	})
	// Exact open periods everywhere: the default jitters only the periods
	// below the cap (a refused dial's 5, 10, 20 s); a hung dial's Trip
	// period is the cap, exact in both, so in scenario 3 this row differs
	// from the default only by run-to-run noise.
	register("clusterpool-nojitter", func(env Env) (Strategy, error) {
		return newClusterPool(env, pool.Options[int, *Client]{Breaker: breaker.Settings{DisableJitter: true}})
	})
}

// clusterPool is this library as a reconciler uses it: pool.Get, errors
// mapped by kube.Requeue, the pool's events enqueueing the cluster's objects
// as kube.Source does, every cluster dialed in the background (pool.Probe)
// as its kubeconfig Secret appears, as kube.SecretWatcher with Connect does
// (ClusterCache connects every Cluster the same way), and every request on an established client passing
// the client's request guard as kube's transport does (kube.RequestOptions
// defaults: bulkhead, first-byte deadline, cancellation when the breaker
// opens, passive health).
type clusterPool struct {
	p      *pool.Pool[int, *Client]
	w      *World
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
	s := &clusterPool{w: w, done: make(chan struct{})}
	// The pool's OnClose stops the client's guard, as kube's does through
	// Cluster.Stop: its requests in flight are canceled.
	opts.OnClose = func(_ int, cl *Client) { cl.guard.Stop() }
	p, err := pool.New(s.dial, opts)
	if err != nil {
		return nil, err
	}
	s.p = p
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	events := p.SubscribeRequeue(ctx) // as kube.Source does
	go func() {
		defer close(s.done)
		for ev := range events {
			env.Enqueue(ev.Key)
		}
	}()
	for c := range w.faults {
		p.Connect(c) // kube.SecretWatcher{Connect: true} at the informer's first list
	}
	return s, nil
}

func (s *clusterPool) Get(ctx context.Context, c int) (*Client, error) {
	return s.p.Get(pool.Requeued(ctx), c)
}

// dial is the world's dial plus the client's guard, with kube's default
// RequestOptions scaled to the world's time; it goes live (reports) once
// the dial succeeded, as kube's Dialer does.
func (s *clusterPool) dial(ctx context.Context, c int) (*Client, error) {
	cl, err := s.w.Dial(ctx, c)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprint(c)
	cl.guard = reqguard.New(reqguard.Settings{Cluster: name, MaxInFlight: kube.DefaultMaxInFlight,
		MinFirstByte: s.w.Scaled(kube.DefaultMinFirstByte), MaxFirstByte: s.w.Scaled(RESTTimeout),
		Slow: reqguard.SlowLimit{Floor: kube.DefaultMinLimit, Ceiling: kube.DefaultMaxLimit,
			Tolerance: kube.DefaultLatencyTolerance, Baseline: s.w.Scaled(kube.DefaultLatencyBaseline)},
		Report:        func(err error) { s.p.Report(c, err) },
		ReportRequest: func(err error) { s.p.ReportRequest(c, err) },
		Stopped: func() error {
			return reqguard.StoppedError(name, s.p.State(c), s.w.Scaled(kube.DefaultReadyzTimeout))
		}})
	cl.guard.Live()
	return cl, nil
}

// Do is a request on an established client through its guard: rejected at
// once when the client was evicted or the bulkhead is full, canceled when
// the breaker opens or at the first-byte deadline, its outcome reported.
// The model's answer arrives whole, so its first byte is its end.
func (s *clusterPool) Do(ctx context.Context, _ int, cl *Client) error {
	fctx, f, err := cl.guard.Begin(ctx, reqguard.Counted)
	if err != nil {
		return err
	}
	err = cl.Do(fctx)
	if err == nil {
		f.FirstByte()
	}
	err = f.Err(err)
	f.End(err)
	return err
}

// Result is kube.Requeue: not-ready-yet errors requeue after pool.RetryAfter,
// the rest go to the rate limiter.
func (s *clusterPool) Result(err error) (time.Duration, error) {
	res, err := kube.Requeue(err)
	return res.RequeueAfter, err
}

// Report does nothing: the guard reports every request's outcome (passive
// health), as kube's transport does.
func (s *clusterPool) Report(int, error) {}

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
