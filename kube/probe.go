package kube

import (
	"context"
	"errors"
	"fmt"
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
	DefaultReadyzInterval   = 60 * time.Second
	DefaultReviveInterval   = time.Second
	DefaultReviveWindow     = 2 * time.Minute
)

// ProberOptions configures a Prober. Zero fields are the defaults.
type ProberOptions struct {
	// Interval between two probes of a suspect cluster, and the unit of the
	// evidence's freshness (see Prober). Zero means 10s.
	Interval time.Duration
	// ReadyzInterval is the longest time between two GET /readyz of a
	// connected cluster. Zero means 60s, or Interval if that is longer;
	// Interval sends one every Interval, as ClusterCache does.
	ReadyzInterval time.Duration
	// Timeout of one probe. Zero means 5s.
	Timeout time.Duration
	// Concurrency bounds the probes in flight across all clusters. Zero
	// means 10.
	Concurrency int
	// Logger receives probe failures; the zero value discards them.
	Logger logr.Logger
	// ReviveInterval paces the endpoint checks of a cluster whose breaker
	// is open (see Prober): the first ReviveInterval (R) after it opens,
	// the next 2R after a failed one, then every 3R, each ±20 %; each check
	// is bounded by 2R or Timeout, whichever is shorter. Zero means 1s, or
	// Interval if that is shorter; it must not exceed Interval.
	ReviveInterval time.Duration
	// ReviveWindow is how long after a cluster was last connected its open
	// breaker is revived by endpoint checks. A cluster that has not been
	// connected since the Prober started, or has been down for longer,
	// has no evidence of being alive a moment ago: it waits for the pool's
	// half-open probes, at most the breaker's MaxOpenTimeout apart, as a
	// cluster of ClusterCache waits for its connect retries. Zero means 2m.
	ReviveWindow time.Duration
	// DisableRevive turns the endpoint checks off: a cluster whose breaker
	// is open waits for the pool's half-open probe at the end of the open
	// period.
	DisableRevive bool
	// Probed, when set, is told the outcome of each GET /readyz once the
	// Prober has acted on it (Report, or Redial for an Unauthorized
	// answer): nil for a success. It runs on the probing worker, under no
	// lock: while it runs, that worker probes nothing. A panic in it is
	// recovered and logged.
	Probed func(key client.ObjectKey, err error)
}

// Prober checks the pool's connected clusters and feeds the results into
// their breakers (pool.Report): the breaker's ConsecutiveFailures (N,
// default 3) failed probes evict the client. An Unauthorized answer (one
// that a retry with newer credentials, for a cluster whose credentials
// rotate in place, did not cure; see SecretWatcher) replaces the client at
// once by a new dial (pool Redial: its breaker's history kept, no Removed
// event), which reads the credentials afresh. Each cluster's next tick is
// in its record and in the Reconciler's workqueue; Concurrency workers act
// on them (see Reconciler).
//
// The wire stands in for most probes (docs/health.md): a Dialer's cluster
// records when its connections last read bytes, the acks of the HTTP/2
// PINGs an idle one gets every 20s included. GET /readyz goes when that
// evidence is 5/2 Interval (I) old on a wire that pings (an HTTP/1 wire,
// as the last GET /readyz's answer tells, has no PINGs: its silence is no
// evidence, and a quiet one gets GET /readyz every ReadyzInterval), every
// ReadyzInterval (the first after a dial sooner by a random phase of up to
// half of it), every I while the cluster is suspect (its last probe failed
// or it lost a connection), and at once when a connection ends by a read
// error kube did not cause. Other ticks send and report nothing. Other
// Clusters are probed every I. decide (decideTick, decideProbed) makes
// each of these choices.
//
// Revive: while the pool's latest event of an admitted cluster says its
// breaker is open, and for ReviveWindow after the cluster was last
// connected, the Prober checks the cluster's endpoint as a dial's
// first step does (its config read from the Dialer's ConfigSource, TCP,
// TLS, GET /readyz with its credentials, on a connection of its own,
// closed after), at the pace ReviveInterval sets. A 200 calls Pool.Probe:
// the open period ends and the half-open probe dials at once, so a cluster
// that comes back does not wait out a period that grew while it was down.
// Any other outcome, 401 and 403 included (a dial reads the same
// credentials, and its /readyz would get the same answer), waits for the
// next check. Each check runs on a goroutine of its own, not on a worker;
// at most one per cluster, and Concurrency/2 (at least one) across all
// clusters, are in flight; none once the cluster is removed, connected or
// its probe is out. Only a pool NewPool built has
// the Dialer to check with: with another, no check is made.
//
// Worst case, with T = Timeout: a cluster that stops answering at t0 is
// evicted by t0 + 3/2 I + N(I + T), a killed one by t0 + (N-1)I plus N
// failed connects; ClusterCache's best cases are 4(I + T) + T and 4I.
//
// Prober is a manager.Runnable: add it to a manager, or call Start.
type Prober struct {
	pool ClusterPool
	opts ProberOptions
	// check is the endpoint check of a cluster whose breaker is open (the
	// pool's Dialer's); nil: none (DisableRevive, or no Dialer).
	check func(ctx context.Context, key client.ObjectKey) error
}

// NewProber returns a Prober of p, or an error matching ErrInvalidOptions,
// naming the field, when p is nil, a field of opts is negative,
// ReadyzInterval is set below Interval, or ReviveInterval above it.
func NewProber(p ClusterPool, opts ProberOptions) (*Prober, error) {
	if isNilPool(p) {
		return nil, invalidOptions(errors.New("NewProber: pool must not be nil"))
	}
	if err := opt.FirstNegative("ProberOptions.", opt.F("Interval", opts.Interval),
		opt.F("Timeout", opts.Timeout), opt.F("Concurrency", opts.Concurrency),
		opt.F("ReadyzInterval", opts.ReadyzInterval), opt.F("ReviveInterval", opts.ReviveInterval),
		opt.F("ReviveWindow", opts.ReviveWindow)); err != nil {
		return nil, invalidOptions(err)
	}
	opt.Default(&opts.Interval, DefaultProbeInterval)
	opt.Default(&opts.Timeout, DefaultProbeTimeout)
	opt.Default(&opts.Concurrency, DefaultProbeConcurrency)
	if opts.ReadyzInterval != 0 && opts.ReadyzInterval < opts.Interval {
		return nil, invalidOptions(fmt.Errorf("ProberOptions.ReadyzInterval=%v must not be below Interval=%v",
			opts.ReadyzInterval, opts.Interval))
	}
	opt.Default(&opts.ReadyzInterval, max(DefaultReadyzInterval, opts.Interval))
	if opts.ReviveInterval > opts.Interval {
		return nil, invalidOptions(fmt.Errorf("ProberOptions.ReviveInterval=%v must not exceed Interval=%v",
			opts.ReviveInterval, opts.Interval))
	}
	opt.Default(&opts.ReviveInterval, min(DefaultReviveInterval, opts.Interval))
	opt.Default(&opts.ReviveWindow, DefaultReviveWindow)
	pr := &Prober{pool: p, opts: opts}
	if d := dialerOf(p); d != nil && !opts.DisableRevive {
		pr.check = d.check
	}
	return pr, nil
}

// Start probes until ctx is done or the pool closes, then waits for
// probes in flight. It is a Reconciler with no SecretWatcher.
func (pr *Prober) Start(ctx context.Context) error {
	return (&Reconciler{Prober: pr}).run(ctx, pr.pool, &records{})
}

// probe checks key's current client unless its wire answered (see
// Prober), reports the outcome to the pool, and schedules the next tick
// while the cluster stays connected (after): decide says which, from the
// cluster's schedule.
func (pr *Prober) probe(ctx context.Context, key client.ObjectKey, after func(client.ObjectKey, time.Duration)) {
	c, ok := pr.pool.Peek(key)
	if !ok || ctx.Err() != nil {
		return // disconnected: its next Connected event schedules it again
	}
	lv := livenessOf(c)
	if act, wait := decide(view{in: inTick, connected: true, probe: pr.schedule(lv)}); act != actProbe {
		after(key, wait) // nothing to report: the failure count stays
		return
	}
	if lv != nil {
		lv.readyz.Store(int64(lv.since()))
		lv.suspect.Store(false) // unless this probe fails, or a connection is lost meanwhile
	}
	pctx, cancel := context.WithTimeout(ctx, pr.opts.Timeout)
	http1, err := c.probeReadyz(pctx)
	cancel()
	if ctx.Err() != nil {
		return // shutting down: not the cluster's fault
	}
	if lv != nil && err == nil {
		lv.http1.Store(http1)
	}
	if err != nil {
		if lv != nil {
			lv.retry.Store(lv.readyz.Load() + int64(pr.opts.Interval))
			lv.suspect.Store(true)
		}
		pr.opts.Logger.V(1).Info("probe failed", "cluster", key.String(), "error", err.Error())
	}
	act, next := decide(view{in: inProbed, connected: true, probe: pr.schedule(lv), err: err,
		unauthorized: apierrors.IsUnauthorized(err)})
	if act == actRedial {
		pr.pool.Redial(key) // a new dial reads the credentials afresh; its Connected event schedules it
		pr.probed(key, err)
		return
	}
	pr.pool.Report(key, err)
	pr.probed(key, err)
	if _, ok := pr.pool.Peek(key); ok {
		after(key, next)
	}
}

// probed hands a probe's outcome to ProberOptions.Probed, if set.
func (pr *Prober) probed(key client.ObjectKey, err error) {
	if pr.opts.Probed == nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			pr.opts.Logger.Error(nil, "ProberOptions.Probed panicked", "cluster", key.String(), "panic", r)
		}
	}()
	pr.opts.Probed(key, err)
}

// schedule is lv's probe schedule now, under pr's options (nil: a cluster
// whose wire is no evidence).
func (pr *Prober) schedule(lv *liveness) schedule {
	s := schedule{interval: pr.opts.Interval, readyzEvery: pr.opts.ReadyzInterval}
	if lv == nil {
		return s
	}
	s.wired, s.now, s.phase = true, lv.since(), lv.phase
	s.read, s.readyz = time.Duration(lv.read.Load()), time.Duration(lv.readyz.Load())
	s.retry, s.suspect, s.http1 = time.Duration(lv.retry.Load()), lv.suspect.Load(), lv.http1.Load()
	return s
}

// isNilPool reports whether p is nil, or a nil *pool.Pool in an interface.
func isNilPool(p ClusterPool) bool {
	pp, ok := p.(*pool.Pool[client.ObjectKey, *Cluster])
	return p == nil || (ok && pp == nil)
}
