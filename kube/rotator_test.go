package kube

import (
	"context"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// swappableSource is a ConfigSource whose answer the test changes.
type swappableSource struct {
	mu  sync.Mutex
	cfg *rest.Config
	rev string
	err error
}

func (s *swappableSource) set(cfg *rest.Config, rev string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg, s.rev, s.err = cfg, rev, err
}

func (s *swappableSource) Config(context.Context, client.ObjectKey) (*rest.Config, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return nil, "", s.err
	}
	return rest.CopyConfig(s.cfg), s.rev, nil
}

// tokenServer is a TLS server accepting one bearer token at a time.
func tokenServer(t *testing.T, accepted *atomic.Pointer[string]) (*httptest.Server, func(token string) *rest.Config) {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("Authorization") != "Bearer "+*accepted.Load() {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, func(token string) *rest.Config {
		return &rest.Config{Host: srv.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	}
}

// A 401 that races the Secret is retried once with the newer credentials
// the source already holds, for requests that can be replayed; without
// newer credentials, with a change beyond them, a refused source or a body
// that cannot be replayed, the 401 is the answer.
func TestUnauthorizedRetriesWithNewerCredentials(t *testing.T) {
	var accepted atomic.Pointer[string]
	first := "t1"
	accepted.Store(&first)
	srv, cfgFor := tokenServer(t, &accepted)
	src := &swappableSource{}
	src.set(cfgFor("t1"), "1", nil)
	r, err := newRotator(client.ObjectKey{Name: "c"}, src, cfgFor("t1"), "1", 5*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.CloseAll()
	hc := &http.Client{Transport: r}
	do := func(method string, body io.Reader) int {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+"/api", body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	moved := cfgFor("t4")
	moved.Host = strings.Replace(moved.Host, "127.0.0.1", "localhost", 1)
	for _, step := range []struct {
		name     string
		server   string // the token the server accepts from now on
		src      *rest.Config
		rev      string
		srcErr   error
		method   string
		body     io.Reader
		code     int
		revAfter string
	}{
		{"the accepted token", "t1", cfgFor("t1"), "1", nil, "GET", nil, 200, "1"},
		{"a token rotated at the server, not yet in the Secret", "t2", cfgFor("t1"), "1", nil, "GET", nil, 401, "1"},
		{"a GET racing the Secret", "t2", cfgFor("t2"), "2", nil, "GET", nil, 200, "2"},
		{"a POST without GetBody", "t3", cfgFor("t3"), "3", nil, "POST", io.NopCloser(strings.NewReader("x")), 401, "2"},
		{"a POST with GetBody", "t3", cfgFor("t3"), "3", nil, "POST", strings.NewReader("x"), 200, "3"},
		{"a Secret whose server changed too (a re-dial)", "t4", moved, "4", nil, "GET", nil, 401, "3"},
		{"a refused Secret", "t4", nil, "", ErrKubeconfigRefused, "GET", nil, 401, "3"},
	} {
		accepted.Store(&step.server)
		src.set(step.src, step.rev, step.srcErr)
		if got := do(step.method, step.body); got != step.code || r.revision() != step.revAfter {
			t.Errorf("%s: %d at revision %q, want %d at %q", step.name, got, r.revision(), step.code, step.revAfter)
		}
	}
}

// Only the credentials may differ for an in-place rotation.
func TestOnlyCredentialsRotateInPlace(t *testing.T) {
	base := &rest.Config{Host: "https://a:6443", BearerToken: "t1",
		TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), ServerName: "a"}}
	same := func(f func(*rest.Config)) bool {
		c := rest.CopyConfig(base)
		f(c)
		return onlyCredentials(sansCredentials(base), c)
	}
	if !same(func(c *rest.Config) { c.BearerToken = "t2" }) ||
		!same(func(c *rest.Config) { c.BearerToken, c.CertData, c.KeyData = "", []byte("c"), []byte("k") }) {
		t.Error("a new token, or a certificate and key, is not a credentials-only change")
	}
	for name, f := range map[string]func(*rest.Config){
		"server":          func(c *rest.Config) { c.Host = "https://b:6443" },
		"CA":              func(c *rest.Config) { c.CAData = []byte("other") },
		"TLS server name": func(c *rest.Config) { c.ServerName = "b" },
		"impersonation":   func(c *rest.Config) { c.Impersonate.UserName = "admin" },
		"token file":      func(c *rest.Config) { c.BearerTokenFile = "/var/run/token" },
		"basic auth":      func(c *rest.Config) { c.Username, c.Password = "u", "p" },
		"compression":     func(c *rest.Config) { c.DisableCompression = true },
		"Dial hook":       func(c *rest.Config) { c.Dial = (&net.Dialer{}).DialContext },
		"Proxy hook":      func(c *rest.Config) { c.Proxy = http.ProxyFromEnvironment },
	} {
		if same(f) {
			t.Errorf("a change of the %s counts as credentials only", name)
		}
	}
}
