package scale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// requestCount sums apiserver_request_total over the workload apiservers:
// every request they finished, their own included (see baseline).
func (f *scaleFleet) requestCount() (float64, error) {
	var sum float64
	for i, cfg := range f.Workload {
		n, err := scrapeRequests(cfg)
		if err != nil {
			return 0, fmt.Errorf("workload apiserver %d: %w", i, err)
		}
		sum += n
	}
	return sum, nil
}

func scrapeRequests(cfg *rest.Config) (float64, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return 0, err
	}
	defer hc.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return sumCounter(resp.Body, "apiserver_request_total")
}

// sumCounter sums the samples of metric in a Prometheus text exposition.
func sumCounter(r io.Reader, metric string) (float64, error) {
	var sum float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("%q: %w", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

// baseline measures the workload apiservers' own requests per second
// (their loopback clients, leases) over d, with no peer running.
func (f *scaleFleet) baseline(ctx context.Context, d time.Duration) (float64, error) {
	c0, err := f.requestCount()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	c1, err := f.requestCount()
	if err != nil {
		return 0, err
	}
	return (c1 - c0 - float64(len(f.Workload))) / time.Since(start).Seconds(), nil
}

// socketInodes returns the inodes of process pid's sockets.
func socketInodes(pid int) (map[string]bool, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	inodes := map[string]bool{}
	for _, e := range entries {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	return inodes, nil
}

// countEstablished adds, for each line of a /proc/net/tcp table that is an
// established connection (state 01) of one of inodes to a port of ports,
// one to counts[ports[port]].
func countEstablished(table string, inodes map[string]bool, ports map[int]int, counts []int) {
	for line := range strings.SplitSeq(table, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 10 || fields[3] != "01" || !inodes[fields[9]] {
			continue
		}
		_, hexPort, ok := strings.Cut(fields[2], ":")
		if !ok {
			continue
		}
		port, err := strconv.ParseInt(hexPort, 16, 32)
		if err != nil {
			continue
		}
		if i, ok := ports[int(port)]; ok {
			counts[i]++
		}
	}
}

// connStats returns the mean, minimum and maximum of counts.
func connStats(counts []int) (mean float64, lo, hi int) {
	if len(counts) == 0 {
		return 0, 0, 0
	}
	lo = counts[0]
	sum := 0
	for _, c := range counts {
		sum += c
		lo, hi = min(lo, c), max(hi, c)
	}
	return float64(sum) / float64(len(counts)), lo, hi
}
