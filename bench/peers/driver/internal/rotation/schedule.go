package rotation

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/internal/envtestutil"
)

// timeline is what the driver did during one peer's rotation run.
type timeline struct {
	// Starts[k] is when rotation k+1 began writing the Secrets, Written[k]
	// when the last of them was written, Revoked[k] when the tokens it
	// replaced were revoked (zero if the run ended first); End is the end
	// of the last rotation's window (Starts[last] + Every).
	Starts, Written, Revoked []time.Time
	End                      time.Time
	// Conns[k][i]: connections proxy i had accepted at Starts[k]; the
	// last row at End.
	Conns [][]uint64
	err   error
}

// schedule is a running rotation schedule.
type schedule struct {
	stop chan struct{}
	done chan timeline
}

// wait stops the schedule (if the peer ended first) and returns its
// timeline.
func (s *schedule) wait() timeline {
	close(s.stop)
	return <-s.done
}

// schedule rotates the tokens of peer ro.Count times, the first after
// ro.Warmup from now, one every ro.Every, each revoking the previous
// generation ro.RevokeAfter later.
func (rf *rotationFleet) schedule(ctx context.Context, peer string, ro rotationOptions) *schedule {
	s := &schedule{stop: make(chan struct{}), done: make(chan timeline, 1)}
	t0 := time.Now()
	go func() {
		var tl timeline
		tl.err = rf.runSchedule(ctx, peer, ro, t0, s.stop, &tl)
		<-s.stop
		s.done <- tl
	}()
	return s
}

// runSchedule is schedule's loop; it returns early, with no error, when
// stop is closed.
func (rf *rotationFleet) runSchedule(ctx context.Context, peer string, ro rotationOptions, t0 time.Time, stop <-chan struct{}, tl *timeline) error {
	for k := 1; k <= ro.Count; k++ {
		start := t0.Add(ro.Warmup + time.Duration(k-1)*ro.Every)
		if !sleepUntil(start, stop) {
			return nil
		}
		tl.Starts, tl.Conns = append(tl.Starts, time.Now()), append(tl.Conns, rf.accepted())
		if err := rf.rotateAll(ctx, peer, k); err != nil {
			return err
		}
		tl.Written = append(tl.Written, time.Now())
		if !sleepUntil(start.Add(ro.RevokeAfter), stop) {
			return nil
		}
		rf.auth.Revoke(func(id fleet.Identity) bool { return id.Peer == peer && id.Gen == k-1 })
		tl.Revoked = append(tl.Revoked, time.Now())
	}
	if !sleepUntil(t0.Add(ro.Warmup+time.Duration(ro.Count)*ro.Every), stop) {
		return nil
	}
	tl.End, tl.Conns = time.Now(), append(tl.Conns, rf.accepted())
	return nil
}

// sleepUntil waits until t; false if stop was closed first.
func sleepUntil(t time.Time, stop <-chan struct{}) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-stop:
		return false
	}
}

// accepted returns the connections each proxy accepted so far.
func (rf *rotationFleet) accepted() []uint64 {
	out := make([]uint64, len(rf.Proxies))
	for i, p := range rf.Proxies {
		out[i] = p.Accepted()
	}
	return out
}

// rotateAll gives every Cluster a kubeconfig with a new token of peer's
// generation gen (same server, CA and everything else: only the
// credentials change), writing the Secrets growWorkers at a time.
func (rf *rotationFleet) rotateAll(ctx context.Context, peer string, gen int) error {
	errs := make([]error, len(rf.Names))
	next := make(chan int)
	var wg sync.WaitGroup
	for range fleet.GrowWorkers {
		wg.Go(func() {
			for i := range next {
				errs[i] = rf.rotateOne(ctx, i, fleet.Identity{Peer: peer, Cluster: rf.Names[i], Gen: gen})
			}
		})
	}
	for i := range rf.Names {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// rotateOne writes cluster i's kubeconfig Secret with a new token of id.
func (rf *rotationFleet) rotateOne(ctx context.Context, i int, id fleet.Identity) error {
	kc, err := envtestutil.Kubeconfig(rf.Workload[i%len(rf.Workload)], rf.Proxies[i].Addr(), rf.auth.Issue(id))
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{"data": map[string]string{"value": base64.StdEncoding.EncodeToString(kc)}})
	if err != nil {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fleet.Namespace, Name: id.Cluster + "-kubeconfig"}}
	if err := rf.Mgmt.Patch(ctx, s, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("cluster %s: writing its kubeconfig Secret: %w", id.Cluster, err)
	}
	return nil
}
