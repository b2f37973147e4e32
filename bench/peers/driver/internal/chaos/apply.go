package chaos

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// play applies every fault of the schedule at its time (from r.t0) to
// every plane at once and returns once every one is undone.
func (r *chaosRun) play(ctx context.Context) {
	var wg sync.WaitGroup
	for _, f := range r.schedule {
		wg.Go(func() {
			if !sleepCtx(ctx, time.Until(r.t0.Add(f.At))) {
				return
			}
			e := r.apply(ctx, f)
			r.record(e)
			if e.Err != "" {
				fmt.Fprintf(os.Stderr, "bench-chaos: fault %d (%s): %s\n", f.ID, f.Class, e.Err)
			}
		})
	}
	wg.Wait()
}

// sleepCtx sleeps d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// apply applies f as its class says (the registry), waits its length,
// undoes it, and returns what happened.
func (r *chaosRun) apply(ctx context.Context, f fault) faultEvent {
	e := faultEvent{fault: f, Start: r.since(time.Now())}
	err := r.applyClass(ctx, f, &e)
	if err != nil {
		e.Err = err.Error()
	}
	e.End = r.since(time.Now())
	return e
}

// applyClass finds f's class and target, names the Clusters it can
// affect in e, applies it, waits f.Length and undoes it.
func (r *chaosRun) applyClass(ctx context.Context, f fault, e *faultEvent) error {
	class, err := classOf(f.Class)
	if err != nil {
		return err
	}
	h := faultHit{fault: f}
	switch class.Target {
	case targetAPIServer:
		e.Clusters = r.cf.onAPIServer(f.Target)
	case targetFleet:
		e.Clusters = r.cf.live()
	case targetNew:
		e.Clusters = []string{fmt.Sprintf("c%03d", f.Target)}
	default:
		if h.c = r.cf.cluster(f.Target); h.c == nil || !r.cf.isLive(h.c) {
			return fmt.Errorf("cluster %d not live", f.Target)
		}
		e.Clusters = []string{h.c.Name}
	}
	if err := class.Apply(ctx, r, h); err != nil || class.Undo == nil {
		return err
	}
	sleepCtx(ctx, f.Length)
	return class.Undo(context.WithoutCancel(ctx), r, h) // undo what was done, whatever happens
}
