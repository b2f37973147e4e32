package sim

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// Config is what every run of a benchmark shares.
type Config struct {
	// Scale multiplies every duration of the model (default 1/100).
	Scale float64
	// Workers is the reconciler's MaxConcurrentReconciles (default 10).
	Workers int
	// Seed lays out the faults and the initial queue order; every strategy
	// of a scenario sees the same layout.
	Seed uint64
	// LegacyQueue runs every controller (the workload's and ClusterCache's)
	// on client-go's rate-limiting workqueue instead of controller-runtime's
	// default priority queue (see World.newQueue).
	LegacyQueue bool
}

func (c Config) withDefaults() Config {
	if c.Scale == 0 {
		c.Scale = 0.01
	}
	if c.Workers == 0 {
		c.Workers = 10
	}
	return c
}

// run is one strategy on one scenario: a workload controller
// (controller-runtime's queue, default rate limiter and result handling,
// cfg.Workers workers) whose reconciles get the cluster's client from the
// strategy and do Work with it.
type run struct {
	sc    Scenario
	cfg   Config
	w     *World
	s     Strategy
	q     workqueue.TypedRateLimitingInterface[int]
	ctx   context.Context
	ended atomic.Bool

	// firstOK is each object's first successful reconcile, unscaled ns
	// since start plus one; 0 while it has none.
	firstOK []atomic.Int64
	pending atomic.Int64 // measured objects still without a success
	allOK   chan struct{}
	once    sync.Once

	stats []workerStats
}

// workerStats is one worker's record; merged after the run.
type workerStats struct {
	durations []time.Duration // every reconcile, unscaled
	blocked   time.Duration   // in Get, and in failed calls to the cluster
	hung      time.Duration   // in failed calls to the cluster only
	healthyOK int
	steadyOK  int // healthyOK in the second half of a saturated run
	requeues  int // RequeueAfter without error
	errors    int // returned errors (rate-limited requeues)
}

// Run runs strategy on sc and returns its figures.
func Run(ctx context.Context, sc Scenario, strategy string, cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	cfg.Scale = max(cfg.Scale, sc.MinScale)
	r := &run{sc: sc, cfg: cfg, allOK: make(chan struct{}),
		w:       newWorld(sc.Clusters, sc.Dead, sc.Flap, sc.RecoverAt, sc.FlapPeriod, cfg.Scale, cfg.Seed),
		firstOK: make([]atomic.Int64, sc.Clusters*sc.Objects),
		stats:   make([]workerStats, cfg.Workers)}
	for i := range r.firstOK {
		if r.measured(i) {
			r.pending.Add(1)
		}
	}
	r.w.legacyQueue = cfg.LegacyQueue
	r.w.until = sc.Duration
	r.q = r.w.newQueue()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r.ctx = ctx

	before := sample()
	r.w.start = time.Now()
	s, err := newStrategy(strategy, Env{World: r.w, Enqueue: r.enqueue})
	if err != nil {
		r.q.ShutDown()
		return Result{}, err
	}
	// The strategy may enqueue at once (its event source): workers start
	// only once r.s is set.
	r.s = s
	var wg sync.WaitGroup
	for i := range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.worker(&r.stats[i])
		}()
	}
	order := rand.New(rand.NewPCG(cfg.Seed, 2)).Perm(len(r.firstOK))
	for _, o := range order {
		r.q.Add(o)
	}

	var until <-chan struct{}
	if !sc.Saturate {
		until = r.allOK
	}
	timer := time.NewTimer(r.w.Scaled(sc.Duration))
	select {
	case <-timer.C:
	case <-until:
	case <-ctx.Done():
	}
	timer.Stop()
	elapsed := r.w.Now()
	var mem memSample
	if sc.Memory {
		mem = sample().minus(before)
	}
	r.ended.Store(true)
	cancel()
	stopWorkers(r.q, cfg.Workers, &wg)
	clients := s.Clients()
	s.Close()
	return r.result(strategy, elapsed, clients, mem), nil
}

// measured reports whether object o counts toward "every object reconciled
// once": objects of Healthy clusters, and of Dead ones that recover.
func (r *run) measured(o int) bool {
	f := r.w.faults[o/r.sc.Objects]
	return f == Healthy || (f == Dead && r.sc.RecoverAt > 0)
}

// enqueue adds every object of cluster c: the cluster source.
func (r *run) enqueue(c int) {
	for j := range r.sc.Objects {
		r.q.Add(c*r.sc.Objects + j)
	}
}

func (r *run) worker(st *workerStats) {
	for {
		o, shutdown := r.q.Get()
		if shutdown || o < 0 { // o < 0: stopWorkers
			return
		}
		if !r.ended.Load() {
			r.process(o, st)
		}
		r.q.Done(o)
	}
}

// process is controller-runtime's reconcileHandler around one reconcile:
// an error is AddRateLimited, RequeueAfter is Forget+AddAfter, success is
// Forget (and, saturated, an immediate Add).
func (r *run) process(o int, st *workerStats) {
	c := o / r.sc.Objects
	start := time.Now()
	cl, err := r.s.Get(r.ctx, c)
	getDone := time.Now()
	var requeue time.Duration
	if err != nil {
		requeue, err = r.s.Result(err)
	} else {
		if rq, ok := r.s.(Requester); ok {
			err = rq.Do(r.ctx, c, cl)
		} else {
			err = cl.Do(r.ctx)
		}
		r.s.Report(c, err)
		if err != nil { // a rejected request requeues like a rejected Get
			requeue, err = r.s.Result(err)
		}
	}
	end := time.Now()
	if r.ended.Load() || r.ctx.Err() != nil {
		return // the run is over; do not count calls it cut short
	}
	st.durations = append(st.durations, r.unscale(end.Sub(start)))
	st.blocked += r.unscale(getDone.Sub(start))
	if cl != nil && (err != nil || requeue > 0) {
		st.blocked += r.unscale(end.Sub(getDone))
		st.hung += r.unscale(end.Sub(getDone))
	}
	switch {
	case err != nil:
		st.errors++
		r.q.AddRateLimited(o)
	case requeue > 0:
		st.requeues++
		r.q.Forget(o)
		r.q.AddAfter(o, requeue)
	default:
		r.q.Forget(o)
		r.succeeded(o, st)
		if r.sc.Saturate {
			r.q.Add(o)
		}
	}
}

func (r *run) succeeded(o int, st *workerStats) {
	now := r.w.Now()
	if r.w.faults[o/r.sc.Objects] == Healthy {
		st.healthyOK++
		if now >= r.sc.Duration/2 {
			st.steadyOK++
		}
	}
	if r.measured(o) && r.firstOK[o].CompareAndSwap(0, int64(now)+1) && r.pending.Add(-1) == 0 {
		r.once.Do(func() { close(r.allOK) })
	}
}

func (r *run) unscale(d time.Duration) time.Duration {
	return time.Duration(float64(d) / r.cfg.Scale)
}

// memSample is the memory and goroutines in use at one moment.
type memSample struct {
	bytes      int64 // heap objects plus goroutine stacks
	goroutines int
}

func sample() memSample {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSample{bytes: int64(m.HeapAlloc + m.StackInuse), goroutines: runtime.NumGoroutine()}
}

func (m memSample) minus(o memSample) memSample {
	return memSample{bytes: m.bytes - o.bytes, goroutines: m.goroutines - o.goroutines}
}
