package clustercache

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// DefaultServiceName is the service.name of the exported spans when
// neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one.
const DefaultServiceName = "clusterpool"

// traceShutdownTimeout bounds the flush of the spans when the manager
// stops.
const traceShutdownTimeout = 5 * time.Second

// The OTLP protocols of OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL.
const (
	protocolHTTP = "http/protobuf"
	protocolGRPC = "grpc"
)

// traceExport exports the pool's spans over OTLP, configured as every
// OpenTelemetry SDK is, by the environment: an endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// turns it on; OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL picks grpc or
// http/protobuf (the default); the exporters read the other
// OTEL_EXPORTER_OTLP_* variables (headers, timeout, TLS, compression), the
// SDK OTEL_TRACES_SAMPLER and OTEL_BSP_*, the resource OTEL_SERVICE_NAME
// and OTEL_RESOURCE_ATTRIBUTES. OTEL_SDK_DISABLED=true, or an
// OTEL_TRACES_EXPORTER without "otlp", turns it off.
//
// The provider exists from SetupWithManager on, without a span processor:
// the exporter and its batching goroutine start with the manager (start)
// and stop, after a flush, when it stops (stop).
type traceExport struct {
	protocol string
	provider *sdktrace.TracerProvider

	mu      sync.Mutex
	stopped bool
}

// newTraceExport returns the export the environment asks for, or nil if it
// asks for none. An unknown protocol is an error naming the variable.
func newTraceExport(ctx context.Context) (*traceExport, error) {
	if !otlpTracesEnabled() {
		return nil, nil
	}
	protocol, err := otlpProtocol()
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithTelemetrySDK(),
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName)),
		resource.WithFromEnv()) // later detectors win: the environment's name over the default
	if err != nil {
		return nil, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES: %w", ErrInvalidOptions, err)
	}
	return &traceExport{protocol: protocol, provider: sdktrace.NewTracerProvider(sdktrace.WithResource(res))}, nil
}

// otlpTracesEnabled reports whether the environment names an OTLP endpoint
// for traces and does not turn trace export off.
func otlpTracesEnabled() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	if v := os.Getenv("OTEL_TRACES_EXPORTER"); v != "" && !listHas(v, "otlp") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// listHas reports whether the comma-separated list holds item.
func listHas(list, item string) bool {
	for v := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(v) == item {
			return true
		}
	}
	return false
}

// otlpProtocol returns the trace protocol the environment names.
func otlpProtocol() (string, error) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch v := strings.TrimSpace(os.Getenv(name)); v {
		case "":
			continue
		case protocolHTTP, protocolGRPC:
			return v, nil
		default:
			return "", fmt.Errorf("%w: %s=%q: want %q or %q", ErrInvalidOptions, name, v, protocolHTTP, protocolGRPC)
		}
	}
	return protocolHTTP, nil
}

// tracerProvider is the pool's TracerProvider: nil (the otel global) when
// nothing is exported.
func (t *traceExport) tracerProvider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.provider
}

// start creates the exporter and starts batching spans to it, unless stop
// ran. A failure is logged: the manager runs on without traces.
func (t *traceExport) start(ctx context.Context, log logr.Logger) {
	if t == nil {
		return
	}
	var exp sdktrace.SpanExporter
	var err error
	if t.protocol == protocolGRPC {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		log.Error(err, "not exporting traces: creating the OTLP exporter", "protocol", t.protocol)
		return
	}
	bsp := sdktrace.NewBatchSpanProcessor(exp)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped { // stop ran first: nothing to export
		sctx, cancel := context.WithTimeout(context.Background(), traceShutdownTimeout)
		defer cancel()
		_ = bsp.Shutdown(sctx)
		return
	}
	t.provider.RegisterSpanProcessor(bsp)
	log.Info("Exporting the cluster pool's spans over OTLP", "protocol", t.protocol)
}

// stop flushes the spans and stops the exporter (idempotent).
func (t *traceExport) stop(log logr.Logger) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), traceShutdownTimeout)
	defer cancel()
	if err := t.provider.Shutdown(ctx); err != nil {
		log.Error(err, "flushing the cluster pool's spans")
	}
}
