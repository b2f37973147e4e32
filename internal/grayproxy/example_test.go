package grayproxy_test

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"

	"k8s.io/client-go/rest"

	"github.com/clusterpool/clusterpool/internal/grayproxy"
)

// A proxy in front of an apiserver (here a stand-in that answers every
// request) fails 60 % of the requests (within two) with 500 or 503, never three in a
// row, and counts them.
func Example() {
	apiserver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`)
	}))
	defer apiserver.Close()
	target := &rest.Config{Host: apiserver.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: apiserver.Certificate().Raw})}}

	p, err := grayproxy.New(grayproxy.Config{Target: target})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	if err := p.Set(grayproxy.ErrorRate(0.6, 1)); err != nil {
		panic(err)
	}
	// A kubeconfig for the proxy: server p.URL(), certificate-authority-data
	// p.CAPEM(), the caller's own credentials.
	client, err := rest.HTTPClientFor(p.ClientConfig(target))
	if err != nil {
		panic(err)
	}
	var codes []int
	for range 20 {
		resp, err := client.Get(p.URL() + "/api/v1/namespaces/default")
		if err != nil {
			panic(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	fmt.Println(codes)
	c := p.Counts(grayproxy.Errors)
	fmt.Printf("passed %d, faulted %d\n", c.Passed, c.Faulted)
	// Output:
	// [200 500 500 200 200 500 500 200 500 200 503 503 200 200 500 500 200 500 503 200]
	// passed 9, faulted 11
}
