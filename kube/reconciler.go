package kube

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/clusterpool/clusterpool/pool"
)

// Reconciler runs a SecretWatcher and a Prober of one pool as one
// reconciler per cluster: one record per cluster under one lock (its
// changed Secret not acted on, the one kept while a dial runs, its next
// probe tick), one controller-runtime workqueue keyed by cluster, and one
// subscription to the pool's events. Its inputs only write the record and
// queue the cluster: the Secret informer's handler (a changed kubeconfig),
// the pool's events (the end of a dial a Secret was kept for; a Connected
// cluster's first tick; an open breaker's first endpoint check, see
// Prober), a lost connection (a tick at once) and the ticks' and checks'
// own AddAfter. The workers take a cluster from the queue, one
// worker per cluster at a time (the queue's guarantee), take what its
// record holds, and decide and act outside the lock: the changed Secret
// first, then the retry, the tick and the endpoint check if due (see
// decide). Events of one cluster coalesce in the queue; its latest Secret
// is never lost.
//
// It runs ProberOptions.Concurrency workers (1 without a Prober): a
// rotation (bounded by DefaultRequestTimeout) holds one worker as a probe
// does. SecretWatcher.Start and Prober.Start run a Reconciler of one of
// them.
//
// Reconciler is a manager.Runnable: add it to a manager, or call Start;
// add neither Secrets nor Prober on their own then.
type Reconciler struct {
	// Secrets is the kubeconfig Secret watcher. Required.
	Secrets *SecretWatcher
	// Prober is the pool's Prober; nil runs none.
	Prober *Prober
	// Admission, when set, is the Admission of the pool's clusters: the
	// reconciler carries out its retries (see Admission.SetRetry), and
	// SetupWithManager sets it up.
	Admission *Admission
	// OnSubscribed, when set, runs once the subscription is made, before
	// the first event: where a caller reads the state of the clusters that
	// changed before it (their events are gone).
	OnSubscribed func()
	// OnEvent, when set, is handed each event once the reconciler has
	// recorded it. It runs on the subscription's goroutine, under no lock
	// of kube's: it must not block.
	OnEvent func(pool.Event[client.ObjectKey])
}

// errNoSecrets is Reconciler.Start's error without Secrets.
var errNoSecrets = invalidOptions(errors.New("Reconciler.Secrets must not be nil"))

// Start runs the watcher and the Prober until ctx is done, then waits for
// the work in flight. It returns an error matching ErrInvalidOptions
// when Secrets is nil, or the watcher's error.
func (r *Reconciler) Start(ctx context.Context) error {
	if r.Secrets == nil {
		return errNoSecrets
	}
	return r.run(ctx, r.Secrets.Pool, &r.Secrets.recs)
}

// SetupWithManager wires the reconciler into mgr in one call: Admission's
// controller (Admission.SetupWithManager with default controller options
// and no predicate), if set, with its Admitted as the watcher's Admit
// unless Secrets.Admit is set, and the reconciler as a runnable. To pass
// options or predicates, call Admission.SetupWithManager and mgr.Add
// instead. It returns an error matching ErrInvalidOptions when Secrets is
// nil, or Admission's error.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Secrets == nil {
		return errNoSecrets
	}
	if r.Admission != nil {
		if r.Secrets.Admit == nil {
			r.Secrets.Admit = r.Admission.Admitted
		}
		if err := r.Admission.SetupWithManager(mgr, controller.Options{}); err != nil {
			return err
		}
	}
	return mgr.Add(r)
}

// loop is one run of a Reconciler: its queue and its records.
type loop struct {
	r    *Reconciler
	p    ClusterPool
	q    workqueue.TypedRateLimitingInterface[client.ObjectKey]
	recs *records
	rev  *reviver // the Prober's endpoint checks; nil: none
}

// run runs r on p's events with recs until ctx is done (or, without
// Secrets, until the pool closes), then waits for the workers.
func (r *Reconciler) run(ctx context.Context, p ClusterPool, recs *records) error {
	l := &loop{r: r, p: p, recs: recs, rev: newReviver(r.Prober), q: workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[client.ObjectKey](),
		workqueue.TypedRateLimitingQueueConfig[client.ObjectKey]{})}
	defer l.q.ShutDown()
	remove := func() error { return nil }
	if r.Secrets != nil {
		rm, err := r.Secrets.register(ctx, l.q.Add)
		if err != nil {
			return err
		}
		remove = rm
	}
	n := 1
	if r.Prober != nil {
		n = r.Prober.opts.Concurrency
	}
	var workers sync.WaitGroup
	for range n {
		workers.Go(func() { l.work(ctx) })
	}
	follow(ctx, p, l.subscribed, l.event, l.poolClosed, r.Secrets != nil)
	err := remove()
	l.q.ShutDown()
	workers.Wait()
	if l.rev != nil {
		l.rev.wg.Wait() // the endpoint checks in flight
	}
	return err
}

// subscribed schedules the first tick of the clusters connected before
// the subscription (their Connected events are gone), then runs
// OnSubscribed.
func (l *loop) subscribed() {
	if l.r.Prober != nil {
		for _, key := range l.p.Keys() {
			l.track(key)
		}
	}
	if l.r.OnSubscribed != nil {
		l.r.OnSubscribed()
	}
}

// poolClosed stops the endpoint checks: the pool connects nothing more.
func (l *loop) poolClosed() {
	if l.rev != nil {
		l.rev.closed.Store(true)
	}
}

// event records ev and queues its cluster if it has something to act on.
func (l *loop) event(ev pool.Event[client.ObjectKey]) {
	l.reviveEvent(ev)
	if l.r.Secrets != nil && l.r.Secrets.noted(ev) {
		l.q.Add(ev.Key)
	}
	if l.r.Prober != nil && ev.Type == pool.Connected {
		l.track(ev.Key)
	}
	if a := l.r.Admission; a != nil && ev.Type == pool.DialFailed {
		if d := a.retryDelay(); d > 0 && a.Admitted(ev.Key) {
			l.later(ev.Key, true, d)
		}
	}
	if l.r.OnEvent != nil {
		l.r.OnEvent(ev)
	}
}

// track schedules the first tick of key, if it is connected, and makes a
// lost connection of its client tick it at once.
func (l *loop) track(key client.ObjectKey) {
	c, ok := l.p.Peek(key)
	if !ok {
		return
	}
	if lv := livenessOf(c); lv != nil {
		lv.onLost(func() { l.after(key, 0) })
	}
	l.after(key, l.r.Prober.opts.Interval) // an earlier tick wins
}

// after schedules key's tick d from now, unless one is due earlier.
func (l *loop) after(key client.ObjectKey, d time.Duration) { l.later(key, false, d) }

// later schedules key's tick (retry false) or retry d from now, unless
// one is due earlier.
func (l *loop) later(key client.ObjectKey, retry bool, d time.Duration) {
	l.recs.schedule(key, retry, time.Now().Add(d))
	l.q.AddAfter(key, d)
}

// work reconciles the clusters the queue hands out until it shuts down.
func (l *loop) work(ctx context.Context) {
	for {
		key, shutdown := l.q.Get()
		if shutdown {
			return
		}
		if ctx.Err() == nil {
			l.reconcile(ctx, key)
		}
		l.q.Done(key)
	}
}

// reconcile acts on what key's record holds: its changed Secret, then its
// retry, its tick and its endpoint check if due (one not due yet is queued
// again for when it is).
func (l *loop) reconcile(ctx context.Context, key client.ObjectKey) {
	if l.r.Secrets != nil {
		l.r.Secrets.reconcile(key)
	}
	due, wait := l.recs.takeDue(key, time.Now())
	if wait > 0 {
		l.q.AddAfter(key, wait)
	}
	if due.retry && l.r.Admission != nil {
		l.r.Admission.retried(key)
	}
	if due.tick && l.r.Prober != nil {
		l.r.Prober.probe(ctx, key, l.after)
	}
	if due.revived && l.rev != nil {
		l.revived(ctx, key, due.outcome)
	}
	if due.revive && l.rev != nil {
		l.revive(ctx, key)
	}
}
