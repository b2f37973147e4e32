package rotation

import (
	"net/url"
	"sort"
	"time"

	"github.com/clusterpool/clusterpool/bench/peers/protocol"
)

// rotationWindow is one rotation's figures, counted from its start to the
// next rotation's start (the last one's: for rotate-every).
type rotationWindow struct {
	Rotation    int   `json:"rotation"`
	StartUnixMs int64 `json:"start_unix_ms"`
	// WriteS: time to write every Cluster's Secret; RevokedAfterS: from
	// the start until the previous tokens were revoked.
	WriteS        float64 `json:"write_s"`
	RevokedAfterS float64 `json:"revoked_after_s"`
	// At the workload apiservers (audit logs), the peer's requests:
	// relists (LIST, or watch with sendInitialEvents), re-watches (watch
	// from a resourceVersion), all of them, 401 answers (requests with a
	// revoked token), and other answers ≥ 400.
	Relists      int `json:"relists"`
	Rewatches    int `json:"rewatches"`
	Requests     int `json:"requests"`
	Unauthorized int `json:"unauthorized"`
	OtherFailed  int `json:"other_failed"`
	// NewConns: TCP connections the Clusters' proxies accepted.
	NewConns uint64 `json:"new_conns"`
	// As the peer reported (its samples): clusters not connected at some
	// time, their not-connected seconds summed, the longest of one
	// cluster, and not-connected intervals that began in the window.
	NotConnectedClusters int     `json:"not_connected_clusters"`
	NotConnectedS        float64 `json:"not_connected_s"`
	MaxNotConnectedS     float64 `json:"max_not_connected_s"`
	Disconnects          int     `json:"disconnects"`
	// Reconciles that returned an error, or RequeueAfter without success.
	Failed   int `json:"failed_reconciles"`
	Requeued int `json:"requeued_reconciles"`
}

// rotationResult is one peer's rotation run.
type rotationResult struct {
	Strategy string `json:"strategy"`
	Version  string `json:"version"`
	Clusters int    `json:"clusters"`
	// ConnectedBeforeFirst: clusters the peer reported connected before
	// the first rotation.
	ConnectedBeforeFirst int     `json:"connected_before_first"`
	HealthyPerSec        float64 `json:"healthy_per_s"`
	// RotatingHealthyPerSec: healthy successes per second in the series
	// buckets that lie within the rotations' windows.
	RotatingHealthyPerSec float64 `json:"rotating_healthy_per_s"`
	// Load1: the machine's 1-minute load average when the peer started
	// and when it ended (/proc/loadavg; the machine may be shared).
	Load1      [2]float64       `json:"load1"`
	Reconciles int              `json:"reconciles"`
	Windows    []rotationWindow `json:"windows"`
	// Relisted: relists over all windows by path (without the query).
	Relisted map[string]int `json:"relisted,omitempty"`
}

// summarize attributes a peer's figures, its requests at the apiservers
// (sorted by time) and the proxies' counts to the rotations of tl.
func summarize(strategy string, fig protocol.Figures, tl timeline, reqs []request, names []string) rotationResult {
	res := rotationResult{Strategy: strategy, Version: fig.Version, Clusters: len(names),
		HealthyPerSec: fig.HealthyPerSec, Reconciles: fig.Reconciles, Relisted: map[string]int{}}
	bounds := append(append([]time.Time{}, tl.Starts...), tl.End)
	res.Windows = make([]rotationWindow, len(tl.Starts))
	for k, start := range tl.Starts {
		w := &res.Windows[k]
		w.Rotation, w.StartUnixMs = k+1, start.UnixMilli()
		w.WriteS = tl.Written[k].Sub(start).Seconds()
		if k < len(tl.Revoked) {
			w.RevokedAfterS = tl.Revoked[k].Sub(start).Seconds()
		}
		for i := range tl.Conns[k] {
			w.NewConns += tl.Conns[k+1][i] - tl.Conns[k][i]
		}
	}
	addRequests(res.Windows, res.Relisted, bounds, reqs)
	res.RotatingHealthyPerSec = healthyWithin(fig, bounds[0], bounds[len(bounds)-1])
	av := fig.Availability
	for _, name := range names {
		if at, ok := av.FirstConnectedUnixMs[name]; ok && len(tl.Starts) > 0 && at < tl.Starts[0].UnixMilli() {
			res.ConnectedBeforeFirst++
		}
		addNotConnected(res.Windows, bounds, av.NotConnected[name])
		for _, at := range av.Failed[name] {
			if k := windowOf(time.UnixMilli(at), bounds); k >= 0 {
				res.Windows[k].Failed++
			}
		}
		for _, at := range av.Requeued[name] {
			if k := windowOf(time.UnixMilli(at), bounds); k >= 0 {
				res.Windows[k].Requeued++
			}
		}
	}
	return res
}

// addRequests counts reqs into the windows between bounds.
func addRequests(ws []rotationWindow, relisted map[string]int, bounds []time.Time, reqs []request) {
	for _, r := range reqs {
		k := windowOf(r.At, bounds)
		if k < 0 {
			continue
		}
		w := &ws[k]
		switch {
		case r.Code == 401:
			w.Unauthorized++
			continue
		case r.Code >= 400:
			w.OtherFailed++
		case r.Kind == relist:
			w.Relists++
			relisted[r.Path]++
		case r.Kind == rewatch:
			w.Rewatches++
		}
		w.Requests++
	}
}

// addNotConnected adds one cluster's not-connected intervals [from, to)
// (Unix ms) to the windows between bounds.
func addNotConnected(ws []rotationWindow, bounds []time.Time, intervals [][2]int64) {
	for k := range ws {
		s, e := bounds[k].UnixMilli(), bounds[k+1].UnixMilli()
		var sum int64
		for _, iv := range intervals {
			if d := min(iv[1], e) - max(iv[0], s); d > 0 {
				sum += d
			}
			if iv[0] >= s && iv[0] < e {
				ws[k].Disconnects++
			}
		}
		if sum > 0 {
			ws[k].NotConnectedClusters++
			ws[k].NotConnectedS += float64(sum) / 1000
			ws[k].MaxNotConnectedS = max(ws[k].MaxNotConnectedS, float64(sum)/1000)
		}
	}
}

// healthyWithin is the mean healthy successes per second of fig's series
// buckets that lie within [from, to] (0 if none does).
func healthyWithin(fig protocol.Figures, from, to time.Time) float64 {
	start := time.UnixMilli(fig.StartUnixMs)
	var sum float64
	var n int
	for i, p := range fig.Series {
		if i+1 >= len(fig.Series) { // the last bucket may be partial
			break
		}
		width := time.Duration((fig.Series[i+1].T - p.T) * float64(time.Second))
		b := start.Add(time.Duration(p.T * float64(time.Second)))
		if !b.Before(from) && !b.Add(width).After(to) {
			sum += p.HealthyPerSec
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// windowOf returns the k with bounds[k] ≤ t < bounds[k+1], or -1.
func windowOf(t time.Time, bounds []time.Time) int {
	k := sort.Search(len(bounds), func(i int) bool { return bounds[i].After(t) }) - 1
	if k < 0 || k >= len(bounds)-1 {
		return -1
	}
	return k
}

// uriPath is a request URI without its query.
func uriPath(uri string) string {
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return uri
	}
	return u.Path
}
