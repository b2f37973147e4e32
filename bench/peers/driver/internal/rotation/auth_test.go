package rotation

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/clusterpool/clusterpool/bench/peers/driver/internal/fleet"
	"github.com/clusterpool/clusterpool/internal/envtestutil"
)

// A real kube-apiserver configured by rotationAPIServers accepts a token
// the authenticator issued, answers 401 once it is revoked (within the
// apiserver's caches), and its audit log shows both: the request by the
// token's identity and the 401.
func TestAuthenticatorRevokesOnARealAPIServer(t *testing.T) {
	a, cfg, audit := startAuthenticatedAPIServer(t)
	id := fleet.Identity{Peer: "p", Cluster: "c007", Gen: 3}
	tok := a.Issue(id)
	if code := listNamespaces(t, cfg, tok); code != http.StatusOK {
		t.Fatalf("issued token: %d, want 200", code)
	}
	if n := a.Revoke(func(got fleet.Identity) bool { return got == id }); n != 1 {
		t.Fatalf("revoked %d tokens, want 1", n)
	}
	waitUnauthorized(t, cfg, tok)
	reqs, err := audit.read("p")
	if err != nil {
		t.Fatal(err)
	}
	lists, unauthorized := countLists(reqs, id)
	if lists == 0 || unauthorized != 1 {
		t.Fatalf("audit: %d LISTs by the identity (want > 0), %d 401s (want 1); %+v", lists, unauthorized, reqs)
	}
	if acc, ref := a.Counts(); acc == 0 || ref == 0 {
		t.Fatalf("reviews: %d accepted, %d refused; want both", acc, ref)
	}
}

// waitUnauthorized lists with tok until the apiserver answers 401: within
// its caches' TTLs (a success for 10 s, the webhook's answer for
// webhookCacheTTL), answering 200 until then.
func waitUnauthorized(t *testing.T, cfg *rest.Config, tok string) {
	t.Helper()
	deadline := time.Now().Add(10*time.Second + 2*fleet.WebhookCacheTTL + 5*time.Second)
	for code := listNamespaces(t, cfg, tok); code != http.StatusUnauthorized; code = listNamespaces(t, cfg, tok) {
		if code != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("revoked token: %d, want 401 within the caches' TTLs", code)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// countLists counts id's successful LISTs and the 401s in reqs.
func countLists(reqs []request, id fleet.Identity) (lists, unauthorized int) {
	for _, r := range reqs {
		switch {
		case r.Cluster == id.Cluster && r.Gen == id.Gen && r.Kind == relist && r.Code == 200:
			lists++
		case r.Cluster == "" && r.Code == 401:
			unauthorized++
		}
	}
	return lists, unauthorized
}

// startAuthenticatedAPIServer starts an authenticator and one apiserver
// configured by rotationAPIServers, stopped at the end of the test, and
// returns them with the apiserver's audit log, marked.
func startAuthenticatedAPIServer(t *testing.T) (*fleet.Authenticator, *rest.Config, *auditLog) {
	t.Helper()
	if _, err := envtestutil.Assets(); err != nil {
		t.Fatal(err)
	}
	a, err := fleet.StartAuthenticator()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	configure, logs, err := fleet.RotationAPIServers(a, t.TempDir(), 1)
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{}
	configure(0, env)
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	audit := &auditLog{file: logs[0]}
	if err := audit.mark(); err != nil {
		t.Fatal(err)
	}
	return a, cfg, audit
}

// listNamespaces lists namespaces with the bearer token tok alone, on a
// new connection, and returns the status code.
func listNamespaces(t *testing.T, cfg *rest.Config, tok string) int {
	t.Helper()
	c := rest.AnonymousClientConfig(cfg)
	c.CAData, c.BearerToken = cfg.CAData, tok
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+"/api/v1/namespaces?limit=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
