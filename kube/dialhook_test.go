package kube

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// anyTokenServer is a TLS server that accepts any bearer token and
// remembers, for each client connection (by its remote address), the
// tokens sent on it.
type anyTokenServer struct {
	srv *httptest.Server
	ca  []byte
	mu  sync.Mutex
	got map[string][]string // remote address → tokens
}

func newAnyTokenServer(t *testing.T) *anyTokenServer {
	t.Helper()
	s := &anyTokenServer{got: map[string][]string{}}
	s.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.got[r.RemoteAddr] = append(s.got[r.RemoteAddr], strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		s.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(s.srv.Close)
	s.ca = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	return s
}

// config returns a config of the server with token.
func (s *anyTokenServer) config(token string) *rest.Config {
	return &rest.Config{Host: s.srv.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: s.ca}}
}

// addrsWith returns the remote addresses of the connections that carried
// token.
func (s *anyTokenServer) addrsWith(token string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for addr, tokens := range s.got {
		for _, tok := range tokens {
			if tok == token {
				out = append(out, addr)
				break
			}
		}
	}
	return out
}

// dialHook is a custom ConfigSource's Dial: it records the local address
// of every connection it makes.
type dialHook struct {
	mu    sync.Mutex
	local map[string]bool
}

func (h *dialHook) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		h.mu.Lock()
		if h.local == nil {
			h.local = map[string]bool{}
		}
		h.local[conn.LocalAddr().String()] = true
		h.mu.Unlock()
	}
	return conn, err
}

func (h *dialHook) dialed(addr string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.local[addr]
}

// Issue 33, item 1: a custom ConfigSource whose config has its own Dial
// hook is never rotated in place. When its revision changes (only the
// token differs), the SecretWatcher re-dials the cluster, and the new
// token goes out on connections of the new config's hook, never of the
// old one's.
func TestDialHookConfigIsRedialedNotRotated(t *testing.T) {
	srv := newAnyTokenServer(t)
	hook1, hook2 := &dialHook{}, &dialHook{}
	withHook := func(token string, h *dialHook) *rest.Config {
		cfg := srv.config(token)
		cfg.Dial = h.dial
		return cfg
	}
	src := &swappableSource{}
	src.set(withHook("t1", hook1), "1", nil)
	p := newPoolWith(t, src, DialerOptions{}, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
	ev := watchEvents(t, p)
	key := client.ObjectKey{Namespace: "f", Name: "hooked"}
	old := getEventually(t, p, key)
	if old.rot != nil {
		t.Fatal("a config with a Dial hook got a rotator: it would rotate in place")
	}
	n := ev.waitFor(t, 0, key, connected(true), 10*time.Second)

	src.set(withHook("t2", hook2), "2", nil)
	w := &SecretWatcher{Pool: p}
	w.changed(kubeconfigSecret(key, "any change")) // not a SecretSource: the source is read again
	ev.waitFor(t, n, key, connected(true), 10*time.Second)
	c, ok := p.Peek(key)
	if !ok || c == old || c.Revision() != "2" {
		t.Fatalf("after the change: connected=%v same Cluster=%v revision %q; want a re-dial at revision 2", ok, c == old, c.Revision())
	}
	resp, err := c.HTTPClient().Get(srv.srv.URL + "/api")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	addrs := srv.addrsWith("t2")
	if len(addrs) == 0 {
		t.Fatal("the server never saw the new token")
	}
	for _, a := range addrs {
		if hook1.dialed(a) || !hook2.dialed(a) {
			t.Errorf("the new token went out on a connection of the old hook (%v) or not of the new one (%v)", hook1.dialed(a), hook2.dialed(a))
		}
	}
}

// rotatable looks at every field of rest.Config: this test fails when
// client-go adds one, so that someone decides whether it shapes the
// connection (then the config is not rotatable in place), is compared by
// sansCredentials, or neither. Every function field set makes a config
// not rotatable.
func TestRotatableReviewsEveryConfigField(t *testing.T) {
	reviewed := map[string]string{
		"Host": "compared", "APIPath": "compared", "Username": "compared", "Password": "compared",
		"Impersonate": "compared", "TLSClientConfig": "compared, but the client pair", "UserAgent": "compared",
		"DisableCompression": "compared", "Timeout": "compared",
		"BearerToken": "the credential", "BearerTokenFile": "not rotatable", "AuthProvider": "not rotatable",
		"ExecProvider": "not rotatable", "Transport": "not rotatable", "WrapTransport": "not rotatable",
		"Dial": "not rotatable", "Proxy": "not rotatable",
		"AuthConfigPersister": "used only with AuthProvider", "ContentConfig": "encoding, not the connection",
		"QPS": "set by the Dialer", "Burst": "set by the Dialer", "RateLimiter": "client-side, not the connection",
		"WarningHandler": "not the connection", "WarningHandlerWithContext": "not the connection",
	}
	tlsReviewed := map[string]string{
		"Insecure": "compared", "ServerName": "compared", "CAData": "compared", "NextProtos": "compared",
		"CertData": "the credential", "KeyData": "the credential",
		"CertFile": "not rotatable", "KeyFile": "not rotatable", "CAFile": "not rotatable",
	}
	for typ, seen := range map[reflect.Type]map[string]string{reflect.TypeFor[rest.Config](): reviewed,
		reflect.TypeFor[rest.TLSClientConfig](): tlsReviewed} {
		for f := range typ.Fields() {
			if _, ok := seen[f.Name]; !ok {
				t.Errorf("%s.%s is not reviewed for in-place rotation (see rotatable and sansCredentials)", typ.Name(), f.Name)
			}
		}
	}
	for f := range reflect.TypeFor[rest.Config]().Fields() {
		if f.Type.Kind() != reflect.Func {
			continue
		}
		cfg := &rest.Config{Host: "https://a"}
		fn := reflect.MakeFunc(f.Type, func([]reflect.Value) []reflect.Value { panic("not called") })
		reflect.ValueOf(cfg).Elem().FieldByIndex(f.Index).Set(fn)
		if rotatable(cfg) {
			t.Errorf("a config with a %s hook counts as rotatable in place", f.Name)
		}
	}
	if !rotatable(&rest.Config{Host: "https://a", BearerToken: "t"}) {
		t.Error("a plain token config is not rotatable")
	}
}
