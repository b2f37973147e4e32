package rotation

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
)

// rotationRow is one figure of the rotation table: its label and how it
// is read from a window.
type rotationRow struct {
	label string
	get   func(rotationWindow) float64
}

var rotationRows = []rotationRow{
	{"relists (LIST or watch-list at the workload apiservers)", func(w rotationWindow) float64 { return float64(w.Relists) }},
	{"re-watches (watch from a resourceVersion)", func(w rotationWindow) float64 { return float64(w.Rewatches) }},
	{"new TCP connections at the proxies", func(w rotationWindow) float64 { return float64(w.NewConns) }},
	{"requests answered 401 (revoked token)", func(w rotationWindow) float64 { return float64(w.Unauthorized) }},
	{"other requests answered ≥ 400", func(w rotationWindow) float64 { return float64(w.OtherFailed) }},
	{"clusters reported not connected", func(w rotationWindow) float64 { return float64(w.NotConnectedClusters) }},
	{"seconds not connected, summed over clusters", func(w rotationWindow) float64 { return w.NotConnectedS }},
	{"seconds not connected, most of one cluster", func(w rotationWindow) float64 { return w.MaxNotConnectedS }},
	{"failed reconciles (returned an error)", func(w rotationWindow) float64 { return float64(w.Failed) }},
	{"requeued reconciles (RequeueAfter, no success)", func(w rotationWindow) float64 { return float64(w.Requeued) }},
	{"all requests of the peer", func(w rotationWindow) float64 { return float64(w.Requests) }},
}

// writeRotation prints a rotation run's tables: per rotation, mean and
// range over the rotations, peers side by side; then every rotation.
func writeRotation(out io.Writer, rep rotationReport) error {
	o := rep.Options
	fmt.Fprintf(out, "Rotation run of %s (%s; %s wall): %d Clusters on %d workload apiservers × %d objects, %d workers, %s of work per reconcile, saturated. "+
		"Every %s each Cluster's kubeconfig Secret gets a new bearer token (%d rotations per peer, the first %s after the peer's start); "+
		"the token it replaced is revoked %s later (the apiservers answer 401 once their token caches expire, ≤ 10 s + %s).\n\n",
		rep.Date, rep.Machine, rep.Wall, rep.Config.Clusters, rep.APIServers, rep.Config.Objects, rep.Config.Workers, rep.Config.Work,
		o.Every, o.Count, o.Warmup, o.RevokeAfter, fleet.WebhookCacheTTL)
	var tw strings.Builder
	head := []string{"per rotation, all clusters: mean (min–max)"}
	sep := []string{"---"}
	for _, r := range rep.Results {
		head, sep = append(head, r.Strategy+" "+r.Version), append(sep, "---")
	}
	row(&tw, head...)
	row(&tw, sep...)
	for _, rr := range rotationRows {
		cells := []string{rr.label}
		for _, r := range rep.Results {
			cells = append(cells, meanRange(r.Windows, rr.get))
		}
		row(&tw, cells...)
	}
	cells := []string{"clusters connected before the first rotation"}
	for _, r := range rep.Results {
		cells = append(cells, fmt.Sprintf("%d of %d", r.ConnectedBeforeFirst, r.Clusters))
	}
	row(&tw, cells...)
	cells = []string{"healthy reconciles/s during the rotations (whole run)"}
	for _, r := range rep.Results {
		cells = append(cells, fmt.Sprintf("%.1f (%.1f)", r.RotatingHealthyPerSec, r.HealthyPerSec))
	}
	row(&tw, cells...)
	cells = []string{"machine's load average, 1 min, at the peer's start → end"}
	for _, r := range rep.Results {
		cells = append(cells, fmt.Sprintf("%.1f → %.1f", r.Load1[0], r.Load1[1]))
	}
	row(&tw, cells...)
	if _, err := io.WriteString(out, tw.String()); err != nil {
		return err
	}
	for _, r := range rep.Results {
		if err := writeWindows(out, r); err != nil {
			return err
		}
	}
	return nil
}

// writeWindows prints one peer's rotations one by one.
func writeWindows(out io.Writer, r rotationResult) error {
	fmt.Fprintf(out, "\n%s %s, rotation by rotation:\n\n", r.Strategy, r.Version)
	var tw strings.Builder
	row(&tw, "rotation", "start (UTC)", "Secrets written, s", "revoked at, s", "relists", "re-watches", "new conns", "401", "not connected: clusters", "s (sum)", "s (most)", "failed", "requeued")
	row(&tw, "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---", "---")
	for _, w := range r.Windows {
		row(&tw, fmt.Sprint(w.Rotation), time.UnixMilli(w.StartUnixMs).UTC().Format("15:04:05.000"),
			fmt.Sprintf("%.2f", w.WriteS), fmt.Sprintf("%.2f", w.RevokedAfterS), fmt.Sprint(w.Relists),
			fmt.Sprint(w.Rewatches), fmt.Sprint(w.NewConns), fmt.Sprint(w.Unauthorized), fmt.Sprint(w.NotConnectedClusters),
			fmt.Sprintf("%.2f", w.NotConnectedS), fmt.Sprintf("%.2f", w.MaxNotConnectedS), fmt.Sprint(w.Failed), fmt.Sprint(w.Requeued))
	}
	if _, err := io.WriteString(out, tw.String()); err != nil {
		return err
	}
	if len(r.Relisted) > 0 {
		var parts []string
		for _, p := range slices.Sorted(maps.Keys(r.Relisted)) {
			parts = append(parts, fmt.Sprintf("%s × %d", p, r.Relisted[p]))
		}
		fmt.Fprintf(out, "\nRelisted: %s\n", strings.Join(parts, ", "))
	}
	return nil
}

// meanRange formats get's mean over ws and its range.
func meanRange(ws []rotationWindow, get func(rotationWindow) float64) string {
	if len(ws) == 0 {
		return "–"
	}
	var sum float64
	lo, hi := get(ws[0]), get(ws[0])
	for _, w := range ws {
		v := get(w)
		sum += v
		lo, hi = min(lo, v), max(hi, v)
	}
	if lo == hi {
		return trimFloat(lo)
	}
	return fmt.Sprintf("%s (%s–%s)", trimFloat(sum/float64(len(ws))), trimFloat(lo), trimFloat(hi))
}

// trimFloat prints v with at most one decimal, none for whole numbers.
func trimFloat(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprint(int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}

// row writes one markdown table row.
func row(b *strings.Builder, cells ...string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}
