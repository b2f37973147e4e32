package chaos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clusterpool/clusterpool/kube"
)

// goroutineLabel is the pprof label clusterpool puts on the goroutines it
// starts for one cluster (kube.Dialer's dial, and the drop-in's watches),
// its value the cluster's key (namespace/name).
const goroutineLabel = kube.GoroutineLabel

// goroutineProfile is a goroutine profile (debug=1) of the peer, counted.
type goroutineProfile struct {
	Total int
	// Stacks counts the goroutines by stack (function names, innermost
	// first); ByCluster those labelled goroutineLabel, by Cluster name.
	Stacks    map[string]int
	ByCluster map[string]int
}

// parseGoroutines reads a debug=1 goroutine profile: records of "N @
// addresses", an optional "# labels: {...}" line, and "#\taddr\tfunc+off\tfile:line"
// frames, separated by blank lines.
func parseGoroutines(text string) (goroutineProfile, error) {
	p := goroutineProfile{Stacks: map[string]int{}, ByCluster: map[string]int{}}
	n, cluster := 0, ""
	var frames []string
	flush := func() {
		if n > 0 {
			p.Total += n
			p.Stacks[strings.Join(frames, " < ")] += n
			if cluster != "" {
				p.ByCluster[cluster] += n
			}
		}
		n, cluster, frames = 0, "", nil
	}
	for line := range strings.Lines(text) {
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "# labels: "):
			var labels map[string]string
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "# labels: ")), &labels); err != nil {
				return p, fmt.Errorf("goroutine profile labels %q: %w", line, err)
			}
			_, cluster, _ = strings.Cut(labels[goroutineLabel], "/")
		case strings.HasPrefix(line, "#\t"):
			if f := strings.Split(line, "\t"); len(f) >= 3 {
				fn, _, _ := strings.Cut(f[2], "+0x")
				frames = append(frames, fn)
			}
		default:
			if c, _, ok := strings.Cut(line, " @ "); ok {
				flush()
				n, _ = strconv.Atoi(c)
			}
		}
	}
	flush()
	if p.Total == 0 {
		return p, fmt.Errorf("not a goroutine profile: %.60q", text)
	}
	return p, nil
}

// stackGrowth is a stack with more goroutines at the end than at the
// baseline.
type stackGrowth struct {
	Baseline int    `json:"baseline"`
	End      int    `json:"end"`
	Stack    string `json:"stack"` // function names, innermost first
}

// grown returns the n stacks that grew most from base to end.
func grown(base, end goroutineProfile, n int) []stackGrowth {
	var out []stackGrowth
	for s, e := range end.Stacks {
		if b := base.Stacks[s]; e > b {
			out = append(out, stackGrowth{Baseline: b, End: e, Stack: s})
		}
	}
	slices.SortFunc(out, func(a, b stackGrowth) int {
		return cmp.Or(cmp.Compare(b.End-b.Baseline, a.End-a.Baseline), strings.Compare(a.Stack, b.Stack))
	})
	return out[:min(n, len(out))]
}

// mostPerCluster is the largest count of goroutines labelled with one
// Cluster.
func (p goroutineProfile) mostPerCluster() int {
	most := 0
	for _, n := range p.ByCluster {
		most = max(most, n)
	}
	return most
}

// pprofGet reads path (with its query) from the pprof server at addr, a
// loopback host:port.
func pprofGet(ctx context.Context, addr, path string) ([]byte, error) {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("peer pprof address %q is not on loopback", addr)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("peer pprof: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("peer pprof %s: %s", path, resp.Status)
	}
	return body, err
}

// goroutines reads the manager's goroutine profile. With phase and dir
// set, it saves it and the live heap's profile in dir as
// <cache>-<phase>-goroutines.txt and <cache>-<phase>-heap.pb.gz.
func (s *chaosSide) goroutines(ctx context.Context, dir, phase string) (goroutineProfile, error) {
	addr := s.trace.pprofAddr()
	if addr == "" {
		return goroutineProfile{}, errors.New("the manager serves no pprof")
	}
	text, err := pprofGet(ctx, addr, "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return goroutineProfile{}, err
	}
	if dir != "" && phase != "" {
		heap, herr := pprofGet(ctx, addr, "/debug/pprof/heap?gc=1")
		base := filepath.Join(dir, s.cache+"-"+phase)
		if err := os.WriteFile(base+"-goroutines.txt", text, 0o644); err != nil {
			return goroutineProfile{}, err
		}
		if herr == nil {
			herr = os.WriteFile(base+"-heap.pb.gz", heap, 0o644)
		}
		if herr != nil {
			return goroutineProfile{}, herr
		}
	}
	return parseGoroutines(string(text))
}
