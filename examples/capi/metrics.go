package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// metricsAddr is the manager's metrics address: 127.0.0.1 only, on port, or
// on a port free a moment ago when port is 0.
func metricsAddr(port int) (string, error) {
	if port != 0 {
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("metrics: a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// scrapePool GETs the manager's /metrics, as Prometheus would, and returns
// the clusterpool_ samples without the histogram buckets.
func scrapePool(ctx context.Context, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", fmt.Errorf("metrics: %w", err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return "", fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("metrics: reading %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("metrics: GET %s: %s", url, resp.Status)
	}
	var b strings.Builder
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "clusterpool_") && !strings.Contains(line, "_bucket{") {
			b.WriteString(line)
		}
	}
	return b.String(), nil
}
