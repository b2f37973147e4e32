package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/kube"
	"github.com/clusterpool/clusterpool/pool"
)

// Requests on a cluster's clients are guarded: here the bulkhead allows one
// request in flight once the cluster shows it is not answering. A request
// hangs; once nothing has been answered since it was sent for longer than
// the cluster's answers take (its retransmission timeout, at least
// MinFirstByte/10: 1 s here), one more fails at once with ErrBulkheadFull,
// which Requeue turns into a RequeueAfter.
func ExampleRequestOptions() {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			arrived <- struct{}{}
			<-release
		}
	}))
	defer srv.Close()
	src := kube.ConfigFunc(func(context.Context, client.ObjectKey) (*rest.Config, error) {
		return &rest.Config{Host: srv.URL}, nil
	})
	d, err := kube.NewDialer(src, kube.DialerOptions{Requests: kube.RequestOptions{MaxInFlight: 1, MinFirstByte: 10 * time.Second}})
	if err != nil {
		panic(err)
	}
	p, err := kube.NewPool(d, pool.Options[client.ObjectKey, *kube.Cluster]{MaxWait: 10 * time.Second})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	wc, err := p.Get(context.Background(), client.ObjectKey{Namespace: "fleet", Name: "edge-1"})
	if err != nil {
		panic(err)
	}
	get := func(path string) error {
		resp, err := wc.HTTPClient().Get(srv.URL + path)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get("/fast"); err != nil { // the cluster answers in a few ms
		panic(err)
	}
	first := make(chan error)
	go func() { first <- get("/slow") }()
	<-arrived
	time.Sleep(1500 * time.Millisecond) // late after 1 s; its first-byte deadline is 10 s
	err = get("/fast")
	res, rerr := kube.Requeue(err)
	fmt.Println(errors.Is(err, kube.ErrBulkheadFull), res.RequeueAfter > 0, rerr)
	close(release)
	fmt.Println(<-first)
	// Output:
	// true true <nil>
	// <nil>
}
