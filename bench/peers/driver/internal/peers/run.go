package peers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// Result is one strategy's real figures on one scenario.
type Result struct {
	Scenario string           `json:"scenario"`
	Strategy string           `json:"strategy"`
	Figures  protocol.Figures `json:"figures"`
	// Dials: connections the proxies accepted during the run, in all and
	// for the faulty clusters.
	Dials       uint64 `json:"dials"`
	FaultyDials uint64 `json:"faulty_dials"`
	// RecoveryMean and RecoveryMax: from a recovering cluster's switch to
	// pass until all its objects reconciled (s); -1 if one never did.
	RecoveryMean float64 `json:"recovery_mean_s,omitempty"`
	RecoveryMax  float64 `json:"recovery_max_s,omitempty"`
}

// runPeer runs the peer binary bin on f with sc laid out as l, switching the
// proxies as l says, and returns its figures.
func runPeer(ctx context.Context, f *fleet.Fleet, bin, strategy string, sc fleet.Scenario, l fleet.Layout, cfg fleet.Config) (Result, error) {
	for i, p := range f.Proxies {
		p.SetMode(l.Initial[i])
	}
	before := make([]uint64, len(f.Proxies))
	for i, p := range f.Proxies {
		before[i] = p.Accepted()
	}
	var recoveredAt map[int]time.Time
	during := func(stop <-chan struct{}) { recoveredAt = fleet.ApplyEvents(f.Proxies, l.Events, stop) }
	figures, err := execPeer(ctx, bin, strategy, sc, peerArgs(f.Kubeconfig, f.Names, l.Roles, sc, cfg), during)
	if err != nil {
		return Result{}, err
	}
	res := Result{Scenario: sc.Name, Strategy: strategy, Figures: figures}
	for i, p := range f.Proxies {
		d := p.Accepted() - before[i]
		res.Dials += d
		if l.Roles[i] != "healthy" {
			res.FaultyDials += d
		}
	}
	if sc.Role == "recovering" {
		res.RecoveryMean, res.RecoveryMax = recovery(f.Names, recoveredAt, res.Figures.ClusterDoneUnixMs, slices.Index(l.Roles, "recovering") >= 0)
	}
	return res, nil
}

// peerArgs is the command line of a peer on sc: the fleet, each cluster's
// role (names[i]=roles[i]) and the workload.
func peerArgs(kubeconfig string, names, roles []string, sc fleet.Scenario, cfg fleet.Config) []string {
	items := make([]string, len(names))
	for i, n := range names {
		items[i] = n + "=" + roles[i]
	}
	args := []string{"-kubeconfig", kubeconfig, "-namespace", fleet.Namespace, "-roles", strings.Join(items, ","),
		"-objects", fmt.Sprint(cfg.Objects), "-workers", fmt.Sprint(cfg.Workers), "-work", cfg.Work.String(),
		"-duration", sc.Duration.String(), fmt.Sprintf("-saturate=%t", sc.Saturate), "-bucket", cfg.Bucket.String()}
	if cfg.Timings {
		args = append(args, "-timings")
	}
	return args
}

// execPeer runs the peer binary bin with args on sc (for at most its
// Duration and two minutes more), runs during meanwhile (its channel is
// closed once the peer exited; execPeer returns after during did), and
// decodes the figures the peer printed.
func execPeer(ctx context.Context, bin, strategy string, sc fleet.Scenario, args []string, during func(stop <-chan struct{})) (protocol.Figures, error) {
	ctx, cancel := context.WithTimeout(ctx, sc.Duration+2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Start(); err != nil {
		return protocol.Figures{}, fmt.Errorf("starting %s: %w", strategy, err)
	}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		during(stop)
	}()
	err := cmd.Wait()
	close(stop)
	<-done
	if err != nil {
		return protocol.Figures{}, fmt.Errorf("%s on %s: %w", strategy, sc.Name, err)
	}
	var f protocol.Figures
	if err := json.Unmarshal(out.Bytes(), &f); err != nil {
		return protocol.Figures{}, fmt.Errorf("%s: decoding its figures: %w", strategy, err)
	}
	return f, nil
}

// recovery returns the mean and maximum over recovered clusters of the time
// from the switch to pass until every object of the cluster reconciled;
// -1, -1 if some cluster never got there, or none recovered although some
// should have (expected).
func recovery(names []string, recoveredAt map[int]time.Time, doneUnixMs map[string]int64, expected bool) (mean, worst float64) {
	if len(recoveredAt) == 0 {
		if expected {
			return -1, -1
		}
		return 0, 0
	}
	var sum float64
	for c, at := range recoveredAt {
		done, ok := doneUnixMs[names[c]]
		if !ok {
			return -1, -1
		}
		d := time.UnixMilli(done).Sub(at).Seconds()
		sum += d
		worst = max(worst, d)
	}
	return sum / float64(len(recoveredAt)), worst
}
