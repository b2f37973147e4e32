package main

import (
	"context"
	"net/http"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/bench/peers/workload"
	"github.com/clusterpool/clusterpool/kube"
)

// timedSource adds, to every config src returns, a transport that records
// the time of each ConfigMap request on the wire as "roundtrip". The Dialer
// wraps the config after reading it, so its request guard runs outside
// this transport and its wait is not in "roundtrip".
type timedSource struct {
	src kube.ConfigSource
	t   *workload.Timings
}

func (s timedSource) Config(ctx context.Context, key client.ObjectKey) (*rest.Config, string, error) {
	cfg, rev, err := s.src.Config(ctx, key)
	if err != nil {
		return nil, "", err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return timedTransport{next: rt, t: s.t} })
	return cfg, rev, nil
}

type timedTransport struct {
	next http.RoundTripper
	t    *workload.Timings
}

func (tt timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.Contains(req.URL.Path, "/configmaps") {
		return tt.next.RoundTrip(req)
	}
	start := time.Now()
	resp, err := tt.next.RoundTrip(req)
	d := time.Since(start)
	tt.t.Add("roundtrip", d)
	workload.AddWire(req.Context(), d)
	return resp, err
}
