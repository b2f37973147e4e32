package kube

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestRequestOptionsValidation(t *testing.T) {
	src := ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) { return nil, errors.New("unused") })
	for field, o := range map[string]RequestOptions{
		"DialerOptions.Requests.MaxInFlight=-1":   {MaxInFlight: -1},
		"DialerOptions.Requests.MinFirstByte=-1s": {MinFirstByte: -time.Second},
	} {
		_, err := NewDialer(src, DialerOptions{Requests: o})
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v, want ErrInvalidOptions naming the field", field, err)
		}
	}
}

// A rejection is counted by reason, with no cluster attribute, and is an
// event on the caller's span.
func TestRejectionTelemetry(t *testing.T) {
	srv := statusServer(t)
	reader := sdkmetric.NewManualReader()
	c, _ := dialFake(t, srv, RequestOptions{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	c.Stop()
	spans := tracetest.NewSpanRecorder()
	ctx, span := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("t").Start(context.Background(), "Reconcile")
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.config.Host+"/api/v1/namespaces/a/configmaps/b", nil)
	_, err := c.HTTPClient().Do(req)
	span.End()
	if !errors.Is(err, ErrClusterStopped) {
		t.Fatalf("request on a stopped cluster: %v", err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var rejected int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "clusterpool.request.rejected" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				if v, _ := dp.Attributes.Value("clusterpool.reason"); v.AsString() == "stopped" && dp.Attributes.Len() == 1 {
					rejected += dp.Value
				}
			}
		}
	}
	if rejected != 1 {
		t.Errorf("clusterpool.request.rejected{reason=stopped} = %d, want 1 (and no other attribute)", rejected)
	}
	ended := spans.Ended()
	if len(ended) != 1 || len(ended[0].Events()) != 1 || ended[0].Events()[0].Name != "clusterpool.request.rejected" {
		t.Fatalf("spans %v: want the caller's span only, with one rejection event", ended)
	}
	if !hasAttr(ended[0].Events()[0].Attributes, "clusterpool.reason", "stopped") {
		t.Errorf("event attributes %v", ended[0].Events()[0].Attributes)
	}
}

func hasAttr(kvs []attribute.KeyValue, k, v string) bool {
	for _, kv := range kvs {
		if string(kv.Key) == k && kv.Value.AsString() == v {
			return true
		}
	}
	return false
}
