package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/clusterpool/clusterpool/kube/metrics"
)

// A controller-runtime manager on a real apiserver serves the pool's
// metrics on its /metrics endpoint: every clusterpool_ family with its
// HELP and TYPE, histogram buckets up to le="+Inf", the figures of what the
// pool did, and no cluster key anywhere.
func TestManagerEndpoint(t *testing.T) {
	cfg := needEnvtest(t)
	mp, err := metrics.NewMeterProvider(metrics.Options{}) // controller-runtime's registry
	if err != nil {
		t.Fatal(err)
	}
	// A provider of its own for each run (-count): shut down, the next call
	// builds a new one, so the figures start from zero.
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	drive(t, mp)

	url := startManager(t, cfg)
	var body string
	eventually(t, func() error {
		var err error
		if body, err = scrape(url); err != nil {
			return err
		}
		fams, err := parse(body)
		if err != nil {
			return err
		}
		return checkFamilies(fams, driven)
	})
	for _, want := range []string{
		"# HELP clusterpool_wait_duration_seconds Time a Get that was not a hit spent waiting.\n",
		"# TYPE clusterpool_wait_duration_seconds histogram\n",
		`clusterpool_wait_duration_seconds_bucket{clusterpool_outcome="acquired",le="0.0005"} `,
		`clusterpool_wait_duration_seconds_bucket{clusterpool_outcome="acquired",le="+Inf"} 1` + "\n",
		`clusterpool_dial_duration_seconds_bucket{clusterpool_dial_result="error",le="30"} 1` + "\n",
		"# TYPE clusterpool_get_outcomes_total counter\n",
		"# TYPE clusterpool_dials_inflight gauge\n",
		"# HELP clusterpool_breaker_transitions_total Breaker state changes, by from and to state.\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, banned := range []string{waitingCluster, deadCluster, "canary", "clusterpool_cluster", "otel_scope", "target_info"} {
		if strings.Contains(body, banned) {
			t.Errorf("/metrics contains %q", banned)
		}
	}
	if t.Failed() {
		t.Logf("clusterpool lines of /metrics:\n%s", poolLines(body))
	}
}

// startManager starts a manager whose metrics server listens on a free
// 127.0.0.1 port, stops it when the test ends, and returns the URL of its
// /metrics endpoint once that answers. A port taken between being found
// free and bound is tried again with another.
func startManager(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	var lastErr error
	for range 3 {
		addr, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: addr}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		url := "http://" + addr + "/metrics"
		if lastErr = waitServing(url, done); lastErr == nil {
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("manager: %v", err)
				}
			})
			return url
		}
		cancel()
		<-done
	}
	t.Fatalf("the manager's metrics server never answered: %v", lastErr)
	return ""
}

// waitServing polls url until it answers 200 (nil), the manager stops
// (its error), or 30 s pass.
func waitServing(url string, done <-chan error) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := scrape(url)
		if err == nil {
			return nil
		}
		select {
		case startErr := <-done:
			return fmt.Errorf("manager stopped: %w", startErr)
		default:
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// freePort returns 127.0.0.1:<a port free a moment ago>.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// scraper keeps no connection open, so that no goroutine outlives a test.
var scraper = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

// scrape GETs url as Prometheus would, in the text format.
func scrape(url string) (string, error) {
	resp, err := scraper.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return string(b), nil
}

func parse(body string) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(strings.NewReader(body))
}

func poolLines(body string) string {
	var b strings.Builder
	for line := range strings.Lines(body) {
		if strings.Contains(line, "clusterpool_") {
			b.WriteString(line)
		}
	}
	return b.String()
}
