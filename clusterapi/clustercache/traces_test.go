package clustercache_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/clusterapi/clustercache"
	"github.com/clusterpool/clusterpool/tracing"
)

// TestTraces: with OTEL_EXPORTER_OTLP_ENDPOINT set, SetupWithManager
// exports the pool's spans over OTLP, with the protocol of
// OTEL_EXPORTER_OTLP_PROTOCOL (default http/protobuf), the service name of
// OTEL_SERVICE_NAME (default clusterpool), to a receiver on 127.0.0.1; the
// exporter's goroutine runs while the manager runs and ends with it.
// Without an endpoint no exporter goroutine runs.
func TestTraces(t *testing.T) {
	for _, tc := range []struct {
		protocol, service string
	}{
		{"", clustercache.DefaultServiceName},
		{"grpc", "capi-controller-manager"},
		{"none", ""},
	} {
		t.Run("protocol="+tc.protocol, func(t *testing.T) {
			recv := &otlpReceiver{}
			switch tc.protocol {
			case "none":
			case "grpc":
				t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.serveGRPC(t))
			default:
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.serveHTTP(t))
			}
			if tc.service != clustercache.DefaultServiceName {
				t.Setenv("OTEL_SERVICE_NAME", tc.service)
			}
			t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms
			e := newEnv(t, "traces")
			cc := e.setup(t, 10, nil)
			stop := e.start(t, cc)
			if err := e.createCluster(context.Background(), "traced", e.kubeconfig(t, ""), true); err != nil {
				t.Fatal(err)
			}
			key := client.ObjectKey{Namespace: e.ns, Name: "traced"}
			cluster := key.String()
			if tc.protocol == "none" {
				eventually(t, time.Minute, func() error { // connected: its dial span was made
					_, err := cc.GetClient(context.Background(), key)
					return err
				})
				if exporterRunning() {
					t.Fatal("an exporter goroutine runs without OTEL_EXPORTER_OTLP_ENDPOINT")
				}
				return
			}
			eventually(t, time.Minute, func() error { return recv.has(tracing.DialSpan, cluster, tc.service) })
			if !exporterRunning() {
				t.Fatal("no exporter goroutine while the manager runs")
			}
			stop()
			// The SDK's goroutines signal their end (a WaitGroup, a closed
			// channel) just before they return, so Shutdown may return while
			// they are still on their way out: they must be gone soon after,
			// not at that instant (a goroutine that outlives the manager
			// never goes).
			eventually(t, 30*time.Second, func() error {
				if exporterRunning() {
					return errors.New("the exporter goroutine outlives the manager")
				}
				return nil
			})
		})
	}
}

// exporterRunning reports whether a goroutine of the SDK's batch span
// processor runs.
func exporterRunning() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Contains(buf[:n], []byte("sdk/trace.(*batchSpanProcessor)"))
		}
		buf = make([]byte, 2*len(buf))
	}
}

// otlpReceiver is an OTLP trace receiver on 127.0.0.1 (HTTP or gRPC) that
// keeps what it receives.
type otlpReceiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
}

// Export keeps req.
func (r *otlpReceiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// serveHTTP serves OTLP/HTTP (protobuf) until the test ends and returns
// its endpoint.
func (r *otlpReceiver) serveHTTP(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		body, err := io.ReadAll(hr.Body)
		req := &coltracepb.ExportTraceServiceRequest{}
		if err == nil {
			err = proto.Unmarshal(body, req)
		}
		if hr.URL.Path != "/v1/traces" || err != nil {
			http.Error(w, fmt.Sprintf("path %s: %v", hr.URL.Path, err), http.StatusBadRequest)
			return
		}
		resp, _ := r.Export(hr.Context(), req)
		out, _ := proto.Marshal(resp)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// serveGRPC serves OTLP/gRPC until the test ends and returns its endpoint.
func (r *otlpReceiver) serveGRPC(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(srv, r)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return "http://" + ln.Addr().String()
}

// has reports, as an error, whether no span named name with
// clusterpool.cluster = cluster came from service.
func (r *otlpReceiver) has(name, cluster, service string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, req := range r.reqs {
		for _, rs := range req.GetResourceSpans() {
			if attr(rs.GetResource().GetAttributes(), "service.name") != service {
				continue
			}
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					if s.GetName() == name && attr(s.GetAttributes(), string(tracing.ClusterKey)) == cluster {
						return nil
					}
				}
			}
		}
	}
	return fmt.Errorf("no %s span of %s from service %s among %d requests: %w", name, cluster, service, len(r.reqs), errNotYet)
}

func attr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return kv.GetValue().GetStringValue()
		}
	}
	return ""
}
