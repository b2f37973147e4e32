package sim

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/clusterpool/clusterpool/bench"
)

// ClusterCacheTracker (Cluster API v1.8) timing, as its source
// (sigs.k8s.io/cluster-api v1.8.4, controllers/remote) hard-codes it.
const (
	// cctLockedRequeue: callers answer ErrClusterLocked with RequeueAfter 1 min.
	cctLockedRequeue = time.Minute
	// cctHealthInterval, cctHealthTimeout, cctHealthThreshold: one goroutine
	// per cluster probes GET / every 10 s with a 5 s timeout and drops the
	// accessor after 10 consecutive failures.
	cctHealthInterval  = 10 * time.Second
	cctHealthTimeout   = 5 * time.Second
	cctHealthThreshold = 10
)

func init() { register("cct", newCCT) }

// cct models the ClusterCacheTracker: bench.CCT's keyed TryLock (the lock
// winner dials inside its own worker, blocked up to DialTimeout, and no
// failure is remembered) plus its per-cluster health-check goroutine.
type cct struct {
	env     Env
	tracker *bench.CCT[int, *Client]
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func newCCT(env Env) (Strategy, error) {
	s := &cct{env: env}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.tracker = bench.NewCCT(s.dial)
	return s, nil
}

// dial creates the client in the caller's worker (the World bounds a hang
// by DialTimeout, CCT's client timeout) and, like
// createClient/healthCheckCluster, starts the cluster's health checker.
func (s *cct) dial(ctx context.Context, c int) (*Client, error) {
	cl, err := s.env.World.Dial(ctx, c)
	if err != nil {
		return nil, err
	}
	s.wg.Add(1)
	go s.healthCheck(c)
	return cl, nil
}

func (s *cct) healthCheck(c int) {
	defer s.wg.Done()
	w := s.env.World
	tick := time.NewTicker(w.Scaled(cctHealthInterval))
	defer tick.Stop()
	failures := 0
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		err := w.Probe(s.ctx, c, cctHealthTimeout)
		if err == nil {
			failures = 0
			continue
		}
		if failures++; failures >= cctHealthThreshold {
			s.tracker.Delete(c) // the next lock winner dials again
			return
		}
	}
}

func (s *cct) Get(ctx context.Context, c int) (*Client, error) { return s.tracker.Get(ctx, c) }

// Result: ErrClusterLocked is a one-minute requeue (Machine, MachineSet, KCP,
// MHC, ... all do this); any other error goes to the rate limiter.
func (s *cct) Result(err error) (time.Duration, error) {
	if errors.Is(err, bench.ErrClusterLocked) {
		return s.env.World.Scaled(cctLockedRequeue), nil
	}
	return 0, err
}

// Report does nothing: CCT learns only from its health checks.
func (s *cct) Report(int, error) {}

func (s *cct) Clients() int { return s.tracker.Len() }

func (s *cct) Close() {
	s.cancel()
	s.wg.Wait()
}
