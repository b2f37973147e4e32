package kube

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// warm starts the informers of WatchTypes (those of Indexes exist already)
// and waits for the sync of both, as DialerOptions.InitialSyncTimeout
// describes: it returns nil once they synced, or once the dial may return
// with the sync going on (then a goroutine, ended by cctx, the Cluster's
// cache context, sees it through). start is the dial's start.
func (d *Dialer) warm(ctx, cctx context.Context, c *Cluster, start time.Time, log logr.Logger) error {
	objs := make([]client.Object, 0, len(d.opts.WatchTypes)+len(d.opts.Indexes))
	objs = append(objs, d.opts.WatchTypes...)
	for _, ix := range d.opts.Indexes {
		objs = append(objs, ix.Object)
	}
	if len(objs) == 0 {
		return nil
	}
	wctx, cancel := context.WithDeadline(ctx, d.syncWaitEnd(ctx, start))
	defer cancel()
	// Only these informers: one a caller adds later (a Get of another
	// type) is bounded by ReadTimeout, not by the dial.
	synced := make([]toolscache.InformerSynced, 0, len(objs))
	for _, obj := range objs {
		inf, err := c.Cache.GetInformer(wctx, obj, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("kube: informer for %T in cluster %s: %w", obj, c.Key, redactURL(err))
		}
		synced = append(synced, inf.HasSynced)
	}
	if toolscache.WaitForCacheSync(wctx.Done(), synced...) {
		return nil
	}
	end := start.Add(d.opts.InitialSyncTimeout)
	if ctx.Err() != nil || d.opts.InitialSyncTimeout == 0 || !time.Now().Before(end) {
		return fmt.Errorf("kube: cache of cluster %s did not sync: %w", c.Key, wctx.Err())
	}
	log.V(1).Info("connected before the cache synced; the sync goes on", "until", end)
	go d.finishSync(cctx, c, end, synced, log)
	return nil
}

// syncWaitEnd is when the dial stops waiting for the sync: CacheSyncTimeout
// from now; with InitialSyncTimeout, also at its end and at nine tenths of
// the time from start to ctx's deadline, so that the dial returns its
// Cluster before the pool gives up on it.
func (d *Dialer) syncWaitEnd(ctx context.Context, start time.Time) time.Time {
	end := time.Now().Add(d.opts.CacheSyncTimeout)
	if d.opts.InitialSyncTimeout == 0 {
		return end
	}
	end = earliest(end, start.Add(d.opts.InitialSyncTimeout))
	if dl, ok := ctx.Deadline(); ok {
		end = earliest(end, dl.Add(-dl.Sub(start)/10))
	}
	return end
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// finishSync waits for the sync until end. If the Cluster stops first, it
// returns; if end passes first, the pool replaces it by a new dial
// (Redial). The Cluster stops as soon as the pool lets go of it, so it is
// the pool's until then: a Redial racing a rotation costs one more dial,
// and one racing a Remove does nothing.
func (d *Dialer) finishSync(cctx context.Context, c *Cluster, end time.Time, synced []toolscache.InformerSynced, log logr.Logger) {
	ctx, cancel := context.WithDeadline(cctx, end)
	defer cancel()
	if toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		log.V(1).Info("cache synced")
		return
	}
	if cctx.Err() != nil {
		return // stopped
	}
	p := d.pool.get()
	log.Error(fmt.Errorf("kube: cache of cluster %s did not sync within InitialSyncTimeout (%v): %w",
		c.Key, d.opts.InitialSyncTimeout, context.DeadlineExceeded), "initial sync failed", "redial", p != nil)
	if p != nil {
		p.Redial(c.Key)
	}
}
