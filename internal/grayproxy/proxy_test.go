package grayproxy

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// In Pass, a paginated list and a watch go through untouched: the watch
// delivers each event as it happens (the proxy flushes the stream), and
// every request counts as passed.
func TestPassListAndWatch(t *testing.T) {
	p := start(t)
	cs := through(t, p, apiserver(t))
	ctx := ctxT(t)
	ns := namespace(t, cs)
	for i := range 5 {
		configMap(t, cs, ns, fmt.Sprintf("pass-%d", i))
	}
	names := listAll(t, cs, ns)
	for i := range 5 {
		if !names[fmt.Sprintf("pass-%d", i)] {
			t.Fatalf("the paginated list lacks pass-%d: %v", i, names)
		}
	}
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=pass-late"})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	configMap(t, cs, ns, "pass-late")
	select {
	case ev := <-w.ResultChan():
		if cm, ok := ev.Object.(*corev1.ConfigMap); ev.Type != watch.Added || !ok || cm.Name != "pass-late" {
			t.Fatalf("watch event %v %T", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event through the proxy")
	}
	c := p.Counts(Pass)
	if c.Passed < 10 || c.Faulted != 0 || c.Refused != 0 || c.Slowed != 0 {
		t.Fatalf("Pass counts %+v, want ≥ 10 passed and nothing else", c)
	}
	if tot := p.Total(); tot != c {
		t.Fatalf("Total %+v, Pass %+v: no other mode ran", tot, c)
	}
}

// listAll lists the ConfigMaps of ns two at a time and returns their
// names.
func listAll(t *testing.T, cs kubernetes.Interface, ns string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	opts := metav1.ListOptions{Limit: 2}
	for {
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctxT(t), opts)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		for _, cm := range l.Items {
			names[cm.Name] = true
		}
		if opts.Continue = l.Continue; opts.Continue == "" {
			return names
		}
	}
}

// client-go's transport speaks HTTP/2 to the proxy.
func TestHTTP2(t *testing.T) {
	p := start(t)
	rt, err := rest.TransportFor(p.ClientConfig(apiserver(t)))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, p.URL()+"/version", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Fatalf("GET /version: %d over %s, want 200 over HTTP/2", resp.StatusCode, resp.Proto)
	}
}

// The apiserver sees the caller, not the proxy: a client certificate's
// user (impersonated by the proxy's admin identity) and a bearer token's
// (passed through) are refused what they may not do and allowed what they
// may; a certificate the apiserver's CA did not sign is refused (401).
func TestCallersIdentityReachesTheAPIServer(t *testing.T) {
	p := start(t)
	ctx := ctxT(t)
	_, err := through(t, p, user(t, "gray:alice")).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"gray:alice"`) {
		t.Fatalf("a certificate user without rights: %v, want Forbidden for gray:alice", err)
	}
	if _, err := through(t, p, user(t, "gray:root", "system:masters")).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("a certificate user in system:masters: %v", err)
	}
	admin := through(t, p, apiserver(t))
	ns := namespace(t, admin)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gray"}}
	if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "gray", &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tokenUser := rest.AnonymousClientConfig(apiserver(t))
	tokenUser.BearerToken = tr.Status.Token
	_, err = through(t, p, tokenUser).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `"system:serviceaccount:`+ns+`:gray"`) {
		t.Fatalf("a token without rights: %v, want Forbidden for the service account", err)
	}
	stranger := rest.AnonymousClientConfig(apiserver(t))
	stranger.CertData, stranger.KeyData = clientCert(t, mustCA(t), "gray:mallory", "system:masters")
	_, err = through(t, p, stranger).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Fatalf("a certificate of a foreign CA: %v, want Unauthorized", err)
	}
	if c := p.Counts(Pass); c.Refused != 1 {
		t.Fatalf("Refused = %d, want 1 (the foreign certificate)", c.Refused)
	}
}

// A certificate-authenticated caller that impersonates is refused (400):
// the proxy already impersonates it.
func TestCertificateCallerCannotImpersonate(t *testing.T) {
	p := start(t)
	cfg := apiserver(t)
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate.UserName = "gray:bob"
	_, err := through(t, p, cfg).CoreV1().ConfigMaps("default").List(ctxT(t), metav1.ListOptions{})
	if !apierrors.IsBadRequest(err) {
		t.Fatalf("impersonating through the proxy: %v, want BadRequest", err)
	}
}

// Without ClientCAs the proxy asks for no certificate: a certificate
// caller reaches the apiserver anonymously and is refused there, a token
// caller is served.
func TestWithoutClientCAsTokensOnly(t *testing.T) {
	p, err := New(Config{Target: rest.AnonymousClientConfig(apiserver(t))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, err = through(t, p, apiserver(t)).CoreV1().Secrets("default").List(ctxT(t), metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err) {
		t.Fatalf("a certificate caller without ClientCAs: %v, want refused by the apiserver", err)
	}
	if c := p.Counts(Pass); c.Passed != 1 || c.Refused != 0 {
		t.Fatalf("counts %+v, want the request passed to the apiserver", c)
	}
}
