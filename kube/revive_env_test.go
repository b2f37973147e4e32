package kube

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/clusterpool/clusterpool/breaker"
	"github.com/clusterpool/clusterpool/internal/faultproxy"
	"github.com/clusterpool/clusterpool/pool"
)

// A cluster whose connections are reset until its breaker opens, for an
// open period of 5 minutes, is connected again within 30s of the reset's
// end: the Prober's endpoint checks (ReviveInterval 1s), which fail while
// the reset lasts, find it back and end the open period (a real
// kube-apiserver behind a fault proxy on 127.0.0.1).
func TestReviveEndsTheOpenPeriod(t *testing.T) {
	needEnvtest(t)
	proxy := workProxy(t)
	key := client.ObjectKey{Namespace: "fleet", Name: "revived"}
	putKubeconfig(t, key, kubeconfig(t, proxy.Addr(), ""))
	const open = 5 * time.Minute
	p, src := newTestPool(t, DialerOptions{ReadyzTimeout: time.Second}, pool.Options[client.ObjectKey, *Cluster]{
		MaxWait: 5 * time.Second, DialTimeout: 10 * time.Second,
		Breaker: breaker.Settings{OpenTimeout: open, MaxOpenTimeout: 2 * open},
	})
	ev := watchEvents(t, p)
	startProber(t, p, ProberOptions{Interval: time.Second, Timeout: time.Second})

	getEventually(t, p, key)
	n := ev.waitFor(t, 0, key, connected(true), 30*time.Second)
	proxy.SetMode(faultproxy.Reset)
	n = ev.waitFor(t, n, key, func(e pool.Event[client.ObjectKey]) bool {
		return !e.Connected && e.Breaker == breaker.StateOpen
	}, 60*time.Second)
	// Two checks fail during the reset (each reads the config once).
	for reads, deadline := src.n.Load(), time.Now().Add(60*time.Second); src.n.Load() < reads+2; {
		if time.Now().After(deadline) {
			t.Fatalf("no endpoint checks within 60s of the breaker opening (%d config reads)", src.n.Load()-reads)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := p.State(key); s.Connected || s.Breaker != breaker.StateOpen {
		t.Fatalf("during the reset: %+v, want the breaker open", s)
	}
	restored := time.Now()
	proxy.SetMode(faultproxy.Pass)
	ev.waitFor(t, n, key, connected(true), 30*time.Second) // far below the open period
	t.Logf("connected %v after the reset ended (open period %v)", time.Since(restored).Round(time.Millisecond), open)
	for _, e := range ev.snapshot() {
		t.Logf("%+6.3fs %v connected=%v breaker=%v", e.Time.Sub(restored).Seconds(), e.Type, e.Connected, e.Breaker)
	}
	c, ok := p.Peek(key)
	if !ok {
		t.Fatal("connected event, but no client")
	}
	var nodes corev1.NodeList
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Uncached.List(ctx, &nodes); err != nil {
		t.Fatalf("list after revival: %v", err)
	}
}

// The endpoint check is a dial's first step alone, on a real apiserver: nil
// for a cluster that answers, a 401 for credentials it refuses (which a
// dial would read too), an error through a reset; it leaves no connection
// open.
func TestDialerCheck(t *testing.T) {
	needEnvtest(t)
	proxy := workProxy(t)
	good := client.ObjectKey{Namespace: "fleet", Name: "check-good"}
	bad := client.ObjectKey{Namespace: "fleet", Name: "check-bad"}
	putKubeconfig(t, good, kubeconfig(t, proxy.Addr(), ""))
	putKubeconfig(t, bad, kubeconfig(t, proxy.Addr(), "not-a-token"))
	d, err := NewDialer(SecretSource{Reader: mgmt}, DialerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.check(ctx, good); err != nil {
		t.Fatalf("check of a cluster that answers: %v", err)
	}
	if err := d.check(ctx, bad); !apierrors.IsUnauthorized(err) {
		t.Fatalf("check with a token the cluster refuses: %v, want Unauthorized", err)
	}
	if n := proxy.Accepted(); n != 2 {
		t.Fatalf("%d connections for two checks, want one each", n)
	}
	for deadline := time.Now().Add(10 * time.Second); proxy.Open() != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still open 10s after the checks returned", proxy.Open())
		}
	}
	proxy.SetMode(faultproxy.Reset)
	if err := d.check(ctx, good); err == nil {
		t.Fatal("check through a reset succeeded")
	}
}
