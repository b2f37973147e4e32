package kube

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ProberOptions.Probed is told each probe's outcome after the Prober has
// reported it, also when it panics: the Prober goes on probing.
func TestProberTellsProbed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeAPIServer{origin: time.Now(), mode: "ok"}
		done := make(chan struct{})
		close(done)
		key := client.ObjectKey{Namespace: "f", Name: "told"}
		fp := newFakePool()
		fp.connect(&Cluster{Key: key, config: &rest.Config{Host: "https://told.invalid"},
			httpClient: &http.Client{Transport: srv}, cancel: func() {}, done: done})
		var mu sync.Mutex
		var told []error
		probed := func(k client.ObjectKey, err error) {
			mu.Lock()
			defer mu.Unlock()
			if k != key {
				t.Errorf("Probed(%v), want %v", k, key)
			}
			if n := len(fp.reportsOf(key)); n != len(told)+1 {
				t.Errorf("Probed told of probe %d with %d reports: not after its Report", len(told)+1, n)
			}
			told = append(told, err)
			if len(told) == 1 {
				panic("a user's Probed panics")
			}
		}
		pr, err := NewProber(fp, ProberOptions{Interval: 10 * time.Second, Timeout: 5 * time.Second, Probed: probed})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		stopped := make(chan error)
		go func() { stopped <- pr.Start(ctx) }()
		at(srv.origin, 25*time.Second) // probes at 10 and 20 s
		srv.set("503")
		at(srv.origin, 35*time.Second) // and at 30 s
		cancel()
		if err := <-stopped; err != nil {
			t.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(told) != 3 || told[0] != nil || told[1] != nil || told[2] == nil {
			t.Errorf("Probed told %v, want nil, nil, the 503", told)
		}
	})
}
