package kube_test

// Regression tests of issue 23 for kube: black-box, against loopback TLS
// servers, no apiserver needed.

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

// tlsCluster is a loopback TLS server standing in for a cluster: /readyz
// and /fast answer at once, /hang never answers (it aborts when the client
// gives up: a 200 written after the client's cancel could reach it first,
// see rotationServer).
func tlsCluster(t *testing.T) (*httptest.Server, *rest.Config, <-chan struct{}) {
	t.Helper()
	hung := make(chan struct{}, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hang" {
			hung <- struct{}{}
			<-r.Context().Done()
			panic(http.ErrAbortHandler)
		}
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes are expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	return srv, &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, hung
}

// Item 1: a cluster that answered in a fraction of a millisecond stops
// answering; two hung requests fill MaxInFlight 2. A reconciler that
// requeues through kube.Requeue must not be rejected over and over until
// the slots free at the hung requests' first-byte deadline (it was rejected
// about a thousand times, RetryAfter being the cluster's latency).
func TestPromiseBulkheadRequeueDoesNotBusyLoop(t *testing.T) {
	srv, cfg, hung := tlsCluster(t)
	d, err := kube.NewDialer(kube.ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
		return cfg, nil
	}), kube.DialerOptions{Requests: kube.RequestOptions{MaxInFlight: 2, MinFirstByte: 2 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := kube.NewPool(d, pool.Options[client.ObjectKey, *kube.Cluster]{MaxWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	wc, err := p.Get(context.Background(), client.ObjectKey{Namespace: "fleet", Name: "edge"})
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) error {
		resp, err := wc.HTTPClient().Get(srv.URL + path)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for range 20 { // the cluster answers fast
		if err := get("/fast"); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 2)
	sent := time.Now()
	for range 2 {
		go func() { done <- get("/hang") }()
		<-hung
	}
	// Both are late after max(latency bound, MinFirstByte/10 = 200 ms): the
	// cap holds until their first-byte deadline, 2 s after they were sent.
	time.Sleep(600 * time.Millisecond)
	if n := requeueUntilAdmitted(t, get, sent.Add(2*time.Second)); n == 0 {
		t.Fatal("no request was rejected: the bulkhead did not hold")
	}
	for range 2 {
		if err := <-done; !errors.Is(err, kube.ErrFirstByteTimeout) {
			t.Errorf("hung request: %v, want ErrFirstByteTimeout", err)
		}
	}
}

// requeueUntilAdmitted sends a request as a reconciler would, requeued by
// kube.Requeue after each rejection, until one is admitted, and returns
// how many were rejected. It fails the test on more than ten rejections
// before capEnd (a busy loop: the cap holds until then at least), or on a
// rejection 10 s after it. Rejections just after capEnd are the hung
// requests' slots still on their way back (timer, transport, End), which
// a loaded machine stretches: not a busy loop.
func requeueUntilAdmitted(t *testing.T, get func(path string) error, capEnd time.Time) int {
	t.Helper()
	start := time.Now()
	early := 0
	for rejections := 0; ; rejections++ {
		err := get("/fast")
		if err == nil {
			return rejections
		}
		res, rerr := kube.Requeue(err)
		if !errors.Is(err, kube.ErrBulkheadFull) || rerr != nil || res.RequeueAfter <= 0 {
			t.Fatalf("request over the cap: %v, Requeue = %+v, %v", err, res, rerr)
		}
		now := time.Now()
		if now.Before(capEnd) {
			early++
		}
		if early > 10 || now.Sub(capEnd) > 10*time.Second {
			t.Fatalf("rejected %d times (%d while the cap held) in %v following RequeueAfter (last %v): a busy loop",
				rejections+1, early, time.Since(start), res.RequeueAfter)
		}
		time.Sleep(res.RequeueAfter)
	}
}

// freePort returns a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// Dial errors quote no URL with userinfo or a query, whatever the REST
// config's Host holds (a ConfigSource may build it): the user name and the
// query string used to appear (http.Client masks only the password).
func TestPromiseDialErrorsCarryNoUserinfoOrQuery(t *testing.T) {
	_, cfg, _ := tlsCluster(t)
	for _, host := range []string{
		fmt.Sprintf("https://canary-user:canary-pass@127.0.0.1:%d/prefix?canary-query=1", freePort(t)),    // refused
		strings.Replace(cfg.Host, "https://", "https://canary-user:canary-pass@", 1) + "/?canary-query=1", // untrusted
	} {
		bad := &rest.Config{Host: host} // no CA: the TLS server's certificate is refused
		d, err := kube.NewDialer(kube.ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
			return bad, nil
		}), kube.DialerOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := d.Dial(context.Background(), client.ObjectKey{Namespace: "fleet", Name: "edge"})
		if err == nil {
			c.Stop()
			t.Fatalf("dial of %s succeeded", bad.Host)
		}
		for _, canary := range []string{"canary-user", "canary-pass", "canary-query", "***"} {
			if strings.Contains(err.Error(), canary) {
				t.Errorf("dial error quotes %q: %v", canary, err)
			}
		}
	}
}

// A kubeconfig whose server has port 0, 65536 or an empty port is
// ErrInvalidKubeconfig, as is one with userinfo or a query in the server
// (credentials belong in the user entry; errors must not quote them).
func TestPromiseKubeconfigServerRefusedParts(t *testing.T) {
	kc := func(server string) []byte {
		return []byte("apiVersion: v1\nkind: Config\ncurrent-context: x\n" +
			"contexts: [{name: x, context: {cluster: c, user: u}}]\n" +
			"clusters: [{name: c, cluster: {server: \"" + server + "\"}}]\n" +
			"users: [{name: u, user: {token: canary-token}}]\n")
	}
	for _, server := range []string{
		"https://127.0.0.1:0", "https://127.0.0.1:65536", "https://127.0.0.1:99999", "https://127.0.0.1:",
		"https://[::1]:0", "https://canary-user@127.0.0.1:6443", "https://canary-user:pw@127.0.0.1:6443",
		"https://127.0.0.1:6443/?canary-query=1", "https://127.0.0.1:6443/#canary",
	} {
		_, err := kube.ParseKubeconfig(kc(server))
		if !errors.Is(err, kube.ErrInvalidKubeconfig) {
			t.Errorf("server %q: %v, want ErrInvalidKubeconfig", server, err)
		} else if strings.Contains(err.Error(), "canary") {
			t.Errorf("server %q: the error quotes it: %v", server, err)
		}
	}
	for _, server := range []string{"https://127.0.0.1:1", "https://127.0.0.1:65535", "https://127.0.0.1",
		"https://[::1]:6443", "https://example.com/k8s/clusters/c-1"} {
		if _, err := kube.ParseKubeconfig(kc(server)); err != nil {
			t.Errorf("server %q: %v, want a config", server, err)
		}
	}
}
