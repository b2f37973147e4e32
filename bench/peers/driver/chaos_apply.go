package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// firstByteDelay is the first-byte fault's wait.
const firstByteDelay = 10 * time.Second

// proxyModes are the proxy faults' modes.
var proxyModes = map[string]faultproxy.Mode{
	faultBlackhole: faultproxy.Blackhole,
	faultReset:     faultproxy.Reset,
	faultFirstByte: faultproxy.FirstByte,
	faultTrickle:   faultproxy.Trickle,
}

// play applies every fault of the schedule at its time (from r.t0) and
// returns once every one is undone.
func (r *chaosRun) play(ctx context.Context) {
	var wg sync.WaitGroup
	for _, f := range r.schedule {
		wg.Go(func() {
			if !sleepCtx(ctx, time.Until(r.t0.Add(f.At))) {
				return
			}
			e := r.apply(ctx, f)
			r.record(e)
			r.trace.await(e.Clusters, r.t0.Add(time.Duration(e.End*float64(time.Second))))
			if e.Err != "" {
				fmt.Fprintf(os.Stderr, "bench-chaos: %s: fault %d (%s): %s\n", r.cache, f.ID, f.Class, e.Err)
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

// apply applies f, waits its length, undoes it, and returns what
// happened.
func (r *chaosRun) apply(ctx context.Context, f fault) faultEvent {
	e := faultEvent{fault: f, Start: r.since(time.Now())}
	var err error
	switch {
	case f.Class == faultAPIServerStop || f.Class == faultAPIServerRestart:
		e.Clusters = r.cf.onAPIServer(f.Target)
		err = r.processFault(ctx, r.workload[f.Target], f)
	case f.Class == faultMgmtRestart:
		e.Clusters = r.cf.live()
		err = r.processFault(ctx, r.mgmt, f)
	case f.Class == faultManagerKill:
		e.Clusters = r.cf.live()
		r.peer.kill()
		err = r.peer.start()
	case f.Class == faultAdd:
		e.Clusters = []string{fmt.Sprintf("c%03d", f.Target)}
		err = r.cf.create(ctx, f.Target, f.Target%len(r.workload), 1)
	default:
		c := r.cf.cluster(f.Target)
		if c == nil || !c.Live {
			e.Err = "cluster not live"
			break
		}
		e.Clusters = []string{c.Name}
		err = r.clusterFault(ctx, c, f)
	}
	if err != nil {
		e.Err = err.Error()
	}
	e.End = r.since(time.Now())
	return e
}

// processFault stops or kills an apiserver for f.Length.
func (r *chaosRun) processFault(ctx context.Context, p *apiserverProc, f fault) error {
	if f.Class == faultAPIServerStop {
		if err := p.signal(syscall.SIGSTOP); err != nil {
			return err
		}
		sleepCtx(ctx, f.Length)
		return p.signal(syscall.SIGCONT)
	}
	if err := p.kill(); err != nil {
		return err
	}
	sleepCtx(ctx, f.Length)
	return p.start(context.WithoutCancel(ctx))
}

// clusterFault applies a fault of one Cluster for f.Length.
func (r *chaosRun) clusterFault(ctx context.Context, c *chaosCluster, f fault) error {
	cf := r.cf
	if mode, ok := proxyModes[f.Class]; ok {
		c.Proxy.SetDelay(firstByteDelay)
		c.Proxy.SetMode(mode)
		sleepCtx(ctx, f.Length)
		c.Proxy.SetMode(faultproxy.Pass)
		return nil
	}
	ctx = context.WithoutCancel(ctx) // undo what was done, whatever happens
	switch f.Class {
	case faultTokenRotate:
		if err := cf.rotateToken(ctx, c); err != nil {
			return err
		}
		sleepCtx(ctx, f.Length)
		cf.revokeTokens(c)
	case faultCertRotate:
		return cf.rotateCert(ctx, c)
	case faultSecretDelete, faultSecretGarbage:
		return r.secretFault(ctx, c, f)
	case faultRecreate:
		if err := cf.remove(ctx, c, false); err != nil {
			return err
		}
		sleepCtx(ctx, f.Length)
		return cf.create(ctx, f.Target, (c.Home+1)%len(r.workload), c.Incarnation+1)
	case faultInfraFlip:
		if err := cf.setInfrastructure(ctx, c.Name, false); err != nil {
			return err
		}
		sleepCtx(ctx, f.Length)
		return cf.setInfrastructure(ctx, c.Name, true)
	default:
		return fmt.Errorf("unknown fault class %q", f.Class)
	}
	return nil
}

// secretFault deletes c's Secret, or writes garbage into it, and restores
// it after f.Length.
func (r *chaosRun) secretFault(ctx context.Context, c *chaosCluster, f fault) error {
	cf := r.cf
	err := retry(ctx, func(ctx context.Context) error {
		if f.Class == faultSecretGarbage {
			return cf.writeSecret(ctx, c.Name, []byte("garbage: [not a kubeconfig"))
		}
		return cf.deleteSecret(ctx, c.Name)
	})
	if err != nil {
		return err
	}
	sleepCtx(ctx, f.Length)
	cf.mu.Lock()
	kc := c.Kubeconfig
	cf.mu.Unlock()
	return retry(ctx, func(ctx context.Context) error { return cf.writeSecret(ctx, c.Name, kc) })
}
