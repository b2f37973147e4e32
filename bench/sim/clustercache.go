package sim

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// ClusterCache (Cluster API v1.9+) timing, as its source
// (sigs.k8s.io/cluster-api v1.14.2, controllers/clustercache) hard-codes it.
const (
	ccWorkers          = 100              // the ClusterCache reconciler's workers
	ccRetryInterval    = 30 * time.Second // fixed connection retry, no growth, no jitter
	ccProbeInterval    = 10 * time.Second
	ccProbeTimeout     = 5 * time.Second
	ccProbeThreshold   = 5
	ccNotConnectedWait = time.Minute // callers' RequeueAfter on ErrClusterNotConnected
)

// ErrClusterNotConnected is ClusterCache's answer to every getter while the
// cluster is not connected.
var ErrClusterNotConnected = errors.New("connection to the workload cluster is down")

func init() { register("clustercache", newClusterCache) }

// clusterCache models ClusterCache: only its own reconciler (100 workers)
// connects, in the background; getters never wait; a failed connect is
// retried after a fixed 30 s; the reconciler probes connected clusters every
// 10 s (5 s timeout) and disconnects after 5 failures in a row; its cluster
// source enqueues a cluster's objects on connect and on disconnect.
type clusterCache struct {
	env Env
	q   workqueue.TypedRateLimitingInterface[int]
	wg  sync.WaitGroup
	ctx context.Context
	end context.CancelFunc

	mu  sync.RWMutex
	acc []ccAccessor
}

type ccAccessor struct {
	client     *Client
	failures   int
	lastFailed time.Time // of the last connect attempt; zero if none failed
}

func newClusterCache(env Env) (Strategy, error) {
	w := env.World
	s := &clusterCache{env: env, acc: make([]ccAccessor, len(w.faults)),
		q: w.newQueue()}
	s.ctx, s.end = context.WithCancel(context.Background())
	for c := range w.faults {
		s.q.Add(c) // every Cluster object is reconciled once at start
	}
	for range ccWorkers {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			for {
				c, shutdown := s.q.Get()
				if shutdown || c < 0 { // c < 0: stopWorkers
					return
				}
				if d := s.reconcile(c); d > 0 {
					s.q.AddAfter(c, d)
				}
				s.q.Done(c)
			}
		}()
	}
	return s, nil
}

// reconcile is one pass of the ClusterCache reconciler over cluster c; it
// returns the requeue delay (real time).
func (s *clusterCache) reconcile(c int) time.Duration {
	w := s.env.World
	s.mu.RLock()
	a := s.acc[c]
	s.mu.RUnlock()
	if a.client != nil {
		err := w.Probe(s.ctx, c, ccProbeTimeout)
		s.mu.Lock()
		if err == nil {
			s.acc[c].failures = 0
		} else {
			s.acc[c].failures++
		}
		disconnect := s.acc[c].failures >= ccProbeThreshold
		if disconnect {
			s.acc[c] = ccAccessor{}
		}
		s.mu.Unlock()
		if !disconnect {
			return w.Scaled(ccProbeInterval)
		}
		s.env.Enqueue(c)
		return w.Scaled(time.Millisecond) // reconnect at once
	}
	if !a.lastFailed.IsZero() {
		if wait := w.Scaled(ccRetryInterval) - time.Since(a.lastFailed); wait > 0 {
			return wait
		}
	}
	cl, err := w.Dial(s.ctx, c) // a hang ends at DialTimeout
	s.mu.Lock()
	if err != nil {
		s.acc[c].lastFailed = time.Now()
	} else {
		s.acc[c] = ccAccessor{client: cl}
	}
	s.mu.Unlock()
	if err != nil {
		return w.Scaled(ccRetryInterval)
	}
	s.env.Enqueue(c)
	return w.Scaled(ccProbeInterval)
}

// Get fails fast unless connected (GetClient and friends).
func (s *clusterCache) Get(_ context.Context, c int) (*Client, error) {
	s.mu.RLock()
	cl := s.acc[c].client
	s.mu.RUnlock()
	if cl == nil {
		return nil, ErrClusterNotConnected
	}
	return cl, nil
}

// Result: callers answer ErrClusterNotConnected with RequeueAfter 1 min
// (and rely on the cluster source for the connect).
func (s *clusterCache) Result(err error) (time.Duration, error) {
	if errors.Is(err, ErrClusterNotConnected) {
		return s.env.World.Scaled(ccNotConnectedWait), nil
	}
	return 0, err
}

// Report does nothing: ClusterCache learns only from its own probes.
func (s *clusterCache) Report(int, error) {}

func (s *clusterCache) Clients() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 0
	for _, a := range s.acc {
		if a.client != nil {
			n++
		}
	}
	return n
}

func (s *clusterCache) Close() {
	s.end()
	stopWorkers(s.q, ccWorkers, &s.wg)
}
