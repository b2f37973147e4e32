package rotation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// rotationOptions configure a rotation run (-rotation): every Cluster's
// kubeconfig Secret gets a new bearer token every Every, Count times, and
// the token it replaced is revoked RevokeAfter later.
type rotationOptions struct {
	On          bool          `json:"-"`
	Every       time.Duration `json:"every_ns"`
	Count       int           `json:"rotations"`
	RevokeAfter time.Duration `json:"revoke_after_ns"`
	// Warmup: from the peer's start to the first rotation (every cluster
	// must be connected by then).
	Warmup time.Duration `json:"warmup_ns"`
	// Sample: the peers' -sample-connected.
	Sample time.Duration `json:"sample_ns"`
}

// Options are a rotation run's command line: the shared flags, and its
// own.
type Options struct {
	*fleet.Shared
	run rotationOptions // the run's flags, as its report records them
}

// Register defines the rotation run's flags on fs; the Options it returns
// read the shared ones from sh.
func Register(fs *flag.FlagSet, sh *fleet.Shared) *Options {
	o := &Options{Shared: sh}
	ro := &o.run
	fs.BoolVar(&ro.On, "rotation", false, "rotation run (make bench-rotation): the kubeconfig Secrets' bearer tokens rotate; relists, not-connected time and failed reconciles per rotation, per peer")
	fs.DurationVar(&ro.Every, "rotate-every", 20*time.Second, "rotation run: time between two rotations")
	fs.IntVar(&ro.Count, "rotations", 6, "rotation run: rotations per peer")
	fs.DurationVar(&ro.RevokeAfter, "revoke-after", 5*time.Second, "rotation run: the previous token is revoked this long after a rotation")
	fs.DurationVar(&ro.Warmup, "rotation-warmup", 30*time.Second, "rotation run: from a peer's start to its first rotation")
	fs.DurationVar(&ro.Sample, "sample-connected", 50*time.Millisecond, "rotation run: how often the peers report whether each cluster is connected")
	return o
}

// On reports whether the command line asks for a rotation run (-rotation).
func (o *Options) On() bool { return o.run.On }

// Defaults checks the flags once fs is parsed and, for a rotation run
// without -strategies, runs ClusterCache and clusterpool.
func (o *Options) Defaults(fs *flag.FlagSet) error { return o.run.defaults(fs, &o.Strategies) }

// Run builds the strategies' peers and runs the rotation run.
func Run(ctx context.Context, o *Options) error {
	bins, err := fleet.BuildPeers(ctx, o.Shared)
	if err != nil {
		return err
	}
	return runRotation(ctx, o, bins)
}

// defaults checks ro and, for a rotation run without -strategies, runs
// ClusterCache and clusterpool.
func (ro rotationOptions) defaults(fs *flag.FlagSet, strategies *[]string) error {
	if !ro.On {
		return nil
	}
	if ro.Every <= ro.RevokeAfter || ro.Count < 1 || ro.Warmup <= 0 || ro.Sample <= 0 {
		return errors.New("-rotation: want -rotate-every > -revoke-after, -rotations ≥ 1, positive -rotation-warmup and -sample-connected")
	}
	if !fleet.FlagGiven(fs, "strategies") {
		*strategies = []string{"clustercache", "clusterpool"}
	}
	return nil
}

// rotationReport is what -json writes in a rotation run.
type rotationReport struct {
	fleet.Stamp
	Wall       string           `json:"wall"`
	Config     fleet.Config     `json:"config"`
	APIServers int              `json:"workload_apiservers"`
	Options    rotationOptions  `json:"options"`
	Results    []rotationResult `json:"results"`
}

// runRotation starts the fleet with the token authenticator and audit
// logs, then runs every strategy on it in turn.
func runRotation(ctx context.Context, o *Options, bins map[string]string) error {
	start := time.Now()
	a, err := fleet.StartAuthenticator()
	if err != nil {
		return err
	}
	defer a.Close()
	dir, err := os.MkdirTemp("", "bench-rotation-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	configure, logs, err := fleet.RotationAPIServers(a, dir, o.APIServers)
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench-rotation: starting %d apiservers, %d Clusters × %d objects\n", 1+o.APIServers, o.Cfg.Clusters, o.Cfg.Objects)
	f, err := fleet.Start(ctx, o.Root, o.Cfg.Clusters, o.APIServers, o.Cfg.Objects, configure)
	if err != nil {
		return err
	}
	defer f.Stop()
	rf := &rotationFleet{Fleet: f, auth: a}
	for _, l := range logs {
		rf.audits = append(rf.audits, &auditLog{file: l})
	}
	rep := rotationReport{Stamp: fleet.NewStamp(start), Config: o.Cfg,
		APIServers: o.APIServers, Options: o.run}
	for _, s := range o.Strategies {
		fmt.Fprintf(os.Stderr, "bench-rotation: %s, %d rotations every %s\n", s, o.run.Count, o.run.Every)
		res, err := rf.runPeer(ctx, bins[s], s, o.Cfg, o.run)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, res)
	}
	rep.Wall = time.Since(start).Round(time.Second).String()
	if err := writeRotation(o.Out, rep); err != nil {
		return err
	}
	return fleet.WriteJSON(o.JSONOut, rep)
}

// rotationFleet is the fleet of a rotation run with its authenticator and
// the workload apiservers' audit logs.
type rotationFleet struct {
	*fleet.Fleet
	auth   *fleet.Authenticator
	audits []*auditLog
}

// runPeer runs bin with every Cluster on generation 0 of its own tokens,
// rotates them as ro says while it runs, and returns its figures per
// rotation.
func (rf *rotationFleet) runPeer(ctx context.Context, bin, strategy string, cfg fleet.Config, ro rotationOptions) (rotationResult, error) {
	if err := rf.rotateAll(ctx, strategy, 0); err != nil {
		return rotationResult{}, err
	}
	defer rf.auth.Revoke(func(id fleet.Identity) bool { return id.Peer == strategy })
	for _, l := range rf.audits {
		if err := l.mark(); err != nil {
			return rotationResult{}, err
		}
	}
	roles := make([]string, len(rf.Names))
	for i, n := range rf.Names {
		roles[i] = n + "=healthy"
	}
	run := ro.Warmup + time.Duration(ro.Count)*ro.Every + 3*time.Second
	args := []string{"-kubeconfig", rf.Kubeconfig, "-namespace", fleet.Namespace, "-roles", strings.Join(roles, ","),
		"-objects", fmt.Sprint(cfg.Objects), "-workers", fmt.Sprint(cfg.Workers), "-work", cfg.Work.String(),
		"-duration", run.String(), "-saturate=true", "-bucket", cfg.Bucket.String(), "-watch-nodes",
		"-sample-connected", ro.Sample.String()}
	pctx, cancel := context.WithTimeout(ctx, run+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(pctx, bin, args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	load0 := load1()
	if err := cmd.Start(); err != nil {
		return rotationResult{}, fmt.Errorf("starting %s: %w", strategy, err)
	}
	sched := rf.schedule(pctx, strategy, ro)
	err := cmd.Wait()
	tl := sched.wait()
	load := [2]float64{load0, load1()}
	if err != nil {
		return rotationResult{}, fmt.Errorf("%s on rotation: %w", strategy, err)
	}
	if tl.err != nil {
		return rotationResult{}, fmt.Errorf("%s on rotation: %w", strategy, tl.err)
	}
	if tl.End.IsZero() {
		return rotationResult{}, fmt.Errorf("%s on rotation: the peer ended before the last rotation's window", strategy)
	}
	var fig protocol.Figures
	if err := json.Unmarshal(stdout.Bytes(), &fig); err != nil {
		return rotationResult{}, fmt.Errorf("%s: decoding its figures: %w", strategy, err)
	}
	if fig.Availability == nil {
		return rotationResult{}, fmt.Errorf("%s: no availability figures (does it set Strategy.Connected?)", strategy)
	}
	var reqs []request
	for _, l := range rf.audits {
		r, err := l.read(strategy)
		if err != nil {
			return rotationResult{}, err
		}
		reqs = append(reqs, r...)
	}
	slices.SortFunc(reqs, func(a, b request) int { return a.At.Compare(b.At) })
	res := summarize(strategy, fig, tl, reqs, rf.Names)
	res.Load1 = load
	return res, nil
}

// load1 is the machine's 1-minute load average (-1 if unknown).
func load1() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	var v float64
	if _, err := fmt.Sscan(string(data), &v); err != nil {
		return -1
	}
	return v
}
