package chaos

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// chaosSide is one cache's side of the chaos run: its management plane,
// its manager (the capi peer with -cache set to it) and what the
// manager's samples say (trace). Every side shares the workload fleet and
// the schedule.
type chaosSide struct {
	cache string
	plane *chaosPlane
	peer  *peerProc
	trace *chaosTrace
	// collected is closed once every sample of the peer is in trace.
	collected chan struct{}

	// warmup: seconds from the managers' start until this side had every
	// Cluster connected and reconciled.
	warmup float64
	// base: the baseline figures; baseProf: the goroutine profile at the
	// baseline (profErr: why there is none).
	base     procStats
	baseProf goroutineProfile
	profErr  error
}

// planeName names the side in errors: its cache's.
func (s *chaosSide) planeName() string { return s.cache }

// newChaosSide prepares cache's side on plane: its manager's arguments
// (o's), its stderr to log, its trace of cf's live Clusters.
func newChaosSide(o *Options, bin string, plane *chaosPlane, cf *chaosFleet, log io.Writer) *chaosSide {
	args := []string{"-chaos", "-kubeconfig", plane.kubeconfig, "-namespace", fleet.Namespace, "-cache", plane.cache,
		"-sample", chaosSampleEvery.String(), "-hung-after", chaosHungAfter.String(), "-pprof", "127.0.0.1:0"}
	if o.Gates != "" {
		args = append(args, "-feature-gates", o.Gates)
	}
	s := &chaosSide{cache: plane.cache, plane: plane, peer: newPeerProc(bin, args, log), trace: newChaosTrace(cf.live),
		collected: make(chan struct{})}
	if o.Race {
		s.peer.env = []string{"GORACE=halt_on_error=1"}
	}
	go func() { s.trace.collect(s.peer.Samples); close(s.collected) }()
	return s
}

// peerLog creates the file cache's manager's stderr goes to.
func peerLog(cache string) (*os.File, error) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("bench-chaos-%d-%s-peer.log", os.Getpid(), cache))
	f, err := os.Create(path)
	if err == nil {
		fmt.Fprintf(os.Stderr, "bench-chaos: %s: the manager's stderr goes to %s\n", cache, path)
	}
	return f, err
}

// finish stops the manager and waits until its samples are in the trace.
func (s *chaosSide) finish() {
	s.peer.stop()
	close(s.peer.Samples)
	<-s.collected
}

// settled reports whether every one of live is connected and no Cluster
// waits for a reconcile.
func (s *chaosSide) settled(live []string) bool {
	down, _ := s.trace.notConnected(live)
	return len(down) == 0 && len(s.trace.waiting()) == 0
}

// pokeWaiting starts the manager again if it crashed, and pokes what
// waits for a reconcile on the side's plane.
func (s *chaosSide) pokeWaiting(ctx context.Context) {
	if err := s.peer.restartIfCrashed(); err != nil {
		fmt.Fprintf(os.Stderr, "bench-chaos: %s: starting the crashed manager again: %v\n", s.cache, err)
	}
	for _, c := range s.trace.waiting() {
		if err := s.plane.poke(ctx, c); err != nil && ctx.Err() == nil {
			break // the management apiserver is down: next time
		}
	}
}

// fullSamples asks the manager for n full samples, 2 s apart, and
// returns them.
func (s *chaosSide) fullSamples(ctx context.Context, n int) ([]protocol.ChaosSample, error) {
	since := time.Now().Truncate(time.Millisecond) // samples carry milliseconds
	for range n {
		s.peer.askFull()
		if !sleepCtx(ctx, 2*time.Second) {
			return nil, ctx.Err()
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := s.trace.fullsSince(since)
		if len(got) >= n {
			return got, nil
		}
		if time.Now().After(deadline) {
			return got, fmt.Errorf("%d of %d full samples from the manager", len(got), n)
		}
		if !sleepCtx(ctx, 200*time.Millisecond) {
			return got, ctx.Err()
		}
	}
}

// baseline takes the side's baseline: the median of chaosBaselineSamples
// full samples, and a goroutine profile (saved as phase "baseline" in
// pprofDir if set).
func (s *chaosSide) baseline(ctx context.Context, pprofDir string) error {
	samples, err := s.fullSamples(ctx, chaosBaselineSamples)
	if err != nil {
		return fmt.Errorf("%s: baseline: %w", s.cache, err)
	}
	s.base = medianStats(samples)
	s.baseProf, s.profErr = s.goroutines(ctx, pprofDir, "baseline")
	return nil
}
