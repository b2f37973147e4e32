package kube

import (
	"context"
	"errors"
	"runtime/pprof"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Dial runs under the pprof label GoroutineLabel with the cluster's key, so
// that every goroutine it starts (the cache's, the connections' readers)
// inherits it and a goroutine profile shows which cluster each serves.
func TestDialLabelsItsGoroutines(t *testing.T) {
	key := client.ObjectKey{Namespace: "ns", Name: "c1"}
	var got string
	var ok bool
	src := ConfigFunc(func(ctx context.Context, _ client.ObjectKey) (*rest.Config, error) {
		got, ok = pprof.Label(ctx, GoroutineLabel)
		return nil, errors.New("no config")
	})
	d, err := NewDialer(src, DialerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dial(context.Background(), key); err == nil {
		t.Fatal("Dial succeeded without a config")
	}
	if !ok || got != key.String() {
		t.Fatalf("label %q = %q, %v; want %q", GoroutineLabel, got, ok, key.String())
	}
}
