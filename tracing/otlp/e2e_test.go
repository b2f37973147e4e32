package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
	"github.com/clusterpool/clusterpool/tracing"
)

const canary = "canary-bearer-6f1e2d3c4b5a" // the credential of the "dead" cluster

// scenario runs one pool through every outcome, each Get under a parent
// span named after it: a wait that acquires, a hit, a wait timeout, a
// rejection by an open breaker, and a half-open probe that succeeds.
func scenario(t *testing.T, tp trace.TracerProvider) {
	t.Helper()
	// "dead": a real TLS server that refuses the kubeconfig's bearer token,
	// dialed by the kube dialer, so the token is in the dial's config.
	deny := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer deny.Close()
	ca := deny.Certificate().Raw
	kd, err := kube.NewDialer(kube.ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
		return &rest.Config{Host: deny.URL, BearerToken: canary, TLSClientConfig: rest.TLSClientConfig{CAData: pemCert(ca)}}, nil
	}), kube.DialerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	flakyFailed := false
	dial := func(ctx context.Context, key client.ObjectKey) (*kube.Cluster, error) {
		switch key.Name {
		case "dead":
			return kd.Dial(ctx, key)
		case "slow":
			<-ctx.Done()
			return nil, ctx.Err()
		case "flaky":
			if !flakyFailed {
				flakyFailed = true
				return nil, errors.New("connection refused")
			}
			return &kube.Cluster{Key: key}, nil
		}
		<-release
		return &kube.Cluster{Key: key}, nil
	}
	p, err := pool.New(dial, pool.Options[client.ObjectKey, *kube.Cluster]{
		// Bounds far above a loaded machine's delays: only "slow" times out,
		// under its caller's deadline; "dead" stays open until rejected.
		MaxWait: 10 * time.Second, DialTimeout: 20 * time.Second, TracerProvider: tp,
		FormatKey: client.ObjectKey.String,
		Breaker:   breaker.Settings{ConsecutiveFailures: 1, OpenTimeout: 2 * time.Second, DisableJitter: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tr := tp.Tracer("e2e")
	getWithin := func(parent, cluster string, wait time.Duration) error {
		ctx, span := tr.Start(context.Background(), parent)
		defer span.End()
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		_, err := p.Get(ctx, client.ObjectKey{Namespace: "e2e", Name: cluster})
		return err
	}
	get := func(parent, cluster string) error { return getWithin(parent, cluster, time.Minute) }
	go func() { time.Sleep(20 * time.Millisecond); close(release) }()
	if err := get("reconcile-acquired", "ok"); err != nil {
		t.Fatalf("acquired: %v", err)
	}
	if err := get("reconcile-hit", "ok"); err != nil {
		t.Fatalf("hit: %v", err)
	}
	if err := getWithin("reconcile-timeout", "slow", 300*time.Millisecond); !errors.Is(err, pool.ErrWaitTimeout) {
		t.Fatalf("timeout: %v", err)
	}
	if err := get("reconcile-dial-failed", "dead"); !errors.Is(err, pool.ErrDialFailed) {
		t.Fatalf("dead dial: %v", err)
	} else if strings.Contains(err.Error(), canary) {
		t.Fatalf("the token is in the error: %v", err)
	}
	if err := get("reconcile-rejected", "dead"); !errors.Is(err, pool.ErrCircuitOpen) {
		t.Fatalf("rejected: %v", err)
	}
	ev := p.Subscribe(context.Background())
	if err := get("reconcile-flaky", "flaky"); !errors.Is(err, pool.ErrDialFailed) {
		t.Fatalf("flaky: %v", err)
	}
	for e := range ev { // the pool's own probe closes the breaker
		if e.Key.Name == "flaky" && e.Connected {
			break
		}
	}
}

// The pool's spans in a real Jaeger: names, outcomes, links from waits to
// the dials they waited for, breaker transitions as events, and no
// credential anywhere.
func TestSpansInJaeger(t *testing.T) {
	j := startJaeger(t)
	service := fmt.Sprintf("clusterpool-e2e-%d", time.Now().UnixNano())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", j.otlpHTTP)
	t.Setenv("OTEL_SERVICE_NAME", service)
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "100")
	ctx := context.Background()
	prov, err := Setup(ctx, Options{BatchTimeout: 50 * time.Millisecond, ServiceVersion: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	scenario(t, prov.Tracer)
	if err := prov.Shutdown(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}

	var spans []jSpan
	var raw []byte
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, body, err := j.traces(ctx, service)
		if err != nil {
			t.Fatal(err)
		}
		spans, raw = spans[:0], body
		for _, tr := range got.Data {
			spans = append(spans, tr.Spans...)
		}
		if count(spans, tracing.WaitSpan) >= 5 && count(spans, tracing.DialSpan) >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger has %d spans: %s", len(spans), raw)
		}
		time.Sleep(100 * time.Millisecond) // polling an external process
	}
	if strings.Contains(string(raw), canary) {
		t.Fatal("the credential is in a span")
	}
	byID := map[string]jSpan{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	parentName := func(s jSpan) string {
		for _, r := range s.References {
			if r.RefType == "CHILD_OF" {
				return byID[r.SpanID].OperationName
			}
		}
		return ""
	}
	outcomes := map[string]string{} // parent -> outcome
	for _, s := range spans {
		if s.OperationName != tracing.WaitSpan {
			continue
		}
		outcomes[parentName(s)] = s.tag(string(tracing.OutcomeKey))
		if s.tag(string(tracing.ClusterKey)) == "" || s.tag(string(tracing.BreakerStateKey)) == "" {
			t.Errorf("wait span without cluster or breaker state: %+v", s.Tags)
		}
		if o := s.tag(string(tracing.OutcomeKey)); o == "acquired" || o == "timeout" {
			if !linksTo(s, byID, tracing.DialSpan) {
				t.Errorf("%s wait span does not link to a dial span: %+v", o, s.References)
			}
		}
	}
	for parent, want := range map[string]string{
		"reconcile-acquired": "acquired", "reconcile-timeout": "timeout", "reconcile-dial-failed": "failed",
		"reconcile-rejected": "rejected", "reconcile-flaky": "failed",
	} {
		if got := outcomes[parent]; got != want {
			t.Errorf("wait under %s: outcome %q, want %q", parent, got, want)
		}
	}
	if _, ok := outcomes["reconcile-hit"]; ok {
		t.Error("a hit recorded a wait span")
	}
	var probeEvents []string
	for _, s := range spans {
		if s.OperationName != tracing.DialSpan || s.tag(string(tracing.ClusterKey)) != "e2e/flaky" {
			continue
		}
		for _, l := range s.Logs {
			for _, f := range l.Fields {
				if f.Key == string(tracing.ToStateKey) {
					probeEvents = append(probeEvents, s.tag(string(tracing.ProbeKey))+":"+fmt.Sprint(f.Value))
				}
			}
		}
	}
	want := map[string]bool{"false:open": true, "true:half-open": true, "true:closed": true}
	for _, e := range probeEvents {
		delete(want, e)
	}
	if len(want) != 0 {
		t.Errorf("breaker events on flaky's dial spans %v, missing %v", probeEvents, want)
	}
}

func count(spans []jSpan, name string) int {
	n := 0
	for _, s := range spans {
		if s.OperationName == name {
			n++
		}
	}
	return n
}

// linksTo reports whether s has a non-parent reference to a span named name.
func linksTo(s jSpan, byID map[string]jSpan, name string) bool {
	for _, r := range s.References {
		if r.RefType != "CHILD_OF" && byID[r.SpanID].OperationName == name {
			return true
		}
	}
	return false
}
