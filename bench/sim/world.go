package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/clusterpool/clusterpool/internal/reqguard"
)

// Timing of the simulated fleet, unscaled. Every strategy sees the same
// clusters with the same timing; only the way clients are obtained differs.
const (
	// DialLatency is how long creating a client for a reachable cluster
	// takes (200 ms, the scenarios' assumption).
	DialLatency = 200 * time.Millisecond
	// DialTimeout bounds a dial of an unreachable cluster: CCT's
	// defaultClientTimeout of 10 s (controllers/remote), which is also
	// the pool's default DialTimeout and what ClusterCache's connect uses.
	DialTimeout = 10 * time.Second
	// RESTTimeout bounds a request on an established client to a cluster
	// that went away (client-go's 10 s client timeout in CCT).
	RESTTimeout = 10 * time.Second
	// Work is the fixed amount of work a reconcile does with the client.
	Work = 100 * time.Millisecond
	// ProbeLatency is a health probe's round trip to a reachable cluster.
	ProbeLatency = 10 * time.Millisecond
)

// ErrUnreachable is what every call to an unreachable cluster ends with,
// wrapping the context error that bounded it.
var ErrUnreachable = errors.New("sim: cluster unreachable")

// Fault is how a simulated cluster behaves.
type Fault uint8

const (
	// Healthy clusters are always reachable.
	Healthy Fault = iota
	// Dead clusters hang every connection until its timeout, until their
	// recovery time (if any).
	Dead
	// Flapping clusters alternate FlapPeriod up and FlapPeriod down, each
	// with its own phase.
	Flapping
)

// World is the simulated fleet: which clusters are reachable when, and the
// calls strategies make to them. Durations given to and reported by a World
// are unscaled; it sleeps for them multiplied by Scale.
type World struct {
	scale      float64
	start      time.Time
	faults     []Fault
	phase      []time.Duration // of Flapping clusters
	recoverAt  []time.Duration // of Dead clusters; 0 means never
	flapPeriod time.Duration
	// legacyQueue: controllers run on client-go's workqueue (see newQueue).
	legacyQueue bool
	// until is the run's length: dials from then on are not counted (in
	// virtual time a dial due at exactly the end would otherwise count or
	// not depending on which of two simultaneous timers ran first).
	until time.Duration

	dials  atomic.Int64
	probes atomic.Int64
	// firstDial and firstUp are each cluster's first dial and first
	// successful dial, unscaled ns since start plus one; 0: none yet.
	firstDial, firstUp []atomic.Int64
	downDials          []atomic.Int64 // per cluster, dials while it was unreachable
}

// RecoverSpread: a Dead cluster of a scenario with RecoverAt becomes
// reachable at a time drawn uniformly from [RecoverAt, RecoverAt+RecoverSpread),
// so that no strategy's fixed retry period lines up with the recovery.
const RecoverSpread = time.Minute

// newWorld lays out n clusters: the first dead·n of a seeded permutation
// are Dead, the next flap·n Flapping, the rest Healthy.
func newWorld(n int, dead, flap float64, recoverAt, flapPeriod time.Duration, scale float64, seed uint64) *World {
	r := rand.New(rand.NewPCG(seed, 1))
	w := &World{scale: scale, faults: make([]Fault, n), phase: make([]time.Duration, n),
		recoverAt: make([]time.Duration, n), flapPeriod: flapPeriod,
		firstDial: make([]atomic.Int64, n), firstUp: make([]atomic.Int64, n), downDials: make([]atomic.Int64, n)}
	nd, nf := int(dead*float64(n)+0.5), int(flap*float64(n)+0.5)
	for i, c := range r.Perm(n) {
		switch {
		case i < nd:
			w.faults[c] = Dead
			if recoverAt > 0 {
				w.recoverAt[c] = recoverAt + time.Duration(r.Int64N(int64(RecoverSpread)))
			}
		case i < nd+nf:
			w.faults[c] = Flapping
			// Up first for a random part of the period, so flapping
			// clusters connect and then fail out of step with each other.
			w.phase[c] = time.Duration(r.Int64N(int64(flapPeriod)))
		}
	}
	return w
}

// Scaled converts an unscaled duration to the real one.
func (w *World) Scaled(d time.Duration) time.Duration { return time.Duration(float64(d) * w.scale) }

// Now is the unscaled time since the world started.
func (w *World) Now() time.Duration { return time.Duration(float64(time.Since(w.start)) / w.scale) }

// RecoveredAt returns when Dead cluster c becomes reachable; 0 means never.
func (w *World) RecoveredAt(c int) time.Duration { return w.recoverAt[c] }

// Fault returns cluster c's fault.
func (w *World) Fault(c int) Fault { return w.faults[c] }

// Reachable reports whether cluster c answers right now.
func (w *World) Reachable(c int) bool {
	switch w.faults[c] {
	case Dead:
		return w.recoverAt[c] > 0 && w.Now() >= w.recoverAt[c]
	case Flapping:
		// up during [0, period-phase), then down for a period, and so on
		t := w.Now() + w.phase[c]
		return (t/w.flapPeriod)%2 == 0
	}
	return true
}

// call is one request to cluster c: it takes d if the cluster is
// reachable, and otherwise hangs until limit or ctx ends.
func (w *World) call(ctx context.Context, c int, d, limit time.Duration) error {
	if w.Reachable(c) {
		return w.sleep(ctx, d)
	}
	if err := w.sleep(ctx, limit); err != nil {
		return fmt.Errorf("cluster %d: %w: %w", c, ErrUnreachable, err)
	}
	return fmt.Errorf("cluster %d: %w: %w", c, ErrUnreachable, context.DeadlineExceeded)
}

func (w *World) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(w.Scaled(d))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dial creates a client for cluster c, hanging up to DialTimeout if it is
// unreachable.
func (w *World) Dial(ctx context.Context, c int) (*Client, error) {
	if now := w.Now(); w.until == 0 || now < w.until {
		w.dials.Add(1)
		w.firstDial[c].CompareAndSwap(0, int64(now)+1)
		if !w.Reachable(c) {
			w.downDials[c].Add(1)
		}
	}
	if err := w.call(ctx, c, DialLatency, DialTimeout); err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	w.firstUp[c].CompareAndSwap(0, int64(w.Now())+1)
	return &Client{w: w, cluster: c}, nil
}

// Probe is a health check of cluster c (GET /), hanging up to timeout.
func (w *World) Probe(ctx context.Context, c int, timeout time.Duration) error {
	w.probes.Add(1)
	return w.call(ctx, c, ProbeLatency, timeout)
}

// Client is a connected cluster's client.
type Client struct {
	w       *World
	cluster int
	guard   *reqguard.Guard // clusterpool's request guard; nil for the others
}

// Do is a reconcile's work with the client: Work if the cluster is
// reachable, a hang of RESTTimeout otherwise.
func (c *Client) Do(ctx context.Context) error {
	return c.w.call(ctx, c.cluster, Work, RESTTimeout)
}
