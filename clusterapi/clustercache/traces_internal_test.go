package clustercache

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/go-logr/logr"
)

// TestTraceExportEnvironment: which environments turn the OTLP trace
// export on, with which protocol, and that an unknown protocol is an
// error naming its variable.
func TestTraceExportEnvironment(t *testing.T) {
	vars := []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER"}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		protocol string // "": no export
		errVar   string // the variable an error names
	}{
		{name: "nothing set"},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, protocol: protocolHTTP},
		{name: "traces endpoint, grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4317",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, protocol: protocolGRPC},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, protocol: protocolHTTP},
		{name: "SDK disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "exporter list with otlp", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
			"OTEL_TRACES_EXPORTER": "console, otlp"}, protocol: protocolHTTP},
		{name: "unknown protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, errVar: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, v := range vars {
				t.Setenv(v, tc.env[v])
			}
			te, err := newTraceExport(context.Background())
			switch {
			case tc.errVar != "":
				if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.errVar) {
					t.Fatalf("err = %v, want ErrInvalidOptions naming %s", err, tc.errVar)
				}
			case err != nil:
				t.Fatal(err)
			case tc.protocol == "":
				if te != nil || te.tracerProvider() != nil {
					t.Fatalf("an export (%+v) without an endpoint", te)
				}
			case te == nil || te.protocol != tc.protocol:
				t.Fatalf("export %+v, want protocol %s", te, tc.protocol)
			}
			te.stop(logr.Discard())
		})
	}
}
