package mhc

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
)

// Options are the command line of the -mhc run (make bench-mhc): the
// shared flags, and its own.
type Options struct {
	*fleet.Shared
	On       bool
	Machines int           // Machines (and Nodes) per Cluster
	Duration time.Duration // each run's length
	Flapping float64       // fraction of flapping clusters, beside -fraction dead ones
	Period   time.Duration // flapping clusters' up and down period
	Caches   []string      // runs, in order: stock, adapter or a Peers name each
	From     string        // -mhc-from: a -json file to print again, no run
	Gates    string        // the peer's -feature-gates
	// Peers are capi peer binaries built from other trees (-mhc-peer), by
	// run name; each runs with the adapter cache.
	Peers map[string]string
}

// Register defines the -mhc run's flags on fs; the Options it returns
// read the shared ones from sh.
func Register(fs *flag.FlagSet, sh *fleet.Shared) *Options {
	o := &Options{Shared: sh}
	fs.BoolVar(&o.On, "mhc", false, "run Cluster API v1.14.2's MachineHealthCheck reconciler (bench/peers/capi) on the stock ClusterCache and on clusterpool's drop-in (make bench-mhc); -fraction of the clusters are dead")
	fs.IntVar(&o.Machines, "mhc-machines", 5, "mhc run: Machines (and Nodes) per Cluster")
	fs.DurationVar(&o.Duration, "mhc-duration", 90*time.Second, "mhc run: length of each run")
	fs.Float64Var(&o.Flapping, "mhc-flapping", 0.1, "mhc run: fraction of flapping clusters (beside the -fraction dead ones)")
	fs.DurationVar(&o.Period, "mhc-flap-period", 30*time.Second, "mhc run: flapping clusters' up and down period")
	fs.StringVar(&o.Gates, "mhc-feature-gates", "", "mhc run: Cluster API feature gates of the peer (e.g. ReconcilerRateLimiting=false)")
	fs.Func("mhc-from", "run nothing: print the -json file of an mhc run again", func(v string) error {
		o.On, o.From = true, v
		return nil
	})
	o.peerFlags(fs) // peer.go
	return o
}

// mhcLayout lays the run out on m clusters: a seeded dead fraction held
// from the start, a flapping fraction switching every period (up first,
// for a random part of it), the rest healthy.
func mhcLayout(m int, seed uint64, dead, flapping float64, period, d time.Duration) fleet.Layout {
	sc := fleet.Scenario{Role: "flapping", Fraction: dead + flapping, FlapPeriod: period, Duration: d}
	l := sc.Lay(m, seed)
	toDead := int(dead*float64(m) + 0.5)
	for c := range l.Roles {
		if toDead == 0 {
			break
		}
		if l.Roles[c] == "flapping" {
			l.Roles[c], l.Initial[c] = "dead", faultproxy.Hold
			l.Events = slices.DeleteFunc(l.Events, func(e fleet.Event) bool { return e.Cluster == c })
			toDead--
		}
	}
	return l
}

// Result is one run of the peer with one cache.
type Result struct {
	Cache   string              `json:"cache"`
	Figures protocol.MHCFigures `json:"figures"`
	// Roles are the clusters' roles; Machines per cluster.
	Roles    map[string]string `json:"roles"`
	Machines int               `json:"machines_per_cluster"`
	// Checked: seconds from the peer's start to each Machine's first
	// HealthCheckSucceeded=True; Healthy: to each Cluster's
	// MachineHealthCheck's first currentHealthy = expectedMachines = all.
	Checked map[string]float64 `json:"checked_s"`
	Healthy map[string]float64 `json:"mhc_healthy_s"`
	// Dials are the connections each role's proxies accepted in the run.
	Dials map[string]uint64 `json:"dials"`
}

// Report is the -json output of an -mhc run.
type Report struct {
	fleet.Stamp
	Clusters   int           `json:"clusters"`
	APIServers int           `json:"workload_apiservers"`
	Seed       uint64        `json:"seed"`
	Dead       float64       `json:"dead_fraction"`
	Flapping   float64       `json:"flapping_fraction"`
	Period     time.Duration `json:"flap_period_ns"`
	Duration   time.Duration `json:"run_ns"`
	Gates      string        `json:"feature_gates,omitempty"`
	// Peers are the -mhc-peer binaries, by run name.
	Peers   map[string]string `json:"peers,omitempty"`
	Wall    float64           `json:"wall_s"`
	Results []Result          `json:"results"`
}

// Run is the -mhc run: one fleet (no workload objects; Machines,
// Nodes and a MachineHealthCheck per Cluster instead), the capi peer run
// once per cache with the same layout, one table.
func Run(ctx context.Context, o *Options) error {
	mo, root, out := *o, o.Root, o.Out
	if mo.From != "" {
		var rep Report
		if err := protocol.ReadReport(mo.From, &rep); err != nil {
			return err
		}
		return writeMHC(out, rep)
	}
	bin, capiDir, err := fleet.CAPIPeer(ctx, root)
	if err != nil {
		return err
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "bench-mhc: starting %d apiservers, %d Clusters × %d Machines\n", 1+o.APIServers, o.Cfg.Clusters, mo.Machines)
	f, err := fleet.Start(ctx, root, o.Cfg.Clusters, o.APIServers, 0)
	if err != nil {
		return err
	}
	defer f.Stop()
	if err := fleet.MHCObjects(ctx, f, capiDir, mo.Machines); err != nil {
		return err
	}
	watcher, err := client.NewWithWatch(f.Envs[0].Config, client.Options{})
	if err != nil {
		return err
	}
	l := mhcLayout(o.Cfg.Clusters, o.Cfg.Seed, o.Timing.Fraction, mo.Flapping, mo.Period, mo.Duration)
	rep := Report{Stamp: fleet.NewStamp(start), Clusters: o.Cfg.Clusters, APIServers: o.APIServers,
		Seed: o.Cfg.Seed, Dead: o.Timing.Fraction, Flapping: mo.Flapping, Period: mo.Period, Duration: mo.Duration, Gates: mo.Gates, Peers: mo.Peers}
	for i, cache := range mo.Caches {
		fmt.Fprintf(os.Stderr, "bench-mhc: MachineHealthCheck on the %s ClusterCache (%s)\n", cache, mo.Duration)
		res, err := runMHCPeer(ctx, f, watcher, bin, cache, fmt.Sprintf("run%d", i), l, mo)
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, res)
	}
	rep.Wall = time.Since(start).Seconds()
	if err := writeMHC(out, rep); err != nil {
		return err
	}
	return fleet.WriteJSON(o.JSONOut, rep)
}

// runMHCPeer resets the checks, runs the peer with cache (a -mhc-peer
// name: that binary with the adapter) on f laid out as l while watching
// the Machines and MachineHealthChecks, and returns its figures, times and
// dials.
func runMHCPeer(ctx context.Context, f *fleet.Fleet, c client.WithWatch, bin, cache, run string, l fleet.Layout, mo Options) (Result, error) {
	if err := fleet.ResetChecks(ctx, f, run); err != nil {
		return Result{}, err
	}
	res := Result{Cache: cache, Roles: map[string]string{}, Machines: mo.Machines, Dials: map[string]uint64{}}
	before := make([]uint64, len(f.Proxies))
	for i, p := range f.Proxies {
		p.SetMode(l.Initial[i])
		before[i] = p.Accepted()
		res.Roles[f.Names[i]] = l.Roles[i]
	}
	pctx, cancel := context.WithTimeout(ctx, mo.Duration+2*time.Minute)
	defer cancel()
	bin, arg := mo.peer(bin, cache)
	args := []string{"-kubeconfig", f.Kubeconfig, "-namespace", fleet.Namespace, "-cache", arg, "-duration", mo.Duration.String()}
	if mo.Gates != "" {
		args = append(args, "-feature-gates", mo.Gates)
	}
	cmd := exec.CommandContext(pctx, bin, args...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	t0 := time.Now()
	w := startCheckWatch(ctx, c, t0, mo.Machines, nil)
	if err := cmd.Start(); err != nil {
		w.stop()
		return Result{}, fmt.Errorf("starting capi peer: %w", err)
	}
	stop := make(chan struct{})
	switched := make(chan struct{})
	go func() { fleet.ApplyEvents(f.Proxies, l.Events, stop); close(switched) }()
	err := cmd.Wait()
	close(stop)
	<-switched
	times, werr := w.stop()
	if err != nil {
		return Result{}, fmt.Errorf("capi peer (%s): %w", cache, err)
	}
	if werr != nil {
		return Result{}, werr
	}
	if err := json.Unmarshal(stdout.Bytes(), &res.Figures); err != nil {
		return Result{}, fmt.Errorf("capi peer (%s): decoding its figures: %w", cache, err)
	}
	for i, p := range f.Proxies {
		res.Dials[l.Roles[i]] += p.Accepted() - before[i]
	}
	res.Checked, res.Healthy = seconds(times.Machines), seconds(times.MHCs)
	return res, nil
}

// seconds converts a firstSeen to seconds.
func seconds(s firstSeen) map[string]float64 {
	out := make(map[string]float64, len(s))
	for k, d := range s {
		out[k] = d.Seconds()
	}
	return out
}
