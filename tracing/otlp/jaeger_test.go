package otlp

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// jaeger is a real Jaeger v2 process on free loopback ports.
type jaeger struct {
	cmd        *exec.Cmd
	done       chan struct{} // closed once the process exited
	err        error         // cmd.Wait's result, set before done closes
	query      string        // http://127.0.0.1:port of the query API
	otlpHTTP   string        // http://127.0.0.1:port of the OTLP/HTTP receiver
	healthPort string
}

// repoRoot is the clusterpool repository root (this module is tracing/otlp).
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

// jaegerBinary returns JAEGER_BIN, or builds Jaeger from the module proxy
// (cached under bin/, see hack/build-tool.sh).
func jaegerBinary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("JAEGER_BIN"); b != "" {
		return b
	}
	root := repoRoot(t)
	out := filepath.Join(root, "bin", "jaeger-v1.75.0")
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-tool.sh"), out, "hack/tools/jaeger",
		"github.com/jaegertracing/jaeger/cmd/jaeger", "-ldflags", "-s -w")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("building Jaeger: %v", err)
	}
	return out
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startJaeger runs Jaeger with hack/jaeger.yaml on free ports and waits
// until it is healthy; it is stopped at the end of the test.
func startJaeger(t *testing.T) *jaeger {
	t.Helper()
	bin := jaegerBinary(t)
	ports := map[string]string{}
	for _, v := range []string{"JAEGER_QUERY_HTTP", "JAEGER_QUERY_GRPC", "JAEGER_HEALTH", "JAEGER_OTLP_GRPC", "JAEGER_OTLP_HTTP"} {
		ports[v] = freePort(t)
	}
	cmd := exec.Command(bin, "--config", filepath.Join(repoRoot(t), "hack", "jaeger.yaml"))
	cmd.Env = append(os.Environ(), "JAEGER_LOG_LEVEL=warn")
	for k, v := range ports {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting Jaeger: %v", err)
	}
	j := &jaeger{cmd: cmd, done: make(chan struct{}), query: "http://" + ports["JAEGER_QUERY_HTTP"],
		otlpHTTP: "http://" + ports["JAEGER_OTLP_HTTP"], healthPort: ports["JAEGER_HEALTH"]}
	go func() { j.err = cmd.Wait(); close(j.done) }()
	t.Cleanup(j.stop)
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		resp, err := http.Get("http://" + j.healthPort + "/status")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return j
			}
		}
		select {
		case <-j.done:
			t.Fatalf("Jaeger exited: %v", j.err)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatal("Jaeger not healthy within 60s")
		}
	}
}

// stop sends SIGTERM, then SIGKILL if Jaeger has not exited in 10s.
func (j *jaeger) stop() {
	j.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-j.done:
	case <-time.After(10 * time.Second):
		j.cmd.Process.Kill()
		<-j.done
	}
}

// Jaeger's HTTP query API (api/traces).
type jTraces struct {
	Data []jTrace `json:"data"`
}

type jTrace struct {
	TraceID string  `json:"traceID"`
	Spans   []jSpan `json:"spans"`
}

type jSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64  `json:"startTime"`
	Duration  int64  `json:"duration"`
	Tags      []jTag `json:"tags"`
	Logs      []struct {
		Fields []jTag `json:"fields"`
	} `json:"logs"`
}

type jTag struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}

func (s jSpan) tag(key string) string {
	for _, t := range s.Tags {
		if t.Key == key {
			return fmt.Sprint(t.Value)
		}
	}
	return ""
}

// traces fetches every trace of service; raw is the response body.
func (j *jaeger) traces(ctx context.Context, service string) (jTraces, []byte, error) {
	var out jTraces
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, j.query+"/api/traces?limit=1000&lookback=1h&service="+service, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, nil, err
	}
	defer resp.Body.Close()
	var raw json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		return out, nil, err
	}
	return out, raw, json.Unmarshal(raw, &out)
}
