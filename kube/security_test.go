package kube

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math/big"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/internal/envtestutil"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/pool"
)

// Credentials — a bearer token and a client key — never appear in errors,
// logs, span names/attributes/events/status, metric names or attributes, or
// pool events, whatever happens to the dial: Unauthorized, refused, a
// probe that times out on an established connection, a server certificate
// the CA did not sign. The last also shows TLS verification is on.
func TestSecretsNeverLeakAnywhere(t *testing.T) {
	needEnvtest(t)
	const tokenCanary = "canary-token-7a6b5c4d3e2f1a09"
	keyCanary := keyMaterial(t, workCfg.KeyData)

	var logMu sync.Mutex
	var logs bytes.Buffer
	logger := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		logs.WriteString(prefix + " " + args + "\n")
	}, funcr.Options{Verbosity: 10})
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	p, _ := newTestPool(t, DialerOptions{Logger: logger}, pool.Options[client.ObjectKey, *Cluster]{
		MaxWait:        10 * time.Second, // wait for every dial: its error is what we inspect
		DialTimeout:    5 * time.Second,
		Breaker:        breaker.Settings{ConsecutiveFailures: 1, OpenTimeout: 100 * time.Millisecond, MaxOpenTimeout: time.Second},
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		MeterProvider:  sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	ev := watchEvents(t, p)
	ctx := context.Background()
	var errs []error

	// A bearer token the apiserver rejects.
	tok := client.ObjectKey{Namespace: "security", Name: "token"}
	putKubeconfig(t, tok, kubeconfig(t, "", tokenCanary))
	_, err := p.Get(ctx, tok)
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("Get with a rejected token: %v, want Unauthorized", err)
	}
	errs = append(errs, err)

	// A client key, through a proxy that refuses, then passes, then holds
	// while the prober probes.
	proxy := workProxy(t)
	proxy.SetMode(faultproxy.Refuse)
	cert := client.ObjectKey{Namespace: "security", Name: "client-key"}
	putKubeconfig(t, cert, kubeconfig(t, proxy.Addr(), ""))
	if _, err := p.Get(ctx, cert); !errors.Is(err, pool.ErrDialFailed) {
		t.Fatalf("Get through a refusing proxy: %v, want ErrDialFailed", err)
	} else {
		errs = append(errs, err)
	}
	proxy.SetMode(faultproxy.Pass)
	getEventually(t, p, cert)
	startProber(t, p, ProberOptions{Interval: 50 * time.Millisecond, Timeout: 200 * time.Millisecond, Logger: logger})
	from := len(ev.snapshot())
	proxy.SetMode(faultproxy.Hold)
	ev.waitFor(t, from, cert, connected(false), 30*time.Second)

	// A CA that did not sign the apiserver's certificate: verification fails.
	badCA := client.ObjectKey{Namespace: "security", Name: "bad-ca"}
	cfg := rest.CopyConfig(workCfg)
	cfg.CAData = selfSignedCA(t)
	kc, err := envtestutil.Kubeconfig(cfg, "", tokenCanary)
	if err != nil {
		t.Fatal(err)
	}
	putKubeconfig(t, badCA, kc)
	_, err = p.Get(ctx, badCA)
	if !errors.Is(err, pool.ErrDialFailed) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Get with a CA that did not sign the server: %v, want a failed certificate verification", err)
	}
	errs = append(errs, err)

	// An exec plugin whose command line holds the token, with a local token
	// file: refused by the default KubeconfigPolicy before anything runs.
	execKey := client.ObjectKey{Namespace: "security", Name: "exec"}
	putKubeconfig(t, execKey, withExec(t, kubeconfig(t, "", tokenCanary), tokenCanary))
	_, err = p.Get(ctx, execKey)
	if !errors.Is(err, pool.ErrDialFailed) || !errors.Is(err, ErrKubeconfigRefused) {
		t.Fatalf("Get with an exec kubeconfig: %v, want ErrDialFailed wrapping ErrKubeconfigRefused", err)
	}
	errs = append(errs, err)

	p.Close()
	haystack := dumpErrors(errs) + logText(&logMu, &logs) + dumpSpans(spans) + dumpMetrics(t, reader) + fmt.Sprintf("%+v", ev.snapshot())
	for _, want := range []string{"security/token", "security/bad-ca", "certificate", "clusterpool.Dial", "clusterpool.get.outcomes", "probe failed",
		"security/exec", "users[].user.exec needs KubeconfigPolicy.AllowExec"} {
		if !strings.Contains(haystack, want) {
			t.Fatalf("the capture lacks %q: the test would prove nothing", want)
		}
	}
	for name, canary := range map[string]string{"bearer token": tokenCanary, "client key": keyCanary} {
		if i := strings.Index(haystack, canary); i >= 0 {
			t.Errorf("the %s leaked: …%s…", name, haystack[max(0, i-80):min(len(haystack), i+len(canary)+20)])
		}
	}
}

// withExec adds an exec plugin that passes arg on its command line, and a
// token file, to kc's user.
func withExec(t *testing.T, kc []byte, arg string) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kc)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		u.TokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
		u.Exec = &clientcmdapi.ExecConfig{Command: "/bin/echo", Args: []string{arg},
			APIVersion: "client.authentication.k8s.io/v1", InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	}
	return writeKubeconfig(t, cfg)
}

// keyMaterial returns a stretch of a PEM key's base64 body: text that only
// the key contains.
func keyMaterial(t *testing.T, keyPEM []byte) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(keyPEM)), "\n")
	if len(lines) < 3 || len(lines[1]) < 32 {
		t.Fatalf("unexpected client key layout (%d lines)", len(lines))
	}
	return lines[1][:32]
}

func selfSignedCA(t *testing.T) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not the cluster's CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func dumpErrors(errs []error) string {
	var b strings.Builder
	for _, err := range errs {
		fmt.Fprintf(&b, "%v\n%+v\n%#v\n", err, err, err)
		for e := err; e != nil; e = errors.Unwrap(e) {
			fmt.Fprintf(&b, "%v\n", e)
		}
	}
	return b.String()
}

func logText(mu *sync.Mutex, logs *bytes.Buffer) string {
	mu.Lock()
	defer mu.Unlock()
	return logs.String()
}

func dumpSpans(r *tracetest.SpanRecorder) string {
	var b strings.Builder
	for _, s := range r.Ended() {
		fmt.Fprintf(&b, "span %s status %v %s\n", s.Name(), s.Status().Code, s.Status().Description)
		for _, kv := range s.Attributes() {
			fmt.Fprintf(&b, "  %s=%v\n", kv.Key, kv.Value.AsInterface())
		}
		for _, e := range s.Events() {
			fmt.Fprintf(&b, "  event %s\n", e.Name)
			for _, kv := range e.Attributes {
				fmt.Fprintf(&b, "    %s=%v\n", kv.Key, kv.Value.AsInterface())
			}
		}
		for _, l := range s.Links() {
			for _, kv := range l.Attributes {
				fmt.Fprintf(&b, "  link %s=%v\n", kv.Key, kv.Value.AsInterface())
			}
		}
	}
	return b.String()
}

func dumpMetrics(t *testing.T, reader *sdkmetric.ManualReader) string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rm.ScopeMetrics)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The library never turns TLS verification off: no library source sets
// rest.Config's Insecure or tls.Config's InsecureSkipVerify, and a Cluster
// API kubeconfig parses to a verifying config.
func TestNoTLSVerificationBypass(t *testing.T) {
	root := filepath.Join("..")
	fset := token.NewFileSet()
	var found []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "examples" || d.Name() == "hack" || d.Name() == "bin" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if id := settingInsecure(n); id != nil {
				found = append(found, fset.Position(id.Pos()).String())
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) > 0 {
		t.Errorf("library sources set TLS verification fields at %v", found)
	}
	kc := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443", certificate-authority-data: ` + b64(selfSignedCA(t)) + `}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	cfg, err := ParseKubeconfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Insecure || len(cfg.CAData) == 0 {
		t.Errorf("parsed config: Insecure=%v, CA %d bytes; want verification against the kubeconfig's CA", cfg.Insecure, len(cfg.CAData))
	}
}

// settingInsecure returns the field name if n sets, or takes the address
// of, a field named Insecure or InsecureSkipVerify: x.Insecure = …,
// T{Insecure: …}, &x.Insecure. Reading the field (as the kubeconfig
// policy does, to refuse it) is not setting it.
func settingInsecure(n ast.Node) *ast.Ident {
	insecure := func(e ast.Expr) *ast.Ident {
		var id *ast.Ident
		switch e := e.(type) {
		case *ast.SelectorExpr:
			id = e.Sel
		case *ast.Ident:
			id = e
		}
		if id != nil && (id.Name == "Insecure" || id.Name == "InsecureSkipVerify") {
			return id
		}
		return nil
	}
	switch n := n.(type) {
	case *ast.AssignStmt:
		for _, lhs := range n.Lhs {
			if id := insecure(lhs); id != nil {
				return id
			}
		}
	case *ast.KeyValueExpr:
		return insecure(n.Key)
	case *ast.UnaryExpr:
		if n.Op == token.AND {
			return insecure(n.X)
		}
	}
	return nil
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
