package kube

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/pool"
)

// watchSource hands out key's config with a transport that reports, on
// ended, every watch response whose body was closed (by either end).
type watchSource struct {
	ConfigSource
	ended chan string
}

func (s *watchSource) Config(ctx context.Context, key client.ObjectKey) (*rest.Config, string, error) {
	cfg, rev, err := s.ConfigSource.Config(ctx, key)
	if err != nil {
		return nil, "", err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &watchSpy{next: rt, ended: s.ended} })
	return cfg, rev, nil
}

type watchSpy struct {
	next  http.RoundTripper
	ended chan string
}

func (w *watchSpy) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if err == nil && req.URL.Query().Get("watch") == "true" {
		resp.Body = &spiedBody{ReadCloser: resp.Body, url: req.URL.String(), ended: w.ended}
	}
	return resp, err
}

type spiedBody struct {
	io.ReadCloser
	url   string
	ended chan string
}

func (b *spiedBody) Close() error {
	select {
	case b.ended <- b.url:
	default:
	}
	return b.ReadCloser.Close()
}

// The informers' watches are not bounded by RequestTimeout: with the REST
// timeout on their HTTP client (client-go sends it as the watch's timeout
// and http.Client.Timeout cuts the body), every watch ended after
// RequestTimeout and was re-established, churning the apiserver. Requests
// of the cluster's clients keep the timeout.
func TestInformerWatchOutlivesRequestTimeout(t *testing.T) {
	needEnvtest(t)
	key := client.ObjectKey{Namespace: "fleet", Name: "long-watch"}
	putKubeconfig(t, key, kubeconfig(t, "", ""))
	const timeout = 300 * time.Millisecond
	src := &watchSource{ConfigSource: SecretSource{Reader: mgmt}, ended: make(chan string, 1)}
	d, err := NewDialer(src, DialerOptions{RequestTimeout: timeout, WatchTypes: []client.Object{&corev1.ConfigMap{}}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPool(d, pool.Options[client.ObjectKey, *Cluster]{MaxWait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := getEventually(t, p, key)
	if c.config.Timeout != timeout {
		t.Fatalf("the clients' REST timeout is %v, want %v", c.config.Timeout, timeout)
	}
	// The informer's watch is open once its sync is done; it must still be
	// open after several request timeouts.
	select {
	case u := <-src.ended:
		t.Fatalf("watch %s ended within %v; RequestTimeout %v", u, 8*timeout, timeout)
	case <-time.After(8 * timeout):
	}
}
