package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Sharder is one replica's member of a shard group: a manager.Runnable
// (Start) that announces the replica with its Lease and decides, at every
// instant, which clusters it owns (Owns). It runs on every replica, leader
// or not. Its methods are safe for concurrent use; Start runs once.
type Sharder struct {
	opts    Options
	leases  *leases
	metrics *metrics
	hub

	mu  sync.RWMutex
	own *ownership

	warming sync.WaitGroup // Warm goroutines
}

// New returns the Sharder of one replica. c reads and writes the group's
// Leases; it must read from the apiserver, not from a cache (build it with
// client.New, not mgr.GetClient), and may be shared. It returns an error
// matching ErrInvalidOptions, naming the field, for invalid options.
func New(c client.Client, opts Options) (*Sharder, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: the client is nil", ErrInvalidOptions)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.MeterProvider)
	if err != nil {
		return nil, err
	}
	return &Sharder{
		opts:    opts,
		metrics: m,
		leases: &leases{c: c, key: client.ObjectKey{Namespace: opts.Namespace, Name: opts.leaseName()},
			group: opts.Group, identity: opts.Identity, seconds: int32(opts.LeaseDuration / time.Second)},
		own: newOwnership(opts.Identity, opts.RenewDeadline, opts.LeaseDuration),
	}, nil
}

// Identity is this replica's name in the group.
func (s *Sharder) Identity() string { return s.opts.Identity }

// Owns reports whether this replica owns key now. It is false before the
// first renewal, during the hand-over delay, from the fence instant on
// when renewals fail, and after Start returns.
func (s *Sharder) Owns(key client.ObjectKey) bool {
	now := s.opts.Clock.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.own.owns(key, now)
}

// Members returns the live members of the group as of the latest renewal,
// sorted; this replica is one of them once it has renewed.
func (s *Sharder) Members() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.own.members...)
}

// Subscribe returns a channel of every ownership change from now on, in
// order, closed when ctx is done; subscribe before Start to see every
// change. Publishing never blocks the Sharder: a subscriber that does not
// read lets its queue grow, so read until ctx ends.
func (s *Sharder) Subscribe(ctx context.Context) <-chan Event { return s.hub.subscribe(ctx) }

// NeedLeaderElection returns false: every replica runs its Sharder.
func (s *Sharder) NeedLeaderElection() bool { return false }

// Start renews the Lease and keeps the ownership current until ctx is
// done. Then it stops owning everything (Lost events, Pool.Remove), deletes
// the Lease so that the others take over at once, and returns. It returns
// an error only if the metrics cannot be registered or the Lease cannot be
// deleted; failed renewals are logged and retried.
func (s *Sharder) Start(ctx context.Context) error {
	unobserve, err := s.metrics.observe(s.counts)
	if err != nil {
		return err
	}
	defer unobserve()
	defer s.warming.Wait()

	results := make(chan roundResult, 1)
	var worker sync.WaitGroup
	inFlight := false
	nextRound := s.opts.Clock.Now()
	timer := s.opts.Clock.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := s.opts.Clock.Now()
		if !inFlight && !now.Before(nextRound) {
			inFlight = true
			nextRound = now.Add(s.opts.RenewInterval)
			worker.Go(func() { results <- s.renewal(ctx) })
		}
		timer.Stop()
		timer.Reset(s.wakeIn(now, nextRound, inFlight))
		select {
		case <-ctx.Done():
			worker.Wait()
			return s.shutdown()
		case r := <-results:
			inFlight = false
			if r.err != nil {
				s.opts.Logger.V(1).Info("shard: renewal failed", "group", s.opts.Group, "replica", s.opts.Identity, "error", r.err.Error())
				continue
			}
			s.apply(func(o *ownership) []Event { return o.completed(r.round, s.opts.Clock.Now()) })
		case <-timer.C():
			s.apply(func(o *ownership) []Event { return o.advance(s.opts.Clock.Now()) })
		}
	}
}

// wakeIn is how long the loop may sleep: until the next renewal is due (if
// none is in flight) or the ownership has a deadline, whichever is first.
func (s *Sharder) wakeIn(now, nextRound time.Time, inFlight bool) time.Duration {
	s.mu.RLock()
	at := s.own.next()
	s.mu.RUnlock()
	if !inFlight && (at.IsZero() || nextRound.Before(at)) {
		at = nextRound
	}
	if at.IsZero() {
		return time.Hour
	}
	return max(at.Sub(now), 0)
}

// roundResult is a renewal's outcome.
type roundResult struct {
	round round
	err   error
}

// renewal lists the cluster keys, renews the Lease and reads the group,
// all within RenewDeadline.
func (s *Sharder) renewal(ctx context.Context) roundResult {
	ctx, cancel := context.WithTimeout(ctx, s.opts.RenewDeadline)
	defer cancel()
	var r round
	keys, err := s.opts.Clusters(ctx)
	if err != nil {
		s.opts.Logger.V(1).Info("shard: listing clusters failed", "group", s.opts.Group, "error", err.Error())
	} else {
		r.keys, r.keysOK = keys, true
	}
	r.start = s.opts.Clock.Now()
	if err := s.leases.renew(ctx, r.start); err != nil {
		return roundResult{err: err}
	}
	r.listSent = s.opts.Clock.Now()
	if r.leases, err = s.leases.list(ctx); err != nil {
		return roundResult{err: err}
	}
	r.end = s.opts.Clock.Now()
	return roundResult{round: r}
}

// apply changes the ownership with f under the lock (f reads the clock
// there, so that an event's Time is when Owns changed), then acts on the
// changes: lost clusters are removed from the pool at once, gained ones are
// warmed in the background, and subscribers and metrics are told.
func (s *Sharder) apply(f func(o *ownership) []Event) {
	s.mu.Lock()
	evs := f(s.own)
	s.mu.Unlock()
	if len(evs) == 0 {
		return
	}
	var gained []client.ObjectKey
	for _, ev := range evs {
		switch {
		case s.opts.Pool == nil:
		case ev.Type == Lost:
			s.opts.Pool.Remove(ev.Key)
		default:
			gained = append(gained, ev.Key)
		}
	}
	if len(gained) > 0 {
		s.warming.Go(func() {
			for _, k := range gained {
				s.opts.Pool.Warm(k)
			}
		})
	}
	s.metrics.count(evs)
	s.publish(evs)
}

// shutdown stops owning, then deletes the Lease.
func (s *Sharder) shutdown() error {
	s.apply(func(o *ownership) []Event { return o.fence(s.opts.Clock.Now()) })
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.RenewDeadline)
	defer cancel()
	if err := s.leases.release(ctx); err != nil {
		// The others take over when the Lease expires.
		return errors.Join(err, fmt.Errorf("shard: replica %q stopped owning; its clusters move after LeaseDuration", s.opts.Identity))
	}
	return nil
}

// counts is the gauges' reading.
func (s *Sharder) counts() (owned, members int) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.own.owned), len(s.own.members)
}
